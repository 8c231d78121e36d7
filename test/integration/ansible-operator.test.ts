/**
 * An Ansible kind of our own (test/fixtures/ansible/roles/webapp: a ConfigMap, a Deployment and a
 * Service from spec values) run by the real operator with the real ansible-runner, through the
 * per-run API proxy, against the real control plane: what runs a role and what does not, status,
 * ownership, readiness, finalizer, confinement and identity, failures, hangs and restarts.
 */
import assert from 'node:assert/strict';
import { appendFileSync, cpSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { stringify } from 'yaml';
import { installCrd, resourceOf, testKind, type TestKind } from './crd.js';
import { condition, crsOf, eventsFor, type Cr, type Crs } from './crs.js';
import { REPO_ROOT } from './fixtures.js';
import { getJson, newNamespace, testCluster, type TestCluster } from './harness.js';
import { startOperator, type RunningOperator } from './operator.js';
import { logLines, logTail } from './operator-log.js';
import { explained, waitFor } from './wait.js';

const ROLE = join(REPO_ROOT, 'test/fixtures/ansible/roles/webapp');
const FINALIZER = 'test.chartpilot.io/finalizer';
/**
 * debug: the `planned` lines tell that a reconcile looked at a CR (and ran nothing).
 * The run timeout only has to stop the fixture's `sleep 600`; a run that does not hang took 20-25 s
 * on a loaded CI machine (13-15 s of it Ansible starting), so 20 s timed out good runs too.
 */
const ARGS = ['--ansible-run-timeout', '45s', '--proxy-port', '0', '--log-level', 'debug'];

interface KubeObj {
  metadata: { name: string; uid?: string; ownerReferences?: { uid: string; kind: string }[]; labels?: Record<string, string> };
  data?: Record<string, string>;
  status?: { availableReplicas?: number };
}

/** Runs of CR `name` that ended, from the operator's log (one "ansible run finished" line per run). */
function runsOf(op: RunningOperator, name: string): { trigger: string; result: string }[] {
  return logLines(op)
    .filter((l) => l.msg === 'ansible run finished' && l.name === name)
    .map((l) => ({ trigger: String(l.trigger), result: String(l.result) }));
}

/** Writes a watches.yaml with one or more Ansible kinds running (a copy of) the fixture role. */
function writeAnsibleWatches(dir: string, kinds: readonly { kind: TestKind; extra?: Record<string, unknown> }[]): void {
  const roles = join(dir, 'roles');
  cpSync(join(ROLE, '..'), roles, { recursive: true });
  const entries = kinds.map(({ kind, extra }) => ({
    group: kind.group,
    version: kind.version,
    kind: kind.kind,
    role: join(roles, 'webapp'),
    vars: { _cr_api_version: `${kind.group}/${kind.version}`, _cr_kind: kind.kind },
    ...(extra ?? {}),
  }));
  writeFileSync(join(dir, 'watches.yaml'), stringify(entries));
}

async function getObj(cluster: TestCluster, kind: string, ns: string, name: string): Promise<KubeObj | undefined> {
  const r = await cluster.kubectl(['get', kind, name, '-n', ns, '-o', 'json'], { allowFail: true });
  return r.exitCode === 0 ? (JSON.parse(r.stdout) as KubeObj) : undefined;
}

interface World {
  readonly cluster: TestCluster;
  readonly ns: string;
  readonly dir: string;
  readonly kind: TestKind;
  readonly tenantKind: TestKind;
  op: RunningOperator;
  cr: Crs;
  tenant: Crs;
}

async function world(t: TestContext, args: readonly string[] = ARGS): Promise<World> {
  const cluster = await testCluster();
  const kind = testKind('Ansible');
  const tenantKind = testKind('AnsibleTenant');
  await installCrd(cluster, kind);
  await installCrd(cluster, tenantKind);
  const ns = await newNamespace(t, 'ansible');
  const dir = mkdtempSync(join(tmpdir(), 'chartpilot-ansible-op-'));
  writeAnsibleWatches(dir, [
    { kind, extra: { finalizer: { name: FINALIZER, vars: { state: 'absent' } } } },
    { kind: tenantKind, extra: { serviceAccount: 'tenant', valuesFrom: { specField: 'valuesFrom' } } },
  ]);
  await cluster.kubectl(['create', 'serviceaccount', 'tenant', '-n', ns]);
  await cluster.kubectl(['create', 'rolebinding', 'tenant-admin', '-n', ns, '--clusterrole=admin', `--serviceaccount=${ns}:tenant`]);
  // The role's k8s_status reads and writes its CR: the tenant needs that too (admin does not cover a CRD's kind).
  const crs = `${tenantKind.plural}.${tenantKind.group}`;
  await cluster.kubectl(['create', 'role', 'tenant-crs', '-n', ns, '--verb=get,list,watch,patch,update', `--resource=${crs},${crs}/status`]);
  await cluster.kubectl(['create', 'rolebinding', 'tenant-crs', '-n', ns, '--role=tenant-crs', `--serviceaccount=${ns}:tenant`]);
  const op = await startOperator(t, cluster, { namespaces: [ns], watches: [], dir, args });
  return { cluster, ns, dir, kind, tenantKind, op, cr: crsOf(cluster, kind, ns, op), tenant: crsOf(cluster, tenantKind, ns, op) };
}

const successful = (cr: Cr): boolean => condition(cr, 'Successful')?.status === 'True';
const failed = (reason: string) => (cr: Cr): boolean => condition(cr, 'Failure')?.status === 'True' && condition(cr, 'Failure')?.reason === reason;

describe('an Ansible kind (real ansible-runner, proxy and control plane)', { timeout: 900_000 }, () => {
  it('runs only when something it depends on changed, and keeps its objects, status and finalizer', async (t) => {
    const w = await world(t);
    const { cluster, ns } = w;
    const explain = (): string => logTail(w.op, 60);

    // create → objects with ownerReferences, Successful, the role's own status, Ready once available.
    await cluster.kubectl(['create', 'configmap', 'marker-web', '-n', ns]);
    await w.cr.create('web', { message: 'one', replicas: 1 });
    const created = await w.cr.until('web', 'Successful', successful);
    const uid = created.metadata.uid ?? '';
    assert.deepEqual(created.metadata.finalizers, [FINALIZER]);
    for (const [kind, name] of [['configmap', 'web-config'], ['deployment', 'web'], ['service', 'web']] as const) {
      const obj = await getObj(cluster, kind, ns, name);
      assert.ok(obj, `${kind} ${name} exists`);
      assert.ok(obj.metadata.ownerReferences?.some((r) => r.uid === uid), `${kind} ${name} is owned by the CR`);
    }
    assert.equal((created.status as Record<string, unknown> | undefined)?.['roleSaw'], 'one', 'k8s_status from the role');
    const running = condition(created, 'Running') as { reason: string; ansibleResult?: { ok: number; failures: number } } | undefined;
    assert.equal(running?.reason, 'Successful');
    assert.equal(running.ansibleResult?.failures, 0);
    await w.cr.until('web', 'Ready', (cr) => condition(cr, 'Ready')?.status === 'True', 120_000);
    assert.equal(runsOf(w.op, 'web').length, 1, 'one run for a new CR');

    // spec change → updated, one more run.
    await cluster.kubectl(['patch', w.kind.plural + '.' + w.kind.group, 'web', '-n', ns, '--type=merge', '-p', '{"spec":{"message":"two"}}']);
    await explained(
      waitFor('ConfigMap updated', async () => (await getObj(cluster, 'configmap', ns, 'web-config'))?.data?.['message'] === 'two'),
      explain,
    );
    await w.cr.until('web', 'roleSaw two', (cr) => (cr.status as Record<string, unknown> | undefined)?.['roleSaw'] === 'two' && successful(cr));
    assert.equal(runsOf(w.op, 'web').length, 2);

    // delete a child → recreated by one run (drift).
    await cluster.kubectl(['delete', 'configmap', 'web-config', '-n', ns]);
    await explained(waitFor('ConfigMap recreated', async () => (await getObj(cluster, 'configmap', ns, 'web-config')) !== undefined), explain);
    await explained(waitFor('the drift run ended', () => Promise.resolve(runsOf(w.op, 'web').length === 3)), explain);
    assert.equal(runsOf(w.op, 'web')[2]?.trigger, 'drift');

    // a status-only change of a dependent and a quiet spell run nothing.
    await delay(8_000);
    assert.equal(runsOf(w.op, 'web').length, 3, `no run without a change: ${JSON.stringify(runsOf(w.op, 'web'))}`);

    // restart with converged CRs → 0 runs.
    await w.op.stop('SIGTERM');
    w.op = await startOperator(t, cluster, { namespaces: [ns], watches: [], dir: w.dir, args: ARGS });
    w.cr = crsOf(cluster, w.kind, ns, w.op);
    const before = runsOf(w.op, 'web').length; // the log file holds every run in this directory
    await explained(
      waitFor('the restarted operator looked at web', () => Promise.resolve(logLines(w.op).filter((l) => l.msg === 'planned' && l.name === 'web' && l.plan === 'current').length >= 1)),
      explain,
    );
    await delay(5_000);
    assert.equal(runsOf(w.op, 'web').length, before, 'a restart runs no playbook for a converged CR');

    // a dependent's drift after the restart → one run.
    await cluster.kubectl(['delete', 'service', 'web', '-n', ns]);
    await explained(waitFor('Service recreated', async () => (await getObj(cluster, 'service', ns, 'web')) !== undefined), explain);
    await explained(waitFor('one drift run', () => Promise.resolve(runsOf(w.op, 'web').length === before + 1)), explain);

    // delete the CR → the finalizer ran (it deletes the marker), the CR and its objects go.
    await w.cr.delete('web');
    await w.cr.gone('web', 120_000);
    assert.equal(await getObj(cluster, 'configmap', ns, 'marker-web'), undefined, 'the finalizer role ran');
    await explained(waitFor('owned objects collected', async () => (await getObj(cluster, 'deployment', ns, 'web')) === undefined, { timeoutMs: 120_000 }), explain);
  });

  // Its own test (and world): with the sequence above in one test it came within seconds of the
  // per-test timeout on a loaded CI machine.
  it('runs again when the role asks (requeue_after), and says on the CR when a run fails, hangs or is refused by the confinement', async (t) => {
    const w = await world(t);
    const { cluster, ns } = w;
    const explain = (): string => logTail(w.op, 60);

    // requeue_after from the role runs again when due.
    await w.cr.create('again', { requeue_after: '5s' });
    await w.cr.until('again', 'Successful', successful);
    await explained(waitFor('a requeue_after run', () => Promise.resolve(runsOf(w.op, 'again').some((r) => r.trigger === 'requeue-after')), { timeoutMs: 60_000 }), explain);
    await cluster.kubectl(['delete', w.kind.plural + '.' + w.kind.group, 'again', '-n', ns, '--wait=false']);

    // a failing run: a clear condition naming the task, an Event; the fixed spec's run succeeds.
    await w.cr.create('bad', { fail_now: true, message: 'hunter2-secret-value' });
    const bad = await w.cr.until('bad', 'Failure', failed('Failed'));
    assert.match(condition(bad, 'Failure')?.message ?? '', /Fail when asked/u);
    assert.doesNotMatch(JSON.stringify(bad.status), /hunter2-secret-value/u, 'spec values are redacted from the condition');
    // The Event follows the status write (the reconciler emits it after, without waiting).
    await explained(waitFor('a RunFailed Event for bad', async () => (await eventsFor(cluster, ns, 'bad')).some((e) => e.reason === 'RunFailed')), explain);
    await cluster.kubectl(['patch', w.kind.plural + '.' + w.kind.group, 'bad', '-n', ns, '--type=merge', '-p', '{"spec":{"fail_now":false}}']);
    const fixed = await w.cr.until('bad', 'Successful after the fix', successful);
    assert.equal(condition(fixed, 'Failure')?.status, 'False');

    // a hung run: killed at --ansible-run-timeout, said so; the next run succeeds.
    await w.cr.create('hang', { hang: true });
    await w.cr.until('hang', 'RunTimeout', failed('RunTimeout'), 120_000);
    await cluster.kubectl(['patch', w.kind.plural + '.' + w.kind.group, 'hang', '-n', ns, '--type=merge', '-p', '{"spec":{"hang":false}}']);
    // A hung run still going when the patch lands ends at the timeout first, then the fixed spec runs.
    await w.cr.until('hang', 'Successful after the hang', successful, 180_000);

    // confinement: a ClusterRoleBinding and an object in kube-system are refused, with a condition.
    await w.cr.create('crb', { cluster_role_binding: true });
    await w.cr.until('crb', 'refused', failed('Forbidden'));
    assert.equal((await cluster.kubectl(['get', 'clusterrolebinding', 'escape-crb'], { allowFail: true })).exitCode, 1, 'no ClusterRoleBinding was made');
    await w.cr.create('kube', { other_namespace: 'kube-system' });
    await w.cr.until('kube', 'refused', failed('Forbidden'));
    assert.equal(await getObj(cluster, 'configmap', 'kube-system', 'escape-kube'), undefined, 'nothing was made in kube-system');

  });

  it('a run stopped with the operator records nothing, says so, and runs again at the next start; a changed role file runs it again', async (t) => {
    const args = [...ARGS, '--graceful-shutdown-timeout=1s'];
    const w = await world(t, args);
    const { cluster, ns } = w;
    await w.cr.create('slow', { hang: true });
    await explained(
      waitFor('the run started', () => Promise.resolve(logLines(w.op).some((l) => l.msg === 'ansible run needed' && l.name === 'slow'))),
      () => logTail(w.op),
    );
    await w.cr.until('slow', 'Running', (cr) => condition(cr, 'Running')?.reason === 'Running' && condition(cr, 'Running')?.status === 'True');
    await w.op.stop('SIGTERM');
    assert.equal(await w.op.exitCode(30_000), 0);
    const stopped = await w.cr.until('slow', 'Interrupted', failed('Interrupted'), 10_000);
    assert.equal((stopped.status as { chartpilot?: { inputs?: string } } | undefined)?.chartpilot?.inputs ?? '', '', 'no inputs recorded');
    await cluster.kubectl(['patch', w.kind.plural + '.' + w.kind.group, 'slow', '-n', ns, '--type=merge', '-p', '{"spec":{"hang":false}}']);
    w.op = await startOperator(t, cluster, { namespaces: [ns], watches: [], dir: w.dir, args });
    w.cr = crsOf(cluster, w.kind, ns, w.op);
    const done = await w.cr.until('slow', 'Successful at the next start', successful);
    assert.equal(condition(done, 'Failure')?.status, 'False');

    // A changed role file is picked up without a restart: each CR of the kind runs once.
    const before = runsOf(w.op, 'slow').length;
    appendFileSync(join(w.dir, 'roles/webapp/tasks/main.yml'), '\n# edited by the test\n');
    await explained(
      waitFor('a run for the changed role', () => Promise.resolve(runsOf(w.op, 'slow').slice(before).some((r) => r.trigger === 'inputs-changed' && r.result === 'successful'))),
      () => logTail(w.op),
    );
  });

  it('with a tenant ServiceAccount a run acts as the tenant: it makes its objects, takes vars from a Secret it may read (valuesFrom), and cannot read one elsewhere', async (t) => {
    const w = await world(t);
    const { cluster, ns } = w;
    const other = await newNamespace(t, 'ansible-other');
    await cluster.kubectl(['create', 'secret', 'generic', 'target', '-n', other, '--from-literal=k=v']);
    await w.tenant.create('mine', { message: 'tenant' });
    const mine = await w.tenant.until('mine', 'Successful', successful);
    assert.ok(await getObj(cluster, 'deployment', ns, 'mine'));
    assert.equal((mine.status as Record<string, unknown> | undefined)?.['roleSaw'], 'tenant');
    await w.tenant.create('peek', { read_secret_from: other });
    const peek = await w.tenant.until('peek', 'refused', (cr) => condition(cr, 'Failure')?.status === 'True');
    assert.match(condition(peek, 'Failure')?.message ?? '', /forbidden|403|Read a Secret/iu);
    const secret = await getJson<{ data: Record<string, string> }>(cluster, ['get', 'secret', 'target', '-n', other, '-o', 'json']);
    assert.equal(secret.data['k'], 'dg==', 'the Secret is untouched');

    // valuesFrom: a Secret of the namespace, read as the tenant, becomes a var of the run; one elsewhere is refused before any run.
    const text = 'from-a-Secret-4f1c9';
    await cluster.kubectl(['create', 'secret', 'generic', 'app-message', '-n', ns, `--from-literal=text=${text}`]);
    await w.tenant.create('fromsecret', { valuesFrom: [{ kind: 'Secret', name: 'app-message', valuesKey: 'text', targetPath: 'message' }] });
    await w.tenant.until('fromsecret', 'Successful', successful);
    assert.equal((await getObj(cluster, 'configmap', ns, 'fromsecret-config'))?.data?.['message'], text);
    await w.tenant.create('elsewhere', { valuesFrom: [{ kind: 'Secret', name: 'target', namespace: other, valuesKey: 'k', targetPath: 'message' }] });
    const elsewhere = await w.tenant.until('elsewhere', 'ValuesReferenceInvalid', failed('ValuesReferenceInvalid'));
    assert.match(condition(elsewhere, 'Failure')?.message ?? '', /in another namespace/);
    assert.equal(runsOf(w.op, 'elsewhere').length, 0, 'no run');
    // The fixture role copies `message` into the status itself (k8s_status); the operator puts it nowhere.
    const cr = await getJson<{ spec: unknown; status: Record<string, unknown> }>(cluster, ['get', resourceOf(w.tenantKind), 'fromsecret', '-n', ns, '-o', 'json']);
    assert.equal(cr.status['roleSaw'], text);
    const { roleSaw: _byTheRole, ...operatorStatus } = cr.status;
    assert.equal(JSON.stringify({ spec: cr.spec, operatorStatus }).includes(text), false, 'not in the spec or the status the operator writes');
    assert.equal(w.op.logs().includes(text), false, 'not in the log (debug level)');
  });
});
