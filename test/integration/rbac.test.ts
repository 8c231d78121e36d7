/**
 * The generated RBAC is enough, and no more is needed: the real operator runs as a ServiceAccount
 * holding only what `chartpilot generate rbac` wrote, through install → upgrade → delete. And with
 * one verb taken away, the operator refuses to start and names what is missing.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { renderRbac } from '../../src/generate/render.js';
import { clusterResolver } from '../../src/generate/render.js';
import { newNamespace, testCluster, waitFor, type TestCluster } from './harness.js';
import {
  SAMPLE_CHART,
  applyCr,
  condition,
  getCr,
  helmList,
  installCrd,
  startOperator,
  testKind,
  waitForCr,
  writeWatches,
  type RunningOperator,
  type TestKind,
} from './operator-harness.js';

interface RbacSetup {
  readonly dir: string;
  readonly kubeconfig: string;
  readonly yaml: string;
}

/**
 * Generates RBAC for `kind` (chart: the sample webapp) bound to a fresh ServiceAccount in
 * `operatorNs`, applies it (after `edit`, if given) and returns a kubeconfig acting as that
 * ServiceAccount, on the same server with the same CA as the test cluster's.
 */
async function setUp(
  t: TestContext,
  cluster: TestCluster,
  kind: TestKind,
  operatorNs: string,
  roleNamespaces: readonly string[],
  edit: (docs: Record<string, unknown>[]) => void = () => undefined,
): Promise<RbacSetup> {
  const dir = mkdtempSync(join(tmpdir(), 'chartpilot-rbac-'));
  const watchesFile = writeWatches(dir, [{ kind, chart: SAMPLE_CHART }]);
  const name = `rbac-${randomBytes(4).toString('hex')}`;
  const resolver = await clusterResolver(false, cluster.kubeconfig, (line) => { t.diagnostic(line); });
  const out = await renderRbac(
    { watchesFile, name, namespace: operatorNs, serviceAccount: 'operator', roleNamespaces, sampleFiles: [], resolver },
    cluster.env,
  );
  assert.deepEqual(out.warnings, [], 'the sample chart needs no guesses');
  const docs = parseAllDocuments(out.yaml).map((d) => d.toJS() as Record<string, unknown>);
  edit(docs);
  const yaml = docs.map((d) => stringify(d)).join('---\n');
  t.after(async () => {
    // Cluster-scoped objects outlive the test namespaces.
    await cluster.kubectl(['delete', 'clusterrole,clusterrolebinding', '-l', `app.kubernetes.io/name=${name}`, '--ignore-not-found'], { allowFail: true });
  });
  await cluster.kubectl(['create', 'serviceaccount', 'operator', '-n', operatorNs]);
  await cluster.kubectl(['apply', '-f', '-'], { input: yaml });
  const token = (await cluster.kubectl(['create', 'token', 'operator', '-n', operatorNs, '--duration=1h'])).stdout.trim();
  return { dir, kubeconfig: tokenKubeconfig(cluster, dir, token), yaml };
}

/** A kubeconfig for `token` on the test cluster's server (same CA). */
function tokenKubeconfig(cluster: TestCluster, dir: string, token: string): string {
  const admin = parse(readFileSync(cluster.kubeconfig, 'utf8')) as {
    'current-context': string;
    contexts: { name: string; context: { cluster: string } }[];
    clusters: { name: string; cluster: Record<string, unknown> }[];
  };
  const context = admin.contexts.find((c) => c.name === admin['current-context']);
  const entry = admin.clusters.find((c) => c.name === context?.context.cluster);
  assert.ok(entry, 'the test kubeconfig names its cluster');
  const file = join(dir, 'operator.kubeconfig');
  writeFileSync(
    file,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'test', cluster: entry.cluster }],
      users: [{ name: 'operator', user: { token } }],
      contexts: [{ name: 'operator', context: { cluster: 'test', user: 'operator' } }],
      'current-context': 'operator',
    }),
    { mode: 0o600 },
  );
  return file;
}

async function exitCode(op: RunningOperator, timeoutMs: number): Promise<number> {
  let code: number | undefined;
  void op.process.then((r) => {
    code = r.exitCode ?? -1;
  });
  return waitFor('operator exit', () => Promise.resolve(code), { timeoutMs, intervalMs: 100 });
}

