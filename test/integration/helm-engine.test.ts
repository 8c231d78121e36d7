/**
 * The helm engine (--helm-mode=engine, the default; issue #42) with the real chartpilot-helm and
 * control plane: one engine process runs every call's helm actions concurrently; a lifecycle of several CRs at once
 * through it (each call confined by its own API-layer session), a chart that fails to render fails
 * only its own CR, and the engine killed mid-install is reported, replaced, and its lock is
 * cleared at once.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { condition, crsOf, helmList } from './crs.js';
import { fixtureChart, SAMPLE_CHART } from './fixtures.js';
import { getJson, testCluster, type TestCluster } from './harness.js';
import { logLines } from './operator-log.js';
import { operatorScenario, setUp } from './scenario.js';
import { waitFor } from './wait.js';

const SECRET = 'hunter2-engine-value';
const warm = await testCluster().then((c) => c.warmHelmBin !== undefined);
const skip = warm ? false : 'chartpilot-helm is not provisioned (devcluster/provision.sh helm-worker)';

async function recordStatuses(cluster: TestCluster, ns: string, release: string): Promise<(string | undefined)[]> {
  const list = await getJson<{ items: { metadata: { labels?: Record<string, string> } }[] }>(cluster, ['get', 'secrets', '-n', ns, '-l', `owner=helm,name=${release}`, '-o', 'json']);
  return list.items.map((r) => r.metadata.labels?.['status']);
}

describe('helm engine', { skip }, () => {
  it('is the default: one engine runs the lifecycle of three CRs at once, and a chart that fails to render fails only its CR', async (t) => {
    const { op, cr, cluster, ns } = await operatorScenario(t, { kind: 'EngineLife', chart: SAMPLE_CHART, operator: { args: ['--max-concurrent-reconciles', '3'] } });
    assert.equal(logLines(op).find((l) => l.msg === 'helm found')?.['mode'], 'engine', op.logs());
    await Promise.all(['shop', 'cart', 'till'].map((name) => cr.apply(name, { replicaCount: 1, message: `v1 of ${name}` })));
    for (const name of ['shop', 'cart', 'till']) {
      const deployed = await cr.deployed(name);
      assert.equal(condition(deployed, 'Deployed')?.reason, 'InstallSuccessful');
      // Each release got its own values, whatever ran beside it.
      assert.equal((await cluster.kubectl(['get', 'configmap', `${name}-content`, '-n', ns, '-o', 'jsonpath={.data.index\\.html}'])).stdout, `v1 of ${name}`);
    }
    await cr.apply('shop', { replicaCount: 2, message: 'v2' });
    await cr.until('shop', 'revision 2', (c) => c.status?.deployedRelease?.revision === 2 && condition(c, 'Deployed')?.status === 'True');
    assert.equal((await cluster.kubectl(['get', 'deployment', 'shop', '-n', ns, '-o', 'jsonpath={.spec.replicas}'])).stdout, '2');
    // Values the chart's schema refuses: that CR fails with helm's words (its value redacted), the others stay.
    await cr.apply('cart', { replicaCount: 1, message: 'v2', image: { pullPolicy: SECRET } });
    const failed = await cr.until('cart', 'ReleaseFailed', (c) => condition(c, 'ReleaseFailed')?.status === 'True');
    assert.match(condition(failed, 'ReleaseFailed')?.message ?? '', /pullPolicy/u, JSON.stringify(failed.status));
    assert.ok(!JSON.stringify(failed.status).includes(SECRET), 'the value is not in the status');
    const till = await cr.get('till');
    assert.ok(till !== undefined);
    assert.equal(condition(till, 'Deployed')?.status, 'True');
    await cr.delete('shop');
    await cr.gone('shop');
    assert.deepEqual((await helmList(cluster, ns)).map((r) => r.name).sort(), ['cart', 'till']);
    const calls = op.helmCalls();
    assert.ok(calls.filter((c) => c.startsWith('upgrade ')).length >= 5, calls.join(' | '));
    assert.ok(calls.some((c) => c === `uninstall --namespace=${ns} -- shop`), calls.join(' | '));
    const lines = logLines(op);
    assert.equal(lines.filter((l) => l.msg === 'helm engine started').length, 1, 'one engine for every call');
    assert.equal(lines.filter((l) => (l.msg ?? '').startsWith('warm helm worker')).length, 0, 'no worker in engine mode');
    assert.equal(lines.filter((l) => l.msg === 'helm engine died' || l.msg === 'helm engine killed').length, 0, op.logs().slice(-3000));
  });

  it('the engine killed mid-install fails that call, is replaced, and its lock is cleared at once', { timeout: 5 * 60_000 }, async (t) => {
    const s = await setUp(t, { kind: 'EngineKill', chart: fixtureChart('stoppable-hook') });
    const { cluster, ns } = s;
    // helm's own timeout is minutes away: only the stopped-call record can clear a lock in time.
    const op = await s.start({ args: ['--helm-mode=engine', '--helm-timeout', '5m', '--max-concurrent-reconciles', '1'] });
    const cr = crsOf(cluster, s.kind, ns, op);
    await cr.apply('web', { stuck: true });
    await waitFor('the install waiting on its hook', async () => (await recordStatuses(cluster, ns, 'web')).includes('pending-install'), { timeoutMs: 90_000 });
    const engine = logLines(op).find((l) => l.msg === 'helm engine started')?.['pid'];
    assert.ok(typeof engine === 'number', op.logs());
    await cr.apply('web', { stuck: false }); // the fix first, so the retry after the kill can finish
    const killedAt = Date.now();
    process.kill(engine, 'SIGKILL');
    const deployed = await cr.until('web', 'Deployed with the fixed spec', (c) => condition(c, 'Deployed')?.status === 'True' && c.metadata.generation === c.status?.observedGeneration, 120_000);
    const tookMs = Date.now() - killedAt;
    t.diagnostic(`engine killed → Deployed in ${String(tookMs)} ms`);
    assert.ok(tookMs < 90_000, `the lock was cleared at once, not after the helm timeout (${String(tookMs)} ms)`);
    const lines = logLines(op);
    assert.ok(lines.some((l) => l.msg === 'helm engine died' && l['pid'] === engine), op.logs().slice(-3000));
    assert.ok(lines.some((l) => l.msg === 'helm engine replaced' && l['replaces'] === engine), op.logs().slice(-3000));
    assert.ok(!(await recordStatuses(cluster, ns, 'web')).some((st) => st?.startsWith('pending-')), 'no lock remains');
    assert.equal(condition(deployed, 'ReleaseFailed'), undefined, JSON.stringify(deployed.status));
    assert.equal((await cluster.kubectl(['get', 'configmap', 'web-config', '-n', ns, '-o', 'jsonpath={.data.stuck}'])).stdout, 'false');
  });
});
