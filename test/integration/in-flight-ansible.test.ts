/**
 * An Ansible kind shaped after ansible-operator's memcached sample (roles memcached and memfin,
 * `finalizer: {name: cache.example.com/finalizer, role: memfin}`) acts on every change that lands
 * while one of its runs is in flight: a deletion (issue "Step 21", item 6: the deletion was lost
 * and the CR stayed on its finalizer), a spec change and an annotation change, each at a random
 * point of the run (in-flight.ts `place`).
 *
 * The memcached role waits at a gate (a file the test makes) once it has applied its Deployment,
 * so the change surely lands during the run; a held run costs no CPU, and several iterations run
 * at once, each on a CR of its own.
 */
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { stringify } from 'yaml';
import { objectVarName } from '../../src/engines/ansible/extra-vars.js';
import { createObject, deleteObject, findObject, mergePatchObject } from '../../src/kube/objects.js';
import type { ApiResource, KubeObject } from '../../src/kube/types.js';
import { installCrd, testKind, type TestKind } from './crd.js';
import { condition, crsOf, type Cr, type Crs } from './crs.js';
import { REPO_ROOT } from './fixtures.js';
import { newNamespace, testCluster, type TestCluster } from './harness.js';
import { CONFIG_MAPS, DEPLOYMENTS, iterations, place, report, seeded, sequenceRounds, testSeed, TEST_TIMEOUT_MS, type Placement } from './in-flight.js';
import { startOperator, type RunningOperator } from './operator.js';
import { lineTime, logLines, logTail } from './operator-log.js';
import { explained, waitFor } from './wait.js';

const ROLES = join(REPO_ROOT, 'test/fixtures/ansible/roles');
const FINALIZER = 'cache.example.com/finalizer';
const NOTE = 'test.chartpilot.io/note';
/** Iterations at once: each holds one of the kind's workers while its run waits at the gate. */
const CONCURRENCY = 5;
const ARGS = ['--ansible-run-timeout', '90s', '--proxy-port', '0', '--max-concurrent-reconciles', String(CONCURRENCY)];

interface World {
  readonly cluster: TestCluster;
  readonly ns: string;
  readonly kind: TestKind;
  readonly gates: string;
  readonly op: RunningOperator;
  readonly cr: Crs;
}

async function world(t: TestContext): Promise<World> {
  const cluster = await testCluster();
  const kind = testKind('Memcached');
  await installCrd(cluster, kind);
  const ns = await newNamespace(t, 'in-flight-ansible');
  const dir = mkdtempSync(join(tmpdir(), 'chartpilot-in-flight-'));
  const gates = join(dir, 'gates');
  mkdirSync(gates);
  for (const role of ['memcached', 'memfin']) cpSync(join(ROLES, role), join(dir, 'roles', role), { recursive: true });
  writeFileSync(
    join(dir, 'watches.yaml'),
    stringify([
      {
        group: kind.group,
        version: kind.version,
        kind: kind.kind,
        // As the sample's watches.yaml names them: roles/<name> beside the watches file.
        role: 'memcached',
        finalizer: { name: FINALIZER, role: 'memfin' },
        watchAnnotationsChanges: true,
        vars: { gate_dir: gates, cr_var: objectVarName(kind), note_annotation: NOTE },
      },
    ]),
  );
  const op = await startOperator(t, cluster, { namespaces: [ns], watches: [], dir, args: ARGS });
  return { cluster, ns, kind, gates, op, cr: crsOf(cluster, kind, ns, op) };
}

/** Runs of CR `name` that ended, from the operator's log, with when each ended. */
function runsOf(op: RunningOperator, name: string): { trigger: string; result: string; at: number }[] {
  return logLines(op)
    .filter((l) => l.msg === 'ansible run finished' && l.name === name)
    .map((l) => ({ trigger: String(l.trigger), result: String(l.result), at: lineTime(l) }));
}

