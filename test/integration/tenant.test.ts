/**
 * Tenants stay in their namespace: with --default-service-account, every helm action for a CR
 * (lookups and release storage included) and every repair runs as the ServiceAccount of the CR's
 * namespace, against the real control plane and the real helm. The tenant here is a ServiceAccount
 * `tenant` bound to the built-in `admin` ClusterRole by a RoleBinding in its own namespace.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it, type TestContext } from 'node:test';
import { condition, crsOf, eventsFor, helmList, type Cr } from './crs.js';
import { SAMPLE_CHART, fixtureChart } from './fixtures.js';
import type { TestCluster } from './harness.js';
import { logLines } from './operator-log.js';
import { operatorScenario, setUp } from './scenario.js';
import { waitFor } from './wait.js';

const AS_TENANT = ['--default-service-account', 'tenant'];

/** The ServiceAccount `tenant` in `ns`, an admin of that namespace only. */
async function makeTenant(cluster: TestCluster, ns: string): Promise<string> {
  await cluster.kubectl(['create', 'serviceaccount', 'tenant', '-n', ns]);
  await cluster.kubectl(['create', 'rolebinding', 'tenant-admin', '-n', ns, '--clusterrole=admin', `--serviceaccount=${ns}:tenant`]);
  return `system:serviceaccount:${ns}:tenant`;
}

/**
 * The API server's own record of who writes: a ValidatingAdmissionPolicy that refuses, in `ns`,
 * any write of Helm's release Secrets (label `owner`) and any create or update of a ConfigMap
 * chartpilot deployed (label `chartpilot.io/owner-uid`) by anyone but the tenant. (managedFields
 * cannot tell: they name the client — `helm` — not the user.) Resolves once the policy is in force.
 */
async function onlyTenantWrites(t: TestContext, cluster: TestCluster, ns: string): Promise<void> {
  const name = `only-tenant-${randomBytes(4).toString('hex')}`;
  const label = (kind: string): string => `(request.operation == 'DELETE' ? oldObject : object).metadata.?labels.orValue({}).exists(k, k == '${kind}')`;
  const policy = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: {
        resourceRules: [
          { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE', 'DELETE'], resources: ['secrets'] },
          { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['configmaps'] },
        ],
      },
      matchConditions: [{ name: 'helm-record-or-chartpilot-object', expression: `${label('owner')} || ${label('chartpilot.io/owner-uid')}` }],
      validations: [
        {
          expression: `request.userInfo.username == 'system:serviceaccount:${ns}:tenant'`,
          messageExpression: "'written by ' + request.userInfo.username + ', not by the tenant'",
        },
      ],
    },
  };
  const binding = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name },
    spec: { policyName: name, validationActions: ['Deny'], matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } } } },
  };
  t.after(async () => {
    await cluster.kubectl(['delete', 'validatingadmissionpolicybinding,validatingadmissionpolicy', name, '--ignore-not-found'], { allowFail: true });
  });
  await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [policy, binding] }) });
  const probe = JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'probe', namespace: ns, labels: { 'chartpilot.io/owner-uid': 'probe' } } });
  await waitFor('the policy refuses a write by anyone but the tenant', async () => {
    const r = await cluster.kubectl(['create', '--dry-run=server', '-f', '-'], { input: probe, allowFail: true });
    return r.exitCode !== 0 && r.stderr.includes('not by the tenant');
  });
}

async function configMapData(cluster: TestCluster, ns: string, name: string): Promise<Record<string, string> | undefined> {
  const r = await cluster.kubectl(['get', 'configmap', name, '-n', ns, '-o', 'json'], { allowFail: true });
  return r.exitCode === 0 ? (JSON.parse(r.stdout) as { data?: Record<string, string> }).data ?? {} : undefined;
}

const released = (revision: number) => (c: Cr): boolean => c.status?.deployedRelease?.revision === revision && condition(c, 'Deployed')?.status === 'True';

