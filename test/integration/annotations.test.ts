/** Step 3 proof: each operator-sdk CR annotation does what it says — real cluster, real helm. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newNamespace, testCluster, waitFor, type TestCluster } from './harness.js';
import { FIXTURE_CHARTS, applyCr, condition, getCr, helmList, installCrd, startOperator, testKind, waitForCr } from './operator-harness.js';

const A = 'helm.sdk.operatorframework.io/';
const HOOKED = `${FIXTURE_CHARTS}/hooked`;

async function exists(cluster: TestCluster, ns: string, kind: string, name: string): Promise<boolean> {
  const r = await cluster.kubectl(['get', kind, name, '-n', ns, '-o', 'name'], { allowFail: true });
  return r.exitCode === 0;
}

describe('CR annotations', () => {
  it('pause-reconcile stops Helm work and says so; removing it resumes', async (t) => {
    const cluster = await testCluster();
    const k = testKind('Pause');
    await installCrd(cluster, k);
    const ns = await newNamespace(t, 'pause');
    const op = await startOperator(t, cluster, { namespaces: [ns], watches: [{ kind: k, chart: HOOKED }] });
    await applyCr(cluster, k, ns, 'p', { color: 'red' });
    await waitForCr(cluster, k, ns, 'p', 'Deployed', (cr) => condition(cr, 'Deployed')?.status === 'True', op);

    await applyCr(cluster, k, ns, 'p', { color: 'blue' }, { [`${A}pause-reconcile`]: 'true' });
    const paused = await waitForCr(cluster, k, ns, 'p', 'Paused', (cr) => condition(cr, 'Paused')?.status === 'True', op);
    assert.match(condition(paused, 'Paused')?.message ?? '', /pause-reconcile/);
    assert.equal(paused.status?.deployedRelease?.revision, 1, 'no upgrade while paused');
    const color = await cluster.kubectl(['get', 'configmap', 'p-main', '-n', ns, '-o', 'jsonpath={.data.color}']);
    assert.equal(color.stdout, 'red');

    await applyCr(cluster, k, ns, 'p', { color: 'blue' }, {});
    const resumed = await waitForCr(cluster, k, ns, 'p', 'upgraded after resume', (cr) => cr.status?.deployedRelease?.revision === 2, op);
    assert.equal(condition(resumed, 'Paused'), undefined);
  });

  it('install-, upgrade- and uninstall-disable-hooks skip exactly those hooks', async (t) => {
    const cluster = await testCluster();
    const k = testKind('Hooks');
    await installCrd(cluster, k);
    const ns = await newNamespace(t, 'hooks');
    const op = await startOperator(t, cluster, { namespaces: [ns], watches: [{ kind: k, chart: HOOKED }] });

    await applyCr(cluster, k, ns, 'h', { color: 'red' }, { [`${A}install-disable-hooks`]: 'true', [`${A}uninstall-disable-hooks`]: 'true' });
    await waitForCr(cluster, k, ns, 'h', 'Deployed', (cr) => condition(cr, 'Deployed')?.status === 'True', op);
    assert.equal(await exists(cluster, ns, 'configmap', 'h-main'), true);
    assert.equal(await exists(cluster, ns, 'configmap', 'h-hook-post-install'), false, 'install hook skipped');

    await applyCr(cluster, k, ns, 'h', { color: 'blue' }, { [`${A}upgrade-disable-hooks`]: 'false', [`${A}uninstall-disable-hooks`]: 'true' });
    await waitForCr(cluster, k, ns, 'h', 'revision 2', (cr) => cr.status?.deployedRelease?.revision === 2, op);
    assert.equal(await exists(cluster, ns, 'configmap', 'h-hook-post-upgrade'), true, 'upgrade hook ran');

    await cluster.kubectl(['delete', `${k.plural}.${k.group}`, 'h', '-n', ns, '--wait=false']);
    await waitFor('CR gone', async () => (await getCr(cluster, k, ns, 'h')) === undefined, { timeoutMs: 90_000 });
    assert.equal(await exists(cluster, ns, 'configmap', 'h-hook-pre-delete'), false, 'uninstall hook skipped');

    // Without the annotation the pre-delete hook runs (its ConfigMap outlives the release).
    await applyCr(cluster, k, ns, 'h2', {});
    await waitForCr(cluster, k, ns, 'h2', 'Deployed', (cr) => condition(cr, 'Deployed')?.status === 'True', op);
    assert.equal(await exists(cluster, ns, 'configmap', 'h2-hook-post-install'), true, 'install hook runs by default');
    await cluster.kubectl(['delete', `${k.plural}.${k.group}`, 'h2', '-n', ns, '--wait=false']);
    await waitFor('CR gone', async () => (await getCr(cluster, k, ns, 'h2')) === undefined, { timeoutMs: 90_000 });
    assert.equal(await exists(cluster, ns, 'configmap', 'h2-hook-pre-delete'), true, 'uninstall hook runs by default');
  });

  it('upgrade-force takes back fields another field manager took', async (t) => {
    const cluster = await testCluster();
    const k = testKind('Force');
    await installCrd(cluster, k);
    const ns = await newNamespace(t, 'force');
    const op = await startOperator(t, cluster, { namespaces: [ns], watches: [{ kind: k, chart: HOOKED }] });
    await applyCr(cluster, k, ns, 'f', { replicas: 1 });
    await waitForCr(cluster, k, ns, 'f', 'Deployed', (cr) => condition(cr, 'Deployed')?.status === 'True', op);

    // Someone else claims spec.replicas with server-side apply.
    await cluster.kubectl(['apply', '--server-side', '--force-conflicts', '--field-manager=someone-else', '-f', '-'], {
      input: JSON.stringify({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'f', namespace: ns }, spec: { replicas: 4 } }),
    });
    await applyCr(cluster, k, ns, 'f', { replicas: 2 }, { [`${A}upgrade-force`]: 'true' });
    await waitForCr(cluster, k, ns, 'f', 'revision 2', (cr) => cr.status?.deployedRelease?.revision === 2, op);
    const replicas = await cluster.kubectl(['get', 'deployment', 'f', '-n', ns, '-o', 'jsonpath={.spec.replicas}']);
    assert.equal(replicas.stdout, '2');
  });

  it('reports an invalid annotation value on the CR and installs nothing', async (t) => {
    const cluster = await testCluster();
    const k = testKind('BadAnnotation');
    await installCrd(cluster, k);
    const ns = await newNamespace(t, 'badann');
    const op = await startOperator(t, cluster, { namespaces: [ns], watches: [{ kind: k, chart: HOOKED }] });
    await applyCr(cluster, k, ns, 'bad', {}, { [`${A}reconcile-period`]: 'often', [`${A}upgrade-force`]: 'yes' });
    const cr = await waitForCr(cluster, k, ns, 'bad', 'Irreconcilable', (c) => condition(c, 'Irreconcilable')?.status === 'True', op);
    const message = condition(cr, 'Irreconcilable')?.message ?? '';
    assert.match(message, /reconcile-period/);
    assert.match(message, /upgrade-force is "yes", expected "true" or "false"/);
    assert.deepEqual(await helmList(cluster, ns), []);

    await applyCr(cluster, k, ns, 'bad', {}, { [`${A}reconcile-period`]: '30s' });
    await waitForCr(cluster, k, ns, 'bad', 'Deployed once fixed', (c) => condition(c, 'Deployed')?.status === 'True' && condition(c, 'Irreconcilable') === undefined, op);
  });

  it('uninstall-wait keeps the resource until every object of its release is gone', async (t) => {
    const cluster = await testCluster();
    const k = testKind('UninstallWait');
    await installCrd(cluster, k);
    const ns = await newNamespace(t, 'uwait');
    const op = await startOperator(t, cluster, { namespaces: [ns], watches: [{ kind: k, chart: HOOKED }] });
    await applyCr(cluster, k, ns, 'w', {}, { [`${A}uninstall-wait`]: 'true' });
    await waitForCr(cluster, k, ns, 'w', 'Deployed with inventory', (cr) => condition(cr, 'Deployed')?.status === 'True', op);
    // Something else holds one object of the release.
    await cluster.kubectl(['patch', 'configmap', 'w-main', '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":["test.chartpilot.io/hold"]}}']);
    await cluster.kubectl(['delete', `${k.plural}.${k.group}`, 'w', '-n', ns, '--wait=false']);
    const waiting = await waitForCr(cluster, k, ns, 'w', 'waiting for objects', (cr) => /waiting for ConfigMap w-main/.test(condition(cr, 'Deployed')?.message ?? ''), op);
    assert.equal(condition(waiting, 'Deployed')?.status, 'False');
    assert.deepEqual(await helmList(cluster, ns), [], 'the release itself is uninstalled');

    await cluster.kubectl(['patch', 'configmap', 'w-main', '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
    await waitFor('CR gone once the object is gone', async () => (await getCr(cluster, k, ns, 'w')) === undefined, { timeoutMs: 60_000 });
  });

  it('leaves objects annotated helm.sh/resource-policy: keep when the resource is deleted', async (t) => {
    const cluster = await testCluster();
    const k = testKind('KeepPolicy');
    await installCrd(cluster, k);
    const ns = await newNamespace(t, 'keep');
    const op = await startOperator(t, cluster, { namespaces: [ns], watches: [{ kind: k, chart: `${FIXTURE_CHARTS}/settings` }] });
    await applyCr(cluster, k, ns, 'kp', { keepExtra: true });
    await waitForCr(cluster, k, ns, 'kp', 'Deployed', (cr) => condition(cr, 'Deployed')?.status === 'True', op);
    await cluster.kubectl(['delete', `${k.plural}.${k.group}`, 'kp', '-n', ns, '--wait=false']);
    await waitFor('CR gone', async () => (await getCr(cluster, k, ns, 'kp')) === undefined, { timeoutMs: 60_000 });
    await waitFor('release objects removed', async () => !(await exists(cluster, ns, 'configmap', 'kp-settings')), { timeoutMs: 30_000 });
    assert.equal(await exists(cluster, ns, 'configmap', 'kp-kept'), true, 'the kept object survives');
    // And nothing lets the garbage collector take it later: it names no owner.
    const owners = await cluster.kubectl(['get', 'configmap', 'kp-kept', '-n', ns, '-o', 'jsonpath={.metadata.ownerReferences}']);
    assert.equal(owners.stdout, '');
  });
});
