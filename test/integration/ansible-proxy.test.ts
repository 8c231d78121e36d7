/**
 * The Ansible runs' API proxy against the real control plane, used the way a run uses it: kubectl
 * (and plain HTTP) with nothing but the run's kubeconfig. Ownership stamps, confinement refusals,
 * watches streaming, dead tokens, impersonation as a tenant ServiceAccount, server-side apply.
 * The "custom resource" owning a run's objects is a ConfigMap: the proxy treats any kind alike
 * (ansible-operator's own sample reconciles a built-in kind), and the garbage collector needs a
 * real owner.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import { execa } from 'execa';
import { pino } from 'pino';
import { Agent, fetch, type Response } from 'undici';
import { parse } from 'yaml';
import { Registry } from 'prom-client';
import { startUserMetricsServer } from '../../src/engines/ansible/user-metrics.js';
import { createApiProxy, type SessionAccess, type SessionContext, type ApiProxy } from '../../src/apiproxy/index.js';
import { createKubeClient, loadKubeConfig, type KubeClient } from '../../src/kube/rest.js';
import type { KubeObject } from '../../src/kube/types.js';
import { OWNER_UID_LABEL, PRIMARY_RESOURCE_ANNOTATION, PRIMARY_RESOURCE_TYPE_ANNOTATION } from '../../src/engines/helm/names.js';
import { runAnsible, taskResult } from './ansible-run.js';
import { getJson, newNamespace, testCluster, type TestCluster } from './harness.js';
import { waitFor } from './wait.js';

const log = pino({ level: process.env.CHARTPILOT_TEST_LOG ?? 'silent' });

let cluster: TestCluster;
let client: KubeClient;
let proxy: ApiProxy;
let port: number;
const dir = mkdtempSync(join(tmpdir(), 'chartpilot-proxy-test-'));

before(async () => {
  cluster = await testCluster();
  client = createKubeClient(loadKubeConfig({ files: [cluster.kubeconfig] }), { userAgent: 'chartpilot-proxy-test' });
  proxy = createApiProxy({ client, log, port: 0 });
  ({ port } = await proxy.start());
});

after(async () => {
  await proxy.stop();
  rmSync(dir, { recursive: true, force: true });
});

interface Owner {
  apiVersion: string;
  kind: string;
  name: string;
  namespace: string;
  uid: string;
}

/** A namespace and the object standing in for the CR (its uid is what ownerReferences name). */
async function ownerIn(t: TestContext, prefix: string): Promise<Owner> {
  const ns = await newNamespace(t, prefix);
  await cluster.kubectl(['create', 'configmap', 'the-cr', '-n', ns]);
  const cm = await getJson<KubeObject>(cluster, ['get', 'configmap', 'the-cr', '-n', ns]);
  return { apiVersion: 'v1', kind: 'ConfigMap', name: 'the-cr', namespace: ns, uid: cm.metadata.uid ?? '' };
}

function openSession(t: TestContext, owner: Owner, extra: Partial<SessionContext> = {}): { run: SessionAccess; kubeconfig: string } {
  const run = proxy.openSession({
    owner,
    confinement: { namespace: owner.namespace, allowClusterScoped: false, allowCrossNamespace: false },
    injectOwnerRef: true,
    log,
    ...extra,
  });
  t.after(() => {
    run.close();
  });
  const kubeconfig = join(dir, `${owner.namespace}-${Math.random().toString(36).slice(2)}.kubeconfig`);
  writeFileSync(kubeconfig, run.kubeconfig, { mode: 0o600 });
  return { run, kubeconfig };
}

/** kubectl as the run: only the run's kubeconfig, nothing of the test's environment's credentials. */
function runKubectl(kubeconfig: string, args: string[], input?: string): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  return execa(cluster.kubectlBin, ['--kubeconfig', kubeconfig, ...args], { reject: false, timeout: 60_000, env: { KUBECONFIG: '' }, ...(input === undefined ? {} : { input }) }).then((r) => ({
    exitCode: r.exitCode ?? -1,
    stdout: r.stdout,
    stderr: r.stderr,
  }));
}