/** Successful, and the status says so of the CR's current generation. */
const successfulNow = (cr: Cr): boolean => condition(cr, 'Successful')?.status === 'True' && cr.status?.observedGeneration === cr.metadata.generation;

async function deployment(w: World, name: string): Promise<(KubeObject & { spec?: { replicas?: number } }) | undefined> {
  return findObject(w.cluster.api(), { resource: DEPLOYMENTS, namespace: w.ns, name: `${name}-memcached` });
}

async function patchSpec(w: World, name: string, spec: Record<string, unknown>): Promise<void> {
  await mergePatchObject(w.cluster.api(), { resource: resourceOfKind(w.kind), namespace: w.ns, name }, { spec });
}

async function annotate(w: World, name: string, value: string): Promise<void> {
  await mergePatchObject(w.cluster.api(), { resource: resourceOfKind(w.kind), namespace: w.ns, name }, { metadata: { annotations: { [NOTE]: value } } });
}

function resourceOfKind(k: TestKind): ApiResource {
  return { group: k.group, version: k.version, apiVersion: `${k.group}/${k.version}`, kind: k.kind, plural: k.plural, namespaced: true };
}

/** Waits until CR `name`'s run waits at gate `gate`. */
async function atGate(w: World, name: string, gate: string): Promise<void> {
  await explained(
    waitFor(`${name}: the run waits at gate ${gate}`, () => Promise.resolve(existsSync(join(w.gates, `${name}.${gate}.waiting`))), { timeoutMs: 120_000, intervalMs: 100 }),
    () => logTail(w.op),
  );
}

function openGate(w: World, name: string, gate: string): Promise<void> {
  writeFileSync(join(w.gates, `${name}.${gate}.open`), 'open\n');
  return Promise.resolve();
}

/** The memcached sample's CR, Successful, with the ConfigMap its finalizer role deletes. */
async function created(w: World, name: string): Promise<void> {
  await createObject(w.cluster.api(), CONFIG_MAPS, w.ns, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `marker-${name}`, namespace: w.ns } });
  await w.cr.create(name, { size: 1 });
  await w.cr.until(name, 'Successful', successfulNow, 120_000);
  assert.equal((await deployment(w, name))?.spec?.replicas, 1);
}

/** Deleted, and gone only after its finalizer role ran once (it deletes the marker). */
async function goneAfterFinalizer(w: World, name: string): Promise<void> {
  await explained(w.cr.gone(name, 60_000), () => `runs of ${name}: ${JSON.stringify(runsOf(w.op, name))}\n${logTail(w.op)}`);
  const finalizerRuns = runsOf(w.op, name).filter((r) => r.trigger === 'finalizer');
  assert.deepEqual(finalizerRuns.map((r) => r.result), ['successful'], `${name}: one finalizer run`);
  assert.equal(await findObject(w.cluster.api(), { resource: CONFIG_MAPS, namespace: w.ns, name: `marker-${name}` }), undefined, `${name}: the finalizer role ran`);
}

/** How a placement reads in the diagnostics: where the change landed against the held run's end. */
function describePlacement(p: Placement, runEnd: number | undefined): string {
  const landed = runEnd === undefined ? 'run end not logged' : `${String(runEnd - p.changedAt)} ms before the run ended`;
  return `${p.mode} ${String(p.ms)} ms (${landed})`;
}

/**
 * Rounds in every suite run (each ~40 s of Ansible on 2 cores; 3, not 5, to keep the cold suite
 * within its budget — every round places the change at a fresh seeded point, so runs add up);
 * CHARTPILOT_TEST_IN_FLIGHT_ROUNDS=20 runs the 20-in-a-row proof (sequenceRounds).
 */
const ANSIBLE_SUITE_ROUNDS = 3;

