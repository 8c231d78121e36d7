/**
 * A Helm kind acts on every change that lands while one of its helm upgrades is in flight: a
 * deletion (the Ansible engine lost one, issue "Step 21", item 6; the shared controller must not
 * lose it for charts either), a spec change and an annotation change, each at a random point of
 * the upgrade (in-flight.ts `place`).
 *
 * The held-upgrade chart's pre-upgrade hook Job is made suspended while its gate is shut, and helm
 * waits on it: the upgrade surely runs while the test makes its change; the test then opens the
 * gate (a ConfigMap the chart looks up, and the Job resumed). A held upgrade costs no CPU, and
 * several iterations run at once, each on a CR of its own.
 */
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { createObject, deleteObject, findObject, listObjects, mergePatchObject } from '../../src/kube/objects.js';
import type { ApiResource, KubeObject } from '../../src/kube/types.js';
import { installCrd, testKind, type TestKind } from './crd.js';
import { condition, crsOf, type Cr, type Crs } from './crs.js';
import { fixtureChart } from './fixtures.js';
import { newNamespace, testCluster, type TestCluster } from './harness.js';
import { CONFIG_MAPS, iterations, JOBS, place, report, seeded, sequenceRounds, testSeed, TEST_TIMEOUT_MS, type Placement } from './in-flight.js';
import { startOperator, type RunningOperator } from './operator.js';
import { lineTime, logLines, logTail } from './operator-log.js';
import { explained, waitFor } from './wait.js';

/** Iterations at once: each holds one of the kind's helm slots while its upgrade waits at the gate. */
const CONCURRENCY = 5;
const ARGS = ['--max-concurrent-reconciles', String(CONCURRENCY)];
const PAUSE = 'helm.sdk.operatorframework.io/pause-reconcile';
const SECRETS: ApiResource = { group: '', version: 'v1', apiVersion: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true };

interface World {
  readonly cluster: TestCluster;
  readonly ns: string;
  readonly kind: TestKind;
  readonly op: RunningOperator;
  readonly cr: Crs;
}

async function world(t: TestContext): Promise<World> {
  const cluster = await testCluster();
  const kind = testKind('HeldUpgrade');
  await installCrd(cluster, kind);
  const ns = await newNamespace(t, 'in-flight-helm');
  const op = await startOperator(t, cluster, { namespaces: [ns], watches: [{ kind, chart: fixtureChart('held-upgrade') }], args: ARGS });
  return { cluster, ns, kind, op, cr: crsOf(cluster, kind, ns, op) };
}

function resourceOfKind(k: TestKind): ApiResource {
  return { group: k.group, version: k.version, apiVersion: `${k.group}/${k.version}`, kind: k.kind, plural: k.plural, namespaced: true };
}

/** Deployed, and the status says so of the CR's current generation. */
const deployedNow = (cr: Cr): boolean => condition(cr, 'Deployed')?.status === 'True' && cr.status?.observedGeneration === cr.metadata.generation;

async function config(w: World, name: string): Promise<(KubeObject & { data?: Record<string, string> }) | undefined> {
  return findObject(w.cluster.api(), { resource: CONFIG_MAPS, namespace: w.ns, name: `${name}-config` });
}

async function patchSpec(w: World, name: string, spec: Record<string, unknown>): Promise<void> {
  await mergePatchObject(w.cluster.api(), { resource: resourceOfKind(w.kind), namespace: w.ns, name }, { spec });
}

/** Waits until CR `name`'s upgrade waits on its hook Job of gate `gate`. */
async function atGate(w: World, name: string, gate: string): Promise<void> {
  await explained(
    waitFor(`${name}: the upgrade waits at gate ${gate}`, async () => (await findObject(w.cluster.api(), { resource: JOBS, namespace: w.ns, name: `${name}-hold-${gate}` })) !== undefined, {
      timeoutMs: 120_000,
      intervalMs: 100,
    }),
    () => logTail(w.op),
  );
}

