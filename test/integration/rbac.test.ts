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
import type { TestKind } from './crd.js';
import { condition, crsOf, helmList } from './crs.js';
import { SAMPLE_CHART } from './fixtures.js';
import { newNamespace, type TestCluster } from './harness.js';
import { writeWatches, type RunningOperator } from './operator.js';
import { setUp, type Setup } from './scenario.js';

interface Grant {
  /** The operator's directory, with the watches.yaml the RBAC was generated for. */
  readonly dir: string;
  /** Acting as the ServiceAccount that holds the grant. */
  readonly kubeconfig: string;
  /** The RBAC objects as applied. */
  readonly yaml: string;
}

/**
 * Generates RBAC for `kind` (chart: the sample webapp) bound to a fresh ServiceAccount in
 * `operatorNs`, applies it (after `edit`, if given) and returns a kubeconfig acting as that
 * ServiceAccount, on the same server with the same CA as the test cluster's.
 */
async function grantGeneratedRbac(
  t: TestContext,
  cluster: TestCluster,
  kind: TestKind,
  operatorNs: string,
  roleNamespaces: readonly string[],
  edit: (docs: Record<string, unknown>[]) => void = () => undefined,
  tenants: { readonly defaultServiceAccount?: string; readonly tenantNamespaces?: readonly string[] } = {},
): Promise<Grant> {
  const dir = mkdtempSync(join(tmpdir(), 'chartpilot-rbac-'));
  const watchesFile = writeWatches(dir, [{ kind, chart: SAMPLE_CHART }]);
  const name = `rbac-${randomBytes(4).toString('hex')}`;
  const resolver = await clusterResolver(false, cluster.kubeconfig, (line) => { t.diagnostic(line); });
  const out = await renderRbac(
    { watchesFile, name, namespace: operatorNs, serviceAccount: 'operator', roleNamespaces, sampleFiles: [], resolver, ...tenants },
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

/** What `kubectl auth can-i <verb> <resource> -n <ns>` answers for the grant's ServiceAccount in saNs. */
async function operatorCan(cluster: TestCluster, saNs: string, verb: string, resource: string, ns: string): Promise<string> {
  const r = await cluster.kubectl(['auth', 'can-i', verb, resource, '-n', ns, '--as', `system:serviceaccount:${saNs}:operator`], { allowFail: true });
  return r.stdout.trim();
}

/** Runs the operator as the grant's identity on the watches.yaml it was generated for. */
function startAs(s: Setup, grant: Grant, opts: { noWait?: boolean; args?: readonly string[] } = {}): Promise<RunningOperator> {
  return s.start({ dir: grant.dir, env: { KUBECONFIG: grant.kubeconfig }, ...opts });
}

/** install → upgrade → delete, as the restricted identity. */
async function lifecycle(s: Setup, op: RunningOperator): Promise<void> {
  const { cluster, ns } = s;
  const cr = crsOf(cluster, s.kind, ns, op);
  await cr.apply('shop', { replicaCount: 1, message: 'v1' });
  const installed = await cr.deployed('shop');
  assert.equal(condition(installed, 'Deployed')?.reason, 'InstallSuccessful');

  await cr.apply('shop', { replicaCount: 2, message: 'v2' });
  const upgraded = await cr.until('shop', 'revision 2', (c) => c.status?.deployedRelease?.revision === 2);
  assert.equal(condition(upgraded, 'Deployed')?.reason, 'UpgradeSuccessful');
  const replicas = await cluster.kubectl(['get', 'deployment', 'shop', '-n', ns, '-o', 'jsonpath={.spec.replicas}']);
  assert.equal(replicas.stdout, '2');

  await cr.delete('shop');
  await cr.gone('shop');
  assert.deepEqual(await helmList(cluster, ns), []);
  const leftovers = await cluster.kubectl(['get', 'deployment,service,configmap', '-n', ns, '-l', 'app.kubernetes.io/instance=shop', '-o', 'name']);
  assert.equal(leftovers.stdout.trim(), '');
  // Nothing was refused along the way (a 403 on a dependent watch would only be logged).
  assert.doesNotMatch(op.logs(), /forbidden|cannot list/i);
}

describe('generated RBAC', () => {
  it('a ClusterRole holding only the generated rules runs install, upgrade and delete', async (t) => {
    const s = await setUp(t, { kind: 'Rbac', chart: SAMPLE_CHART });
    const { cluster, ns } = s;
    const grant = await grantGeneratedRbac(t, cluster, s.kind, ns, []);
    assert.match(grant.yaml, /kind: ClusterRole\n/);
    // The identity really is restricted: it cannot, say, read pods.
    assert.equal(await operatorCan(cluster, ns, 'list', 'pods', ns), 'no');
    await lifecycle(s, await startAs(s, grant));
  });

  it('Roles in the watched namespace (--role-namespace, WATCH_NAMESPACE) are enough too', async (t) => {
    const s = await setUp(t, { kind: 'RbacRole', chart: SAMPLE_CHART });
    const { cluster, ns } = s;
    const operatorNs = await newNamespace(t, 'rbac-op');
    const grant = await grantGeneratedRbac(t, cluster, s.kind, operatorNs, [ns]);
    assert.doesNotMatch(grant.yaml, /kind: ClusterRole\n/, 'no cluster-wide grant at all');
    assert.equal(await operatorCan(cluster, operatorNs, 'create', 'deployments', operatorNs), 'no');
    await lifecycle(s, await startAs(s, grant));
  });

  it('with --default-service-account the operator itself writes no release object: the tenant Role generated for the namespace does', async (t) => {
    const s = await setUp(t, { kind: 'RbacTenant', chart: SAMPLE_CHART });
    const { cluster, ns } = s;
    const operatorNs = await newNamespace(t, 'rbac-op');
    const grant = await grantGeneratedRbac(t, cluster, s.kind, operatorNs, [], undefined, { defaultServiceAccount: 'tenant', tenantNamespaces: [ns] });
    assert.match(grant.yaml, new RegExp(`kind: ServiceAccount\nmetadata:\n  name: tenant\n  namespace: ${ns}\n`));
    // The operator may not write Helm's records or the chart's objects, only impersonate the tenant.
    for (const [verb, resource] of [['create', 'secrets'], ['delete', 'secrets'], ['create', 'deployments'], ['patch', 'configmaps']] as const) {
      assert.equal(await operatorCan(cluster, operatorNs, verb, resource, ns), 'no', `${verb} ${resource}`);
    }
    assert.equal(await operatorCan(cluster, operatorNs, 'impersonate', 'serviceaccounts/tenant', ns), 'yes');
    assert.equal(await operatorCan(cluster, operatorNs, 'impersonate', 'serviceaccounts/default', ns), 'no', 'exactly the named ServiceAccount');
    await lifecycle(s, await startAs(s, grant, { args: ['--default-service-account', 'tenant'] }));
  });

  it('without patch on the status subresource the operator exits 3 at start, naming the permission', async (t) => {
    const s = await setUp(t, { kind: 'RbacMissing', chart: SAMPLE_CHART });
    const { ns, kind } = s;
    const grant = await grantGeneratedRbac(t, s.cluster, kind, ns, [ns], (docs) => {
      for (const doc of docs) {
        if (doc['kind'] !== 'Role') continue;
        // patch is the status rule's only verb: without it the rule goes (a rule needs a verb).
        const rules = (doc['rules'] ?? []) as { resources?: string[]; verbs: string[] }[];
        doc['rules'] = rules
          .map((rule) => (rule.resources?.some((r) => r.endsWith('/status')) === true ? { ...rule, verbs: rule.verbs.filter((v) => v !== 'patch') } : rule))
          .filter((rule) => rule.verbs.length > 0);
      }
    });
    const op = await startAs(s, grant, { noWait: true });
    assert.equal(await op.exitCode(30_000), 3, op.logs());
    assert.match(op.logs(), new RegExp(`missing permissions it needs: patch ${kind.plural}/status\\.${kind.group.replace(/\./g, '\\.')} in namespace ${ns}\\.`));
    assert.match(op.logs(), /chartpilot generate rbac/);
  });
});
