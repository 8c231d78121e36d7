// One tenant cannot make another wait for helm: namespace A's releases whose pre-install hook never
// finishes (a Job whose node selector, taken from values, matches no node) and A's backlog of
// hundreds of CRs do not hold back namespace B's new CR of the same kind. Each test prints the
// victim's wait (`victim waited …`), the figure docs/architecture/performance.md quotes.
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { installCrd, resourceOf, testKind, type TestKind } from './crd.js';
import { crsOf, isDeployed, type Cr } from './crs.js';
import { fixtureChart } from './fixtures.js';
import { newNamespace, testCluster, type TestCluster } from './harness.js';
import { startOperator, type RunningOperator } from './operator.js';
import { waitFor } from './wait.js';

const CHART = fixtureChart('values-hook');
const HELM_TIMEOUT_S = 60;
const HANGING_HOOK = { hookNodeSelector: { 'chartpilot.test/no-such-node': 'true' } };
/** Well under the helm timeout: the victim alone takes about a second. */
const VICTIM_BOUND_MS = 20_000;

interface Tenants {
  readonly cluster: TestCluster;
  readonly kind: TestKind;
  readonly a: string;
  readonly b: string;
  readonly op: RunningOperator;
}

async function tenants(t: TestContext, suffix: string): Promise<Tenants> {
  const cluster = await testCluster();
  const kind = testKind(suffix);
  await installCrd(cluster, kind);
  const a = await newNamespace(t, 'fair-a');
  const b = await newNamespace(t, 'fair-b');
  const op = await startOperator(t, cluster, {
    namespaces: [a, b],
    watches: [{ kind, chart: CHART }],
    args: ['--max-concurrent-reconciles=2', `--helm-timeout=${String(HELM_TIMEOUT_S)}s`],
  });
  return { cluster, kind, a, b, op };
}

/** Creates `count` CRs in `ns` with one request, so they arrive together. */
async function createMany(env: Tenants, ns: string, prefix: string, count: number, spec: unknown): Promise<void> {
  const items = Array.from({ length: count }, (_, i) => ({
    apiVersion: `${env.kind.group}/${env.kind.version}`,
    kind: env.kind.kind,
    metadata: { name: `${prefix}-${String(i)}`, namespace: ns },
    spec,
  }));
  await env.cluster.kubectl(['create', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items }) });
}

async function listCrs(env: Tenants, ns: string): Promise<Cr[]> {
  const r = await env.cluster.kubectl(['get', resourceOf(env.kind), '-n', ns, '-o', 'json']);
  return (JSON.parse(r.stdout) as { items: Cr[] }).items;
}

/** Creates B's CR and waits until it is deployed; returns how long that took. */
async function victimWait(t: TestContext, env: Tenants): Promise<number> {
  const victim = crsOf(env.cluster, env.kind, env.b, env.op);
  const started = Date.now();
  await victim.create('victim', {});
  await victim.until('victim', 'Deployed', isDeployed, HELM_TIMEOUT_S * 6_000);
  const waited = Date.now() - started;
  t.diagnostic(`victim waited ${(waited / 1000).toFixed(1)} s`);
  return waited;
}

/** Stops the operator and takes its finalizer off A's CRs, so the namespaces can go. */
async function cleanUp(env: Tenants): Promise<void> {
  await env.op.stop('SIGKILL');
  for (const ns of [env.a, env.b]) {
    const items = (await listCrs(env, ns)).map((cr) => ({ ...cr, metadata: { ...(cr.metadata as object), finalizers: [] } }));
    if (items.length > 0) await env.cluster.kubectl(['replace', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items }), allowFail: true });
  }
}

async function hostileHooksRunning(env: Tenants): Promise<void> {
  await waitFor('a hostile pre-install hook Job', async () => {
    const r = await env.cluster.kubectl(['get', 'jobs', '-n', env.a, '-o', 'name'], { allowFail: true });
    return r.stdout.trim() !== '';
  });
}

describe('helm slots are shared fairly between namespaces', { timeout: 600_000 }, () => {
  for (const hostile of [2, 6]) {
    it(`B's new CR deploys well under the helm timeout while A has ${String(hostile)} CRs whose hooks never finish`, async (t) => {
      const env = await tenants(t, `Fair${String(hostile)}`);
      await createMany(env, env.a, 'hostile', hostile, HANGING_HOOK);
      await hostileHooksRunning(env);
      const waited = await victimWait(t, env);
      // A still holds a slot with a hung hook: the victim did not get in because A's calls ended.
      const jobs = await env.cluster.kubectl(['get', 'jobs', '-n', env.a, '-o', 'name']);
      assert.ok(jobs.stdout.trim() !== '', 'a hostile hook Job still exists');
      assert.ok(waited < VICTIM_BOUND_MS, `the victim waited ${String(waited)} ms behind ${String(hostile)} hung releases (helm timeout ${String(HELM_TIMEOUT_S)} s)`);
      await cleanUp(env);
    });
  }

  it("B's new CR is not queued behind A's 300", async (t) => {
    const env = await tenants(t, 'FairMany');
    await createMany(env, env.a, 'many', 300, {});
    // The 300 are in the operator's queue (it saw them all) before the victim arrives.
    await waitFor('the operator to start on A', () => Promise.resolve(env.op.helmCalls().some((c) => c.includes(`--namespace=${env.a}`))));
    const waited = await victimWait(t, env);
    const deployedInA = (await listCrs(env, env.a)).filter(isDeployed).length;
    t.diagnostic(`A's CRs deployed when the victim was: ${String(deployedInA)} of 300`);
    assert.ok(deployedInA < 100, `${String(deployedInA)} of A's 300 CRs were deployed before B's one: B waited behind them`);
    assert.ok(waited < VICTIM_BOUND_MS, `the victim waited ${String(waited)} ms`);
    await cleanUp(env);
  });
});