/** Open for this upgrade (the Job resumes) and for any later render (the chart finds the ConfigMap). */
async function openGate(w: World, name: string, gate: string): Promise<void> {
  const api = w.cluster.api();
  await createObject(api, CONFIG_MAPS, w.ns, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${name}-gate-${gate}`, namespace: w.ns } });
  await mergePatchObject(api, { resource: JOBS, namespace: w.ns, name: `${name}-hold-${gate}` }, { spec: { suspend: false } });
}

/** helm's release records of `name` (Secrets labelled owner=helm,name=<name>). */
async function releaseRecords(w: World, name: string): Promise<number> {
  const list = await listObjects(w.cluster.api(), SECRETS, w.ns, { labelSelector: `owner=helm,name=${name}`, metadataOnly: true });
  return list.items.length;
}

/** When the upgrade of `name` ended (its "release deployed" line with action upgrade), if it did. */
function upgradeEnd(op: RunningOperator, name: string): number | undefined {
  const line = logLines(op).find((l) => l.msg === 'release deployed' && l.name === name && l.action === 'upgrade');
  return line === undefined ? undefined : lineTime(line);
}

function describePlacement(p: Placement, end: number | undefined): string {
  const landed = end === undefined ? 'the upgrade did not end in success' : `${String(end - p.changedAt)} ms before the upgrade ended`;
  return `${p.mode} ${String(p.ms)} ms (${landed})`;
}

async function created(w: World, name: string): Promise<void> {
  await w.cr.create(name, { size: 1 });
  await w.cr.until(name, 'Deployed', deployedNow, 120_000);
  assert.equal((await config(w, name))?.data?.['size'], '1');
}

describe('a Helm kind acts on every change that lands during a helm upgrade (real helm and control plane)', () => {
  it('create, drift, spec change, delete during the upgrade: the release is uninstalled and the CR goes, 20 times in a row (CHARTPILOT_TEST_IN_FLIGHT_ROUNDS)', { timeout: TEST_TIMEOUT_MS }, async (t) => {
    const w = await world(t);
    const seed = testSeed();
    t.diagnostic(`seed ${String(seed)} (CHARTPILOT_TEST_SEED replays it)`);
    const started = Date.now();
    const results = await iterations(sequenceRounds(), CONCURRENCY, async (i) => {
      const random = seeded(seed + i);
      const name = `held-${String(i)}`;
      await created(w, name);

      // Drift: the release's ConfigMap deleted by someone else is made again.
      const before = await config(w, name);
      await deleteObject(w.cluster.api(), { resource: CONFIG_MAPS, namespace: w.ns, name: `${name}-config` });
      await waitFor(`${name}: ConfigMap made again`, async () => {
        const now = await config(w, name);
        return now !== undefined && now.metadata.uid !== before?.metadata.uid;
      }, { timeoutMs: 120_000 });

      // Spec change: its upgrade waits at the gate; the CR is deleted at a random point of it.
      await patchSpec(w, name, { size: 2, gate: 'g' });
      await atGate(w, name, 'g');
      const placed = await place(random, () => w.cr.delete(name), () => openGate(w, name, 'g'));
      await explained(w.cr.gone(name, 60_000), () => logTail(w.op));
      assert.equal(await releaseRecords(w, name), 0, `${name}: the release was uninstalled`);
      return describePlacement(placed, upgradeEnd(w.op, name));
    });
    report(t, results, Date.now() - started);
  });

  it('a spec or an annotation change during an upgrade is acted on, wherever in the upgrade it lands', { timeout: TEST_TIMEOUT_MS }, async (t) => {
    const w = await world(t);
    const seed = testSeed();
    t.diagnostic(`seed ${String(seed)} (CHARTPILOT_TEST_SEED replays it)`);
    const started = Date.now();
    const results = await iterations(10, CONCURRENCY, async (i) => {
      const random = seeded(seed + 1000 + i);
      const annotation = i % 2 === 1;
      const name = `${annotation ? 'pause' : 'spec'}-${String(i)}`;
      await created(w, name);
      await patchSpec(w, name, { size: 2, gate: 'g' });
      await atGate(w, name, 'g');
      const change = (): Promise<void> =>
        annotation
          ? mergePatchObject(w.cluster.api(), { resource: resourceOfKind(w.kind), namespace: w.ns, name }, { metadata: { annotations: { [PAUSE]: 'true' } } }).then(() => undefined)
          : patchSpec(w, name, { size: 3 });
      const placed = await place(random, change, () => openGate(w, name, 'g'));
      if (annotation) {
        // The pause annotation is acted on: the status says the CR is paused.
        await w.cr.until(name, 'Paused', (cr) => condition(cr, 'Paused')?.status === 'True', 60_000);
      } else {
        await explained(waitFor(`${name}: size 3 deployed`, async () => (await config(w, name))?.data?.['size'] === '3', { timeoutMs: 60_000 }), () => logTail(w.op));
        await w.cr.until(name, 'Deployed for its generation', deployedNow, 60_000);
      }
      await w.cr.delete(name);
      await w.cr.gone(name, 60_000);
      return describePlacement(placed, upgradeEnd(w.op, name));
    });
    report(t, results, Date.now() - started);
  });
});