/** The HTTPS pool trusting what the run's kubeconfig trusts (the proxy's own certificate), and nothing else. */
function trusting(run: SessionAccess): Agent {
  const kc = parse(run.kubeconfig) as { clusters: { cluster: { 'certificate-authority-data': string } }[] };
  const ca = Buffer.from(kc.clusters[0]?.cluster['certificate-authority-data'] ?? '', 'base64').toString('utf8');
  return new Agent({ connect: { ca } });
}

/** A plain HTTPS request with the run's token, as the python kubernetes client makes them. */
function call(run: SessionAccess, method: string, path: string, body?: string, headers: Record<string, string> = {}, withToken = true): Promise<Response> {
  return fetch(`https://127.0.0.1:${port}${path}`, {
    method,
    headers: { ...(withToken ? { authorization: `Bearer ${run.token}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    dispatcher: trusting(run),
    ...(body === undefined ? {} : { body }),
  });
}

describe('Ansible API proxy', { concurrency: true }, () => {
  it('a ConfigMap created in the CR namespace gets the ownerReference and owner label, and is recorded', async (t) => {
    const owner = await ownerIn(t, 'proxy-own');
    const { run, kubeconfig } = openSession(t, owner);
    const created = await runKubectl(kubeconfig, ['create', 'configmap', 'child', '-n', owner.namespace, '--from-literal=a=b']);
    assert.equal(created.exitCode, 0, created.stderr);
    const child = await getJson<KubeObject>(cluster, ['get', 'configmap', 'child', '-n', owner.namespace]);
    assert.deepEqual(child.metadata.ownerReferences, [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'the-cr', uid: owner.uid, controller: true, blockOwnerDeletion: true }]);
    assert.equal(child.metadata.labels?.[OWNER_UID_LABEL], owner.uid);
    assert.deepEqual(run.objects(), [{ apiVersion: 'v1', kind: 'ConfigMap', resource: 'configmaps', namespace: owner.namespace, name: 'child', uid: child.metadata.uid, action: 'created' }]);

    // Deleting it through the proxy is recorded too.
    assert.equal((await runKubectl(kubeconfig, ['delete', 'configmap', 'child', '-n', owner.namespace])).exitCode, 0);
    assert.equal(run.objects()[0]?.action, 'deleted');
  });

  it('refuses an object in kube-system naming the rule and the setting, and creates nothing', async (t) => {
    const owner = await ownerIn(t, 'proxy-xns');
    const { run, kubeconfig } = openSession(t, owner);
    const name = `escape-${owner.namespace}`;
    const manifest = JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'kube-system' } });
    const r = await runKubectl(kubeconfig, ['create', '-f', '-'], manifest);
    assert.notEqual(r.exitCode, 0);
    assert.match(r.stderr, new RegExp(`refused to create ConfigMap "${name}" in namespace kube-system: objects of this custom resource must stay in its namespace ${owner.namespace}; set allowCrossNamespace: true`));
    // kubectl's typed commands send protobuf, which the proxy does not read: the URL decides.
    const typed = await runKubectl(kubeconfig, ['create', 'configmap', name, '-n', 'kube-system']);
    assert.notEqual(typed.exitCode, 0);
    assert.match(typed.stderr, new RegExp(`refused to create ConfigMap "${name}" in namespace kube-system: .*set allowCrossNamespace: true`));
    assert.equal((await cluster.kubectl(['get', 'configmap', name, '-n', 'kube-system'], { allowFail: true })).exitCode, 1, 'nothing was created');
    assert.deepEqual(run.objects(), []);

    // The body may not point elsewhere than the URL either.
    const res = await call(run, 'POST', `/api/v1/namespaces/${owner.namespace}/configmaps`, JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'kube-system' } }));
    assert.equal(res.status, 403);
    const status = (await res.json()) as { kind: string; message: string; reason: string };
    assert.equal(status.kind, 'Status');
    assert.equal(status.reason, 'Forbidden');
    assert.match(status.message, /metadata\.namespace "kube-system" differs from the namespace/);

    // A resource the server does not serve is refused: where it would land is unknown.
    const unknown = await call(run, 'POST', `/apis/nothing.example.com/v1/namespaces/${owner.namespace}/gizmos`, '{"metadata":{"name":"g"}}');
    assert.equal(unknown.status, 403);
    assert.match(((await unknown.json()) as { message: string }).message, /does not serve this resource/);
  });

  it('refuses a ClusterRoleBinding unless the entry allows cluster-scoped objects, which then get the primary-resource annotations', async (t) => {
    const owner = await ownerIn(t, 'proxy-crb');
    const name = `proxy-test-${owner.namespace}`;
    t.after(async () => {
      await cluster.kubectl(['delete', 'clusterrolebinding', name, '--ignore-not-found'], { allowFail: true });
    });
    const args = ['create', 'clusterrolebinding', name, '--clusterrole=view', `--serviceaccount=${owner.namespace}:default`];
    const confined = openSession(t, owner);
    const refused = await runKubectl(confined.kubeconfig, args);
    assert.notEqual(refused.exitCode, 0);
    assert.match(refused.stderr, new RegExp(`refused to create ClusterRoleBinding "${name}" \\(rbac.authorization.k8s.io/v1\\): it is cluster-scoped.*set allowClusterScoped: true on the watches entry`));
    assert.equal((await cluster.kubectl(['get', 'clusterrolebinding', name], { allowFail: true })).exitCode, 1);

    const allowed = openSession(t, owner, { confinement: { namespace: owner.namespace, allowClusterScoped: true, allowCrossNamespace: false } });
    const ok = await runKubectl(allowed.kubeconfig, args);
    assert.equal(ok.exitCode, 0, ok.stderr);
    const crb = await getJson<KubeObject>(cluster, ['get', 'clusterrolebinding', name]);
    assert.equal(crb.metadata.ownerReferences, undefined, 'a namespaced owner cannot own a cluster-scoped object');
    const annotations = crb.metadata.annotations ?? {};
    assert.equal(annotations[PRIMARY_RESOURCE_ANNOTATION], `${owner.namespace}/the-cr`);
    assert.equal(annotations[PRIMARY_RESOURCE_TYPE_ANNOTATION], 'ConfigMap.');
    assert.deepEqual(allowed.run.objects().map((o) => [o.kind, o.name, o.namespace, o.action]), [['ClusterRoleBinding', name, undefined, 'created']]);
  });

  it('streams a watch, passes discovery through, and a closed run is cut off and refused', async (t) => {
    const owner = await ownerIn(t, 'proxy-watch');
    const { run, kubeconfig } = openSession(t, owner);
    let exited = false;
    const watch = execa(cluster.kubectlBin, ['--kubeconfig', kubeconfig, 'get', 'configmaps', '-n', owner.namespace, '--watch', '-o', 'name'], { reject: false, env: { KUBECONFIG: '' } });
    t.after(() => watch.kill());
    void watch.finally(() => {
      exited = true;
    });
    let seen = '';
    watch.stdout.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
    });
    await waitFor('the watch lists the-cr', () => Promise.resolve(seen.includes('configmap/the-cr')), { timeoutMs: 30_000 });
    await cluster.kubectl(['create', 'configmap', 'later', '-n', owner.namespace]);
    await waitFor('the watch streams the ConfigMap created after it started', () => Promise.resolve(seen.includes('configmap/later')), { timeoutMs: 30_000 });

    const discovery = await runKubectl(kubeconfig, ['get', '--raw', '/apis/apps/v1']);
    assert.equal(discovery.exitCode, 0, discovery.stderr);
    assert.match(discovery.stdout, /"deployments"/);
    const openapi = await call(run, 'GET', '/openapi/v3');
    assert.equal(openapi.status, 200);

    run.close();
    await waitFor('the watch ends once its run is closed', () => Promise.resolve(exited), { timeoutMs: 30_000 });
    const refused = await call(run, 'GET', `/api/v1/namespaces/${owner.namespace}/configmaps`);
    assert.equal(refused.status, 401);
    const noToken = await call(run, 'GET', `/api/v1/namespaces/${owner.namespace}/configmaps`, undefined, {}, false);
    assert.equal(noToken.status, 401);
    const r = await runKubectl(kubeconfig, ['get', 'configmaps', '-n', owner.namespace]);
    assert.notEqual(r.exitCode, 0);
    assert.match(r.stderr, /Unauthorized|token is missing, unknown, or its (run|session) has ended/);
  });

  it('acts as the tenant ServiceAccount: a Secret in another namespace is forbidden by the API server, whatever the client claims to be', async (t) => {
    const owner = await ownerIn(t, 'proxy-tenant');
    const other = await newNamespace(t, 'proxy-other');
    await cluster.kubectl(['create', 'secret', 'generic', 'private', '-n', other, '--from-literal=password=hunter22']);
    await cluster.kubectl(['create', 'serviceaccount', 'tenant', '-n', owner.namespace]);
    await cluster.kubectl(['create', 'rolebinding', 'tenant-admin', '-n', owner.namespace, '--clusterrole=admin', `--serviceaccount=${owner.namespace}:tenant`]);
    const tenant = `system:serviceaccount:${owner.namespace}:tenant`;
    const { run, kubeconfig } = openSession(t, owner, { impersonate: tenant });

    const own = await runKubectl(kubeconfig, ['get', 'configmap', 'the-cr', '-n', owner.namespace]);
    assert.equal(own.exitCode, 0, own.stderr);
    const denied = await runKubectl(kubeconfig, ['get', 'secret', 'private', '-n', other]);
    assert.notEqual(denied.exitCode, 0);
    assert.match(denied.stderr, new RegExp(`User "${tenant}" cannot get resource "secrets" in API group "" in the namespace "${other}"`));

    // Impersonation and credentials sent by the client are dropped: the run stays the tenant.
    const claimed = await call(run, 'GET', `/api/v1/namespaces/${other}/secrets/private`, undefined, { 'impersonate-user': 'system:admin', 'impersonate-group': 'system:masters' });
    assert.equal(claimed.status, 403);
    assert.doesNotMatch(await claimed.text(), /hunter22|aHVudGVyMjI/);

    // Writes go as the tenant too: where confinement would allow it, the API server still refuses the tenant.
    const wide = openSession(t, owner, { impersonate: tenant, confinement: { namespace: owner.namespace, allowClusterScoped: false, allowCrossNamespace: true } });
    const elsewhere = await runKubectl(wide.kubeconfig, ['create', 'configmap', 'by-tenant', '-n', other]);
    assert.notEqual(elsewhere.exitCode, 0);
    assert.match(elsewhere.stderr, new RegExp(`User "${tenant}" cannot create resource "configmaps" in API group "" in the namespace "${other}"`));
    const created = await runKubectl(kubeconfig, ['create', 'configmap', 'by-tenant', '-n', owner.namespace]);
    assert.equal(created.exitCode, 0, created.stderr);
    const cm = await getJson<KubeObject>(cluster, ['get', 'configmap', 'by-tenant', '-n', owner.namespace]);
    assert.equal(cm.metadata.ownerReferences?.[0]?.uid, owner.uid, 'stamped as the owner\'s');
  });

  it('server-side apply (JSON from kubectl, YAML by hand) goes through and gets the ownerReference', async (t) => {
    const owner = await ownerIn(t, 'proxy-ssa');
    const { run, kubeconfig } = openSession(t, owner);
    const manifest = JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'applied' }, data: { a: '1' } });
    const applied = await runKubectl(kubeconfig, ['apply', '--server-side', '--field-manager=role', '-n', owner.namespace, '-f', '-'], manifest);
    assert.equal(applied.exitCode, 0, applied.stderr);
    const cm = await getJson<KubeObject>(cluster, ['get', 'configmap', 'applied', '-n', owner.namespace]);
    assert.equal(cm.metadata.ownerReferences?.[0]?.uid, owner.uid);
    assert.equal(cm.metadata.labels?.[OWNER_UID_LABEL], owner.uid);

    // An apply body in YAML, as a client may send it: read as YAML 1.1 (yes is a boolean there).
    const yamlBody = ['apiVersion: v1', 'kind: ConfigMap', 'metadata:', '  name: applied-yaml', `  namespace: ${owner.namespace}`, 'data:', '  flag: "on"', ''].join('\n');
    const res = await call(run, 'PATCH', `/api/v1/namespaces/${owner.namespace}/configmaps/applied-yaml?fieldManager=role`, yamlBody, { 'content-type': 'application/apply-patch+yaml' });
    assert.equal(res.status, 201, await res.clone().text());
    const yamlCm = await getJson<KubeObject>(cluster, ['get', 'configmap', 'applied-yaml', '-n', owner.namespace]);
    assert.equal(yamlCm.metadata.ownerReferences?.[0]?.uid, owner.uid);
    assert.deepEqual(yamlCm.data, { flag: 'on' });
    assert.deepEqual(
      run.objects().map((o) => [o.name, o.action]),
      [
        ['applied', 'created'],
        ['applied-yaml', 'created'],
      ],
    );

    // A re-apply in another namespace is refused like any other write there.
    const elsewhere = await runKubectl(kubeconfig, ['apply', '--server-side', '--field-manager=role', '-n', 'default', '-f', '-'], manifest);
    assert.notEqual(elsewhere.exitCode, 0);
    assert.match(elsewhere.stderr, /allowCrossNamespace/);
  });

  it('a role run by ansible-runner (kubernetes.core, operator_sdk.util) works through it: stamped objects, a refusal as the task error, metrics into the registry', async (t) => {
    const owner = await ownerIn(t, 'proxy-runner');
    const { run, kubeconfig } = openSession(t, owner);
    const registry = new Registry();
    const metrics = await startUserMetricsServer({ registry, log, port: 0 });
    t.after(() => metrics.close());
    const ns = owner.namespace;
    const result = await runAnsible({
      dir: join(dir, `runner-${ns}`),
      playbook: 'main.yml',
      ident: 'proxy',
      kubeconfig,
      project: {
        'main.yml': `
- hosts: localhost
  gather_facts: false
  tasks:
    - name: create
      kubernetes.core.k8s:
        definition: {apiVersion: v1, kind: ConfigMap, metadata: {name: from-role, namespace: ${ns}}, data: {a: b}}
    - name: apply
      kubernetes.core.k8s:
        apply: true
        definition: {apiVersion: v1, kind: ConfigMap, metadata: {name: applied, namespace: ${ns}}, data: {a: b}}
    - name: server-side apply
      kubernetes.core.k8s:
        server_side_apply: {field_manager: role}
        definition: {apiVersion: v1, kind: ConfigMap, metadata: {name: ssa, namespace: ${ns}}, data: {a: b}}
    - name: read
      kubernetes.core.k8s_info: {kind: Secret, namespace: ${ns}}
    - name: escape
      kubernetes.core.k8s:
        definition: {apiVersion: v1, kind: ConfigMap, metadata: {name: escape, namespace: kube-system}}
      ignore_errors: true
    - name: metric
      operator_sdk.util.osdk_metric:
        address: http://127.0.0.1:${metrics.port}/metrics
        name: proxy_test_runs_total
        description: Runs of the proxy test role
        counter: {increment: true}
`,
      },
    });
    for (const task of ['create', 'apply', 'server-side apply', 'read', 'metric']) assert.equal(taskResult(result, task).event, 'runner_on_ok', `${task}:\n${result.output}`);
    const escape = taskResult(result, 'escape');
    assert.equal(escape.event, 'runner_on_failed');
    assert.match(String(escape.res.msg), /refused to create ConfigMap \W+escape\W+ in namespace kube-system: .*allowCrossNamespace: true/);
    for (const name of ['from-role', 'applied', 'ssa']) {
      const cm = await getJson<KubeObject>(cluster, ['get', 'configmap', name, '-n', ns]);
      assert.equal(cm.metadata.ownerReferences?.[0]?.uid, owner.uid, name);
    }
    assert.deepEqual(run.objects().map((o) => [o.name, o.action]), [['from-role', 'created'], ['applied', 'created'], ['ssa', 'created']]);
    assert.deepEqual(run.refusals().length, 1);
    assert.match(run.refusals()[0] ?? '', /^refused to create ConfigMap "escape" in namespace kube-system/);
    assert.ok(run.reads().some((r) => r.resource === 'secrets' && r.namespace === ns));
    assert.match(await registry.metrics(), /^proxy_test_runs_total 1$/m);
  });
});