describe('an Ansible kind acts on every change that lands during a run (memcached sample, real ansible-runner)', () => {
  it('create, drift, spec change, delete during the spec change’s run: the finalizer role runs and the CR goes, every round (20 in a row with CHARTPILOT_TEST_IN_FLIGHT_ROUNDS=20)', { timeout: TEST_TIMEOUT_MS }, async (t) => {
    const w = await world(t);
    const seed = testSeed();
    t.diagnostic(`seed ${String(seed)} (CHARTPILOT_TEST_SEED replays it)`);
    const started = Date.now();
    const results = await iterations(sequenceRounds(ANSIBLE_SUITE_ROUNDS), CONCURRENCY, async (i) => {
      const random = seeded(seed + i);
      const name = `mem-${String(i)}`;
      await created(w, name);

      // Drift: the Deployment deleted by someone else is made again by a run.
      const before = await deployment(w, name);
      await deleteObject(w.cluster.api(), { resource: DEPLOYMENTS, namespace: w.ns, name: `${name}-memcached` });
      await waitFor(`${name}: Deployment made again`, async () => {
        const now = await deployment(w, name);
        return now !== undefined && now.metadata.uid !== before?.metadata.uid;
      }, { timeoutMs: 120_000 });
      await waitFor(`${name}: the drift run ended`, () => Promise.resolve(runsOf(w.op, name).some((r) => r.trigger === 'drift' && r.result === 'successful')), { timeoutMs: 120_000 });

      // Spec change: its run waits at the gate; the CR is deleted at a random point of it.
      await patchSpec(w, name, { size: 2, gate: 'g' });
      await atGate(w, name, 'g');
      const placed = await place(random, () => w.cr.delete(name), () => openGate(w, name, 'g'));
      await goneAfterFinalizer(w, name);
      const held = runsOf(w.op, name).find((r) => r.trigger === 'inputs-changed');
      return describePlacement(placed, held?.at);
    });
    report(t, results, Date.now() - started);
  });

  it('a spec or an annotation change during a run is run again, wherever in the run it lands', { timeout: TEST_TIMEOUT_MS }, async (t) => {
    const w = await world(t);
    const seed = testSeed();
    t.diagnostic(`seed ${String(seed)} (CHARTPILOT_TEST_SEED replays it)`);
    const started = Date.now();
    // Three runs each (create, the held run, the change's); six iterations, half of each change.
    const results = await iterations(6, CONCURRENCY, async (i) => {
      const random = seeded(seed + 1000 + i);
      const annotation = i % 2 === 1;
      const name = `${annotation ? 'note' : 'spec'}-${String(i)}`;
      await created(w, name);
      await patchSpec(w, name, { size: 2, gate: 'g' });
      await atGate(w, name, 'g');
      const value = `seen-${String(i)}`;
      const placed = await place(random, () => (annotation ? annotate(w, name, value) : patchSpec(w, name, { size: 3 })), () => openGate(w, name, 'g'));
      const explain = (): string => `runs of ${name}: ${JSON.stringify(runsOf(w.op, name))}\n${logTail(w.op)}`;
      if (annotation) {
        await explained(
          waitFor(`${name}: a run saw the annotation`, async () => (await findObject<KubeObject & { data?: Record<string, string> }>(w.cluster.api(), { resource: CONFIG_MAPS, namespace: w.ns, name: `${name}-note` }))?.data?.['note'] === value, { timeoutMs: 60_000 }),
          explain,
        );
      } else {
        await explained(waitFor(`${name}: a run applied size 3`, async () => (await deployment(w, name))?.spec?.replicas === 3, { timeoutMs: 60_000 }), explain);
      }
      // The last run ran with the change; the status says so once it is written.
      await w.cr.until(name, 'Successful for its generation', successfulNow, 60_000);
      const held = runsOf(w.op, name).find((r) => r.trigger === 'inputs-changed');
      // The CR is left to the namespace's deletion (and the runner's reaper, once the operator is
      // gone): deleting it would cost another run, and deletions are the test above.
      return describePlacement(placed, held?.at);
    });
    report(t, results, Date.now() - started);
  });
});