/** install → upgrade → delete, as the restricted identity. */
async function lifecycle(cluster: TestCluster, kind: TestKind, ns: string, op: RunningOperator): Promise<void> {
  await applyCr(cluster, kind, ns, 'shop', { replicaCount: 1, message: 'v1' });
  const installed = await waitForCr(cluster, kind, ns, 'shop', 'Deployed', (cr) => condition(cr, 'Deployed')?.status === 'True', op);
  assert.equal(condition(installed, 'Deployed')?.reason, 'InstallSuccessful');

  await applyCr(cluster, kind, ns, 'shop', { replicaCount: 2, message: 'v2' });
  const upgraded = await waitForCr(cluster, kind, ns, 'shop', 'revision 2', (cr) => cr.status?.deployedRelease?.revision === 2, op);
  assert.equal(condition(upgraded, 'Deployed')?.reason, 'UpgradeSuccessful');
  const replicas = await cluster.kubectl(['get', 'deployment', 'shop', '-n', ns, '-o', 'jsonpath={.spec.replicas}']);
  assert.equal(replicas.stdout, '2');

  await cluster.kubectl(['delete', `${kind.plural}.${kind.group}`, 'shop', '-n', ns, '--wait=false']);
  await waitFor('CR gone after uninstall', async () => (await getCr(cluster, kind, ns, 'shop')) === undefined, { timeoutMs: 90_000 });
  assert.deepEqual(await helmList(cluster, ns), []);
  const leftovers = await cluster.kubectl(['get', 'deployment,service,configmap', '-n', ns, '-l', 'app.kubernetes.io/instance=shop', '-o', 'name']);
  assert.equal(leftovers.stdout.trim(), '');
  // Nothing was refused along the way (a 403 on a dependent watch would only be logged).
  assert.doesNotMatch(op.logs(), /forbidden|cannot list/i);
}

describe('generated RBAC', () => {
  it('a ClusterRole holding only the generated rules runs install, upgrade and delete', async (t) => {
    const cluster = await testCluster();
    const kind = testKind('Rbac');
    await installCrd(cluster, kind);
    const ns = await newNamespace(t, 'rbac');
    const setup = await setUp(t, cluster, kind, ns, []);
    assert.match(setup.yaml, /kind: ClusterRole\n/);
    // The identity really is restricted: it cannot, say, read pods.
    const can = await cluster.kubectl(['auth', 'can-i', 'list', 'pods', '-n', ns, '--as', `system:serviceaccount:${ns}:operator`], { allowFail: true });
    assert.equal(can.stdout.trim(), 'no');
    const op = await startOperator(t, cluster, { namespaces: [ns], watches: [], dir: setup.dir, env: { KUBECONFIG: setup.kubeconfig } });
    await lifecycle(cluster, kind, ns, op);
  });

  it('Roles in the watched namespace (--role-namespace, WATCH_NAMESPACE) are enough too', async (t) => {
    const cluster = await testCluster();
    const kind = testKind('RbacRole');
    await installCrd(cluster, kind);
    const ns = await newNamespace(t, 'rbac-role');
    const operatorNs = await newNamespace(t, 'rbac-op');
    const setup = await setUp(t, cluster, kind, operatorNs, [ns]);
    assert.doesNotMatch(setup.yaml, /kind: ClusterRole\n/, 'no cluster-wide grant at all');
    const elsewhere = await cluster.kubectl(['auth', 'can-i', 'create', 'deployments', '-n', operatorNs, '--as', `system:serviceaccount:${operatorNs}:operator`], { allowFail: true });
    assert.equal(elsewhere.stdout.trim(), 'no');
    const op = await startOperator(t, cluster, { namespaces: [ns], watches: [], dir: setup.dir, env: { KUBECONFIG: setup.kubeconfig } });
    await lifecycle(cluster, kind, ns, op);
  });

  it('without patch on the status subresource the operator exits 3 at start, naming the permission', async (t) => {
    const cluster = await testCluster();
    const kind = testKind('RbacMissing');
    await installCrd(cluster, kind);
    const ns = await newNamespace(t, 'rbac-missing');
    const setup = await setUp(t, cluster, kind, ns, [ns], (docs) => {
      for (const doc of docs) {
        if (doc['kind'] !== 'Role') continue;
        // patch is the status rule's only verb: without it the rule goes (a rule needs a verb).
        const rules = (doc['rules'] ?? []) as { resources?: string[]; verbs: string[] }[];
        doc['rules'] = rules
          .map((rule) => (rule.resources?.some((r) => r.endsWith('/status')) === true ? { ...rule, verbs: rule.verbs.filter((v) => v !== 'patch') } : rule))
          .filter((rule) => rule.verbs.length > 0);
      }
    });
    const op = await startOperator(t, cluster, { namespaces: [ns], watches: [], dir: setup.dir, env: { KUBECONFIG: setup.kubeconfig }, noWait: true });
    assert.equal(await exitCode(op, 30_000), 3, op.logs());
    assert.match(op.logs(), new RegExp(`missing permissions it needs: patch ${kind.plural}/status\\.${kind.group.replace(/\./g, '\\.')} in namespace ${ns}\\.`));
    assert.match(op.logs(), /chartpilot generate rbac/);
  });
});