describe('tenants', () => {
  it('a lookup in a value reads as the tenant: another namespace’s Secret never reaches the ConfigMap, its own namespace’s does', async (t) => {
    const password = `pw-${randomBytes(8).toString('hex')}`;
    const secret = `chartpilot-test-${randomBytes(4).toString('hex')}`;
    const s = await setUp(t, { kind: 'TenantLookup', chart: fixtureChart('tenant-note') });
    const { cluster, ns } = s;
    t.after(async () => {
      await cluster.kubectl(['delete', 'secret', secret, '-n', 'kube-system', '--ignore-not-found'], { allowFail: true });
    });
    await cluster.kubectl(['create', 'secret', 'generic', secret, '-n', 'kube-system', `--from-literal=password=${password}`]);
    await cluster.kubectl(['create', 'secret', 'generic', 'own', '-n', ns, '--from-literal=password=own-namespace-value']);
    const tenant = await makeTenant(cluster, ns);
    const lookup = (namespace: string, name: string): string => `{{ (lookup "v1" "Secret" "${namespace}" "${name}").data.password | b64dec }}`;

    const op = await s.start({ args: AS_TENANT });
    const cr = crsOf(cluster, s.kind, ns, op);
    await cr.apply('leak', { note: lookup('kube-system', secret) });
    await cr.apply('own', { note: lookup(ns, 'own') });

    // What helm really does: the lookup is refused, so the template fails and nothing is installed.
    const failed = await cr.until('leak', 'ReleaseFailed', (c) => condition(c, 'ReleaseFailed')?.status === 'True');
    const message = condition(failed, 'ReleaseFailed')?.message ?? '';
    assert.equal(condition(failed, 'ReleaseFailed')?.reason, 'InstallError');
    assert.match(message, new RegExp(`^helm install failed: ${tenant} may not get secrets "${secret}" in namespace kube-system \\(a lookup in the chart's templates\\); this release runs as ServiceAccount ${ns}/tenant`));
    assert.equal(await configMapData(cluster, ns, 'leak-note'), undefined, 'no ConfigMap at all');
    assert.deepEqual(await helmList(cluster, ns).then((l) => l.filter((r) => r.name === 'leak')), [], 'no release recorded');
    const events = await eventsFor(cluster, ns, 'leak');
    assert.ok(events.some((e) => e.reason === 'InstallError' && e.message === message), 'the same words in an event');
    assert.doesNotMatch(message, /b64dec|lookup "v1"/, "the message does not quote the CR's value");

    await cr.deployed('own');
    assert.deepEqual(await configMapData(cluster, ns, 'own-note'), { note: 'own-namespace-value' }, 'its own namespace is the tenant’s to read');
    assert.ok(!op.logs().includes(password), 'the password is nowhere in the log');
    assert.ok(!logLines(op).some((l) => l.msg === 'a CR author can read what the operator can read; set serviceAccount'), 'no warning once confined');

    // The hole this closes: the same CR under an operator that runs helm as itself.
    const open = await setUp(t, { kind: 'TenantLookupOpen', chart: fixtureChart('tenant-note') });
    const opOpen = await open.start();
    const crOpen = crsOf(open.cluster, open.kind, open.ns, opOpen);
    await crOpen.apply('leak', { note: lookup('kube-system', secret) });
    await crOpen.deployed('leak');
    assert.deepEqual(await configMapData(cluster, open.ns, 'leak-note'), { note: password }, 'without serviceAccount, the tenant reads kube-system');
    const warning = logLines(opOpen).find((l) => l.msg === 'a CR author can read what the operator can read; set serviceAccount');
    assert.deepEqual(warning?.['tpl'], ['templates/configmap.yaml'], 'and start-up warned about this chart');
  });

  it('installs, upgrades, repairs and uninstalls the sample with every write made by the tenant', async (t) => {
    const s = await setUp(t, { kind: 'TenantLife', chart: SAMPLE_CHART });
    const { cluster, ns } = s;
    const tenant = await makeTenant(cluster, ns);
    await onlyTenantWrites(t, cluster, ns);
    const op = await s.start({ args: AS_TENANT });
    const cr = crsOf(cluster, s.kind, ns, op);

    await cr.apply('shop', { replicaCount: 1, message: 'v1' });
    await cr.until('shop', 'revision 1 deployed', released(1));
    await cr.apply('shop', { replicaCount: 2, message: 'v2' });
    await cr.until('shop', 'revision 2 deployed', released(2));
    assert.deepEqual(await configMapData(cluster, ns, 'shop-content'), { 'index.html': 'v2' });

    // Recreated by the tenant (the policy refuses anyone else), with no new revision.
    await cluster.kubectl(['delete', 'configmap', 'shop-content', '-n', ns, '--wait=true']);
    await waitFor('shop-content recreated', () => configMapData(cluster, ns, 'shop-content'), { timeoutMs: 30_000 });
    await cluster.kubectl(['scale', 'deployment', 'shop', '-n', ns, '--replicas=5']);
    await waitFor('replicas set back to 2', async () => (await cluster.kubectl(['get', 'deployment', 'shop', '-n', ns, '-o', 'jsonpath={.spec.replicas}'])).stdout === '2', {
      timeoutMs: 30_000,
    });
    assert.ok((await eventsFor(cluster, ns, 'shop')).some((e) => e.reason === 'DriftRepaired'));
    assert.equal(String((await helmList(cluster, ns))[0]?.revision), '2', 'repairs make no revision');

    await cr.delete('shop');
    await cr.gone('shop');
    assert.deepEqual(await helmList(cluster, ns), []);
    const records = await cluster.kubectl(['get', 'secrets', '-n', ns, '-l', 'owner=helm', '-o', 'name']);
    assert.equal(records.stdout.trim(), '', 'the tenant removed Helm’s records too');

    // Every helm call that reaches the cluster ran as the tenant: helm talks only to the API
    // proxy, which makes each request as the tenant (the policy above refuses any other writer
    // in this namespace), so helm itself is given no identity flag. (The call log has one line
    // per call, plus the continuation lines of `get all`'s multi-line --template.)
    const calls = op.helmCalls().filter((c) => /^(upgrade|uninstall|rollback|get|history|status) /u.test(c));
    assert.ok(calls.filter((c) => c.startsWith('upgrade ')).length >= 2 && calls.some((c) => c.startsWith('uninstall ')), calls.join('\n'));
    for (const call of calls) assert.ok(!call.includes('--kube-as-user'), call);
    assert.ok(tenant.startsWith('system:serviceaccount:'));
    assert.doesNotMatch(op.logs(), /not by the tenant/, 'the policy never had to refuse the operator');
  });

  it('a chart rendering a ClusterRoleBinding fails naming who may not do what, and the deployed release stays', async (t) => {
    const { cluster, ns, op, cr } = await operatorScenario(t, {
      kind: 'TenantEscalate',
      chart: fixtureChart('extra-objects'),
      // The operator would be allowed to create it: only the tenant's identity stands in the way.
      extra: { allowClusterScoped: true },
      operator: { args: AS_TENANT },
    });
    const tenant = await makeTenant(cluster, ns);
    const binding = `escalate-${randomBytes(4).toString('hex')}`;
    t.after(async () => {
      await cluster.kubectl(['delete', 'clusterrolebinding', binding, '--ignore-not-found'], { allowFail: true });
    });

    await cr.apply('app', {});
    await cr.until('app', 'revision 1 deployed', released(1));
    await cr.apply('app', {
      extraObjects: [
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'ClusterRoleBinding',
          metadata: { name: binding },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
          subjects: [{ kind: 'ServiceAccount', name: 'tenant', namespace: ns }],
        },
      ],
    });
    await cr.apply('other', {});

    const failed = await cr.until('app', 'ReleaseFailed', (c) => condition(c, 'ReleaseFailed')?.status === 'True');
    const message = condition(failed, 'ReleaseFailed')?.message ?? '';
    assert.equal(condition(failed, 'ReleaseFailed')?.reason, 'UpgradeError');
    assert.match(
      message,
      // The binding's name came from the spec, so it is left out (values never reach messages).
      new RegExp(`^helm upgrade failed: ${tenant} may not get clusterrolebindings\\.rbac\\.authorization\\.k8s\\.io at the cluster scope; this release runs as ServiceAccount ${ns}/tenant: grant it what the chart needs`),
    );
    assert.ok((await eventsFor(cluster, ns, 'app')).some((e) => e.reason === 'UpgradeError' && e.message === message));
    assert.equal((await cluster.kubectl(['get', 'clusterrolebinding', binding], { allowFail: true })).exitCode, 1, 'nothing was bound');
    assert.equal(condition(failed, 'Deployed')?.status, 'True', 'the deployed release stays');
    assert.equal(failed.status?.deployedRelease?.revision, 1);
    assert.ok(await configMapData(cluster, ns, 'app-base'));
    await cr.deployed('other');

    // Retried (with backoff): the install, the failed upgrade, and another try.
    await waitFor('a retry', () => Promise.resolve(op.helmCalls().filter((c) => c.startsWith('upgrade') && c.includes(' app ')).length >= 3), { timeoutMs: 30_000 });
  });

  it('deleting the ServiceAccount mid-life says so and touches nothing; restoring it recovers; a CR deleted without it goes', async (t) => {
    const { cluster, ns, op, cr } = await operatorScenario(t, {
      kind: 'TenantGone',
      chart: SAMPLE_CHART,
      // No periodic re-check: only the ServiceAccount watch can notice.
      extra: { reconcilePeriod: '0' },
      operator: { args: AS_TENANT },
    });
    await makeTenant(cluster, ns);
    await cr.apply('web', { message: 'hi' });
    await cr.until('web', 'revision 1 deployed', released(1));
    const helmCallsBefore = op.helmCalls().length;

    await cluster.kubectl(['delete', 'serviceaccount', 'tenant', '-n', ns]);
    const missing = await cr.until('web', 'Irreconcilable: ServiceAccountNotFound', (c) => condition(c, 'Irreconcilable')?.reason === 'ServiceAccountNotFound');
    assert.match(
      condition(missing, 'Irreconcilable')?.message ?? '',
      new RegExp(`^ServiceAccount ${ns}/tenant does not exist: chartpilot runs every Helm action for this resource as system:serviceaccount:${ns}:tenant`),
    );
    assert.equal(condition(missing, 'Deployed')?.status, 'True', 'the deployed release stays as it was');
    assert.ok((await eventsFor(cluster, ns, 'web')).some((e) => e.reason === 'ServiceAccountNotFound'));
    assert.equal(op.helmCalls().length, helmCallsBefore, 'no helm process without the identity');

    await cluster.kubectl(['create', 'serviceaccount', 'tenant', '-n', ns]);
    const back = await cr.until('web', 'recovered', (c) => condition(c, 'Irreconcilable') === undefined);
    assert.equal(back.status?.deployedRelease?.revision, 1, 'nothing to upgrade');

    // A CR deleted while its ServiceAccount is gone (as when the namespace is being deleted) is
    // let go without helm; its objects follow it through their ownerReferences.
    await cluster.kubectl(['delete', 'serviceaccount', 'tenant', '-n', ns]);
    await cr.until('web', 'Irreconcilable again', (c) => condition(c, 'Irreconcilable')?.reason === 'ServiceAccountNotFound');
    await cr.delete('web');
    await cr.gone('web');
    assert.ok((await eventsFor(cluster, ns, 'web')).some((e) => e.reason === 'UninstallSkipped'));
    await waitFor('the Deployment garbage-collected', async () => (await cluster.kubectl(['get', 'deployment', 'web', '-n', ns], { allowFail: true })).exitCode !== 0);
  });
});
