/**
 * The generated RBAC is enough, and no more is needed: the real operator runs as a ServiceAccount
 * holding only what `chartpilot generate rbac` wrote, through install → upgrade → delete. And with
 * one verb taken away, the operator refuses to start and names what is missing.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { metricsYaml } from '../../src/generate/metrics.js';
import { condition, crsOf, helmList } from './crs.js';
import { fixtureChart, SAMPLE_CHART } from './fixtures.js';
import { newNamespace, type TestCluster } from './harness.js';
import type { RunningOperator } from './operator.js';
import { grantGeneratedRbac, type Grant } from './rbac-grant.js';
import { setUp, type Setup } from './scenario.js';
import { waitFor } from './wait.js';

/**
 * Applies what `generate deploy` adds for the Deployment's --metrics-require-rbac (deploy/'s
 * operator-metrics.yaml: the metrics-auth ClusterRole bound to the grant's ServiceAccount, the
 * reader role, the Service); grantGeneratedRbac's cleanup removes its cluster-scoped objects by
 * the same label.
 */
async function grantMetricsAuth(cluster: TestCluster, grant: Grant, operatorNs: string): Promise<void> {
  await cluster.kubectl(['apply', '-f', '-'], { input: metricsYaml({ name: grant.name, namespace: operatorNs, serviceAccount: 'operator' }) });
}

/** What `kubectl auth can-i <verb> <resource> -n <ns>` answers for the grant's ServiceAccount in saNs. */
async function operatorCan(cluster: TestCluster, saNs: string, verb: string, resource: string, ns: string): Promise<string> {
  const r = await cluster.kubectl(['auth', 'can-i', verb, resource, '-n', ns, '--as', `system:serviceaccount:${saNs}:operator`], { allowFail: true });
  return r.stdout.trim();
}

/** Runs the operator as the grant's identity on the watches.yaml it was generated for. */
function startAs(s: Setup, grant: Grant, opts: { noWait?: boolean; args?: readonly string[] } = {}): Promise<RunningOperator> {
  // In a pod the namespace comes from the ServiceAccount mount; POD_NAMESPACE stands in for it here.
  return s.start({ dir: grant.dir, env: { KUBECONFIG: grant.kubeconfig, POD_NAMESPACE: grant.namespace }, ...opts });
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
    // With deploy/'s operator-metrics.yaml too, as the Deployment runs --metrics-require-rbac: the
    // reviews it makes of every scrape, and checks at start that it may make, are granted.
    assert.equal(await operatorCan(cluster, ns, 'create', 'tokenreviews.authentication.k8s.io', ns), 'no');
    await grantMetricsAuth(cluster, grant, ns);
    await waitFor('the metrics-auth binding takes effect', async () => (await operatorCan(cluster, ns, 'create', 'tokenreviews.authentication.k8s.io', ns)) === 'yes');
    assert.equal(await operatorCan(cluster, ns, 'create', 'subjectaccessreviews.authorization.k8s.io', ns), 'yes');
    // The identity really is restricted: it cannot, say, read pods.
    assert.equal(await operatorCan(cluster, ns, 'list', 'pods', ns), 'no');
    // With the generated Deployment's metrics flags: its start-up check of the two reviews passes.
    await lifecycle(s, await startAs(s, grant, { args: ['--metrics-secure', '--metrics-require-rbac', '--metrics-bind-address=127.0.0.1:0'] }));
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

  it('valuesFrom and dependsOn work with the generated Roles alone: references read and watched, the platform one in the operator namespace', async (t) => {
    const entry = {
      valuesFrom: { specField: 'valuesFrom', references: [{ kind: 'ConfigMap', name: 'platform-defaults' }] },
      dependsOn: { specField: 'dependsOn' },
    };
    // The entry as the operator runs it (startAs writes the scenario's watches.yaml) and as RBAC is generated for it.
    const s = await setUp(t, { kind: 'RbacCompose', chart: fixtureChart('referenced'), extra: entry });
    const { cluster, ns } = s;
    const operatorNs = await newNamespace(t, 'rbac-op');
    const grant = await grantGeneratedRbac(t, cluster, s.kind, operatorNs, [ns], undefined, {}, fixtureChart('referenced'), entry);
    assert.doesNotMatch(grant.yaml, /kind: ClusterRole\n/);
    assert.equal(await operatorCan(cluster, operatorNs, 'get', 'configmaps/platform-defaults', operatorNs), 'yes');
    assert.equal(await operatorCan(cluster, operatorNs, 'get', 'configmaps/other', operatorNs), 'no', 'exactly the named objects in the operator namespace');
    await cluster.kubectl(['create', 'configmap', 'platform-defaults', '-n', operatorNs, '--from-literal=values.yaml=platform: {region: rbac-land}\n']);
    await cluster.kubectl(['create', 'secret', 'generic', 'shop-db', '-n', ns, '--from-literal=password=rbac-Pa55word']);
    const op = await startAs(s, grant);
    const cr = crsOf(cluster, s.kind, ns, op);
    await cr.apply('shop', { dependsOn: [{ kind: s.kind.kind, name: 'db' }], valuesFrom: [{ kind: 'Secret', name: 'shop-db', valuesKey: 'password', targetPath: 'db.password' }] });
    await cr.until('shop', 'DependencyNotReady', (x) => condition(x, 'Ready')?.reason === 'DependencyNotReady');
    await cr.apply('db', {});
    await cr.deployed('shop');
    const secret = await cluster.kubectl(['get', 'secret', 'shop-credentials', '-n', ns, '-o', 'jsonpath={.data.password}']);
    assert.equal(Buffer.from(secret.stdout, 'base64').toString('utf8'), 'rbac-Pa55word');
    const settings = await cluster.kubectl(['get', 'configmap', 'shop-settings', '-n', ns, '-o', 'jsonpath={.data.region}']);
    assert.equal(settings.stdout, 'rbac-land');
    // The watch of the referenced Secret works with these rights: a rotation upgrades.
    await cluster.kubectl(['patch', 'secret', 'shop-db', '-n', ns, '--type=merge', '-p', JSON.stringify({ stringData: { password: 'rotated-Pa55word' } })]);
    await cr.until('shop', 'revision 2', (c) => c.status?.deployedRelease?.revision === 2, 30_000);
    assert.doesNotMatch(op.logs(), /forbidden|cannot list/i);
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

  it('without the seal key Role the operator exits 3 at start, naming the Secret, its namespace and the rule to add', async (t) => {
    const s = await setUp(t, { kind: 'RbacSealKey', chart: SAMPLE_CHART });
    const { ns, kind } = s;
    // The operator in a namespace of its own, where only the seal key Role would grant Secrets.
    const operatorNs = await newNamespace(t, 'rbac-operator');
    const grant = await grantGeneratedRbac(t, s.cluster, kind, operatorNs, [ns], (docs) => {
      docs.splice(0, docs.length, ...docs.filter((d) => !String((d['metadata'] as { name?: string } | undefined)?.name).endsWith('-seal-key')));
    });
    const op = await startAs(s, grant, { noWait: true });
    assert.equal(await op.exitCode(30_000), 3, op.logs());
    assert.match(op.logs(), new RegExp(`error: the operator may not get Secret ${operatorNs}/chartpilot-seal-key .*grant it get and create on secrets in namespace ${operatorNs}`));
  });
});
