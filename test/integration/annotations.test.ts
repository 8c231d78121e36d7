/** Each operator-sdk CR annotation the operator honours does what it says, with real helm. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { condition, helmList } from './crs.js';
import { fixtureChart } from './fixtures.js';
import type { TestCluster } from './harness.js';
import { operatorScenario } from './scenario.js';
import { waitFor } from './wait.js';

const A = 'helm.sdk.operatorframework.io/';
const HOOKED = fixtureChart('hooked');

async function exists(cluster: TestCluster, ns: string, kind: string, name: string): Promise<boolean> {
  const r = await cluster.kubectl(['get', kind, name, '-n', ns, '-o', 'name'], { allowFail: true });
  return r.exitCode === 0;
}

describe('CR annotations', () => {
  it('pause-reconcile stops Helm work and says so; removing it resumes', async (t) => {
    const { cluster, ns, cr } = await operatorScenario(t, { kind: 'Pause', chart: HOOKED });
    await cr.apply('p', { color: 'red' });
    await cr.deployed('p');

    await cr.apply('p', { color: 'blue' }, { [`${A}pause-reconcile`]: 'true' });
    const paused = await cr.until('p', 'Paused', (c) => condition(c, 'Paused')?.status === 'True');
    assert.match(condition(paused, 'Paused')?.message ?? '', /pause-reconcile/);
    assert.equal(paused.status?.deployedRelease?.revision, 1, 'no upgrade while paused');
    const color = await cluster.kubectl(['get', 'configmap', 'p-main', '-n', ns, '-o', 'jsonpath={.data.color}']);
    assert.equal(color.stdout, 'red');

    await cr.apply('p', { color: 'blue' }, {});
    const resumed = await cr.until('p', 'upgraded after resume', (c) => c.status?.deployedRelease?.revision === 2);
    assert.equal(condition(resumed, 'Paused'), undefined);
  });

  it('install-, upgrade- and uninstall-disable-hooks skip exactly those hooks', async (t) => {
    const { cluster, ns, cr } = await operatorScenario(t, { kind: 'Hooks', chart: HOOKED });

    await cr.apply('h', { color: 'red' }, { [`${A}install-disable-hooks`]: 'true', [`${A}uninstall-disable-hooks`]: 'true' });
    await cr.deployed('h');
    assert.equal(await exists(cluster, ns, 'configmap', 'h-main'), true);
    assert.equal(await exists(cluster, ns, 'configmap', 'h-hook-post-install'), false, 'install hook skipped');

    await cr.apply('h', { color: 'blue' }, { [`${A}upgrade-disable-hooks`]: 'false', [`${A}uninstall-disable-hooks`]: 'true' });
    await cr.until('h', 'revision 2', (c) => c.status?.deployedRelease?.revision === 2);
    assert.equal(await exists(cluster, ns, 'configmap', 'h-hook-post-upgrade'), true, 'upgrade hook ran');

    await cr.delete('h');
    await cr.gone('h');
    assert.equal(await exists(cluster, ns, 'configmap', 'h-hook-pre-delete'), false, 'uninstall hook skipped');

    // Without the annotation the pre-delete hook runs (its ConfigMap outlives the release).
    await cr.apply('h2', {});
    await cr.deployed('h2');
    assert.equal(await exists(cluster, ns, 'configmap', 'h2-hook-post-install'), true, 'install hook runs by default');
    await cr.delete('h2');
    await cr.gone('h2');
    assert.equal(await exists(cluster, ns, 'configmap', 'h2-hook-pre-delete'), true, 'uninstall hook runs by default');
  });

  it('upgrade-force takes back fields another field manager took', async (t) => {
    const { cluster, ns, cr } = await operatorScenario(t, { kind: 'Force', chart: HOOKED });
    await cr.apply('f', { replicas: 1 });
    await cr.deployed('f');

    // Someone else claims spec.replicas with server-side apply.
    await cluster.kubectl(['apply', '--server-side', '--force-conflicts', '--field-manager=someone-else', '-f', '-'], {
      input: JSON.stringify({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'f', namespace: ns }, spec: { replicas: 4 } }),
    });
    await cr.apply('f', { replicas: 2 }, { [`${A}upgrade-force`]: 'true' });
    await cr.until('f', 'revision 2', (c) => c.status?.deployedRelease?.revision === 2);
    const replicas = await cluster.kubectl(['get', 'deployment', 'f', '-n', ns, '-o', 'jsonpath={.spec.replicas}']);
    assert.equal(replicas.stdout, '2');
  });

  it('reports an invalid annotation value on the CR and installs nothing', async (t) => {
    const { cluster, ns, cr } = await operatorScenario(t, { kind: 'BadAnnotation', chart: HOOKED });
    await cr.apply('bad', {}, { [`${A}reconcile-period`]: 'often', [`${A}upgrade-force`]: 'yes' });
    const refused = await cr.until('bad', 'Irreconcilable', (c) => condition(c, 'Irreconcilable')?.status === 'True');
    const message = condition(refused, 'Irreconcilable')?.message ?? '';
    assert.match(message, /reconcile-period/);
    assert.match(message, /upgrade-force is "yes", expected "true" or "false"/);
    assert.deepEqual(await helmList(cluster, ns), []);

    await cr.apply('bad', {}, { [`${A}reconcile-period`]: '30s' });
    await cr.until('bad', 'Deployed once fixed', (c) => condition(c, 'Deployed')?.status === 'True' && condition(c, 'Irreconcilable') === undefined);
  });

  it('uninstall-wait keeps the resource until every object of its release is gone', async (t) => {
    const { cluster, ns, cr } = await operatorScenario(t, { kind: 'UninstallWait', chart: HOOKED });
    await cr.apply('w', {}, { [`${A}uninstall-wait`]: 'true' });
    await cr.until('w', 'Deployed with inventory', (c) => condition(c, 'Deployed')?.status === 'True');
    // Something else holds one object of the release.
    await cluster.kubectl(['patch', 'configmap', 'w-main', '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":["test.chartpilot.io/hold"]}}']);
    await cr.delete('w');
    const waiting = await cr.until('w', 'waiting for objects', (c) => /waiting for ConfigMap w-main/.test(condition(c, 'Deployed')?.message ?? ''));
    assert.equal(condition(waiting, 'Deployed')?.status, 'False');
    assert.deepEqual(await helmList(cluster, ns), [], 'the release itself is uninstalled');

    await cluster.kubectl(['patch', 'configmap', 'w-main', '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
    await cr.gone('w', 60_000);
  });

  it('leaves objects annotated helm.sh/resource-policy: keep when the resource is deleted', async (t) => {
    const { cluster, ns, cr } = await operatorScenario(t, { kind: 'KeepPolicy', chart: fixtureChart('settings') });
    await cr.apply('kp', { keepExtra: true });
    await cr.deployed('kp');
    await cr.delete('kp');
    await cr.gone('kp', 60_000);
    await waitFor('release objects removed', async () => !(await exists(cluster, ns, 'configmap', 'kp-settings')), { timeoutMs: 30_000 });
    assert.equal(await exists(cluster, ns, 'configmap', 'kp-kept'), true, 'the kept object survives');
    // And nothing lets the garbage collector take it later: it names no owner.
    const owners = await cluster.kubectl(['get', 'configmap', 'kp-kept', '-n', ns, '-o', 'jsonpath={.metadata.ownerReferences}']);
    assert.equal(owners.stdout, '');
  });
});
