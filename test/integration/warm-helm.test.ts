/**
 * Helm kept warm (issue #30) with the real chartpilot-helm and control plane: with
 * --helm-mode=warm calls reach the workers (the harness's relay logs them), a lifecycle runs the
 * same with --helm-mode=cli, and a worker killed mid-install is reported, replaced, and leaves no
 * lock: the next reconcile clears the pending record at once, not after the helm timeout.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { condition, crsOf, helmList } from './crs.js';
import { fixtureChart, SAMPLE_CHART } from './fixtures.js';
import { getJson, testCluster, type TestCluster } from './harness.js';
import type { RunningOperator } from './operator.js';
import { operatorScenario, setUp } from './scenario.js';
import { waitFor } from './wait.js';

const CALL_LABEL = 'chartpilot.io/helm-call';
/** The log line of a worker that ended after 10 s without a call (warm-pool.ts IDLE_MS). */
const IDLE_END = 'warm helm worker stopped: idle';
const warm = await testCluster().then((c) => c.warmHelmBin !== undefined);
const skip = warm ? false : 'chartpilot-helm is not provisioned (devcluster/provision.sh helm-worker)';

interface LogLine {
  msg?: string;
  pid?: number;
  mode?: string;
  replaces?: number;
  why?: string;
}

function logLines(op: RunningOperator): LogLine[] {
  return op
    .logs()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine);
}

async function records(cluster: TestCluster, ns: string, release: string): Promise<{ metadata: { labels?: Record<string, string> } }[]> {
  return (await getJson<{ items: { metadata: { labels?: Record<string, string> } }[] }>(cluster, ['get', 'secrets', '-n', ns, '-l', `owner=helm,name=${release}`, '-o', 'json'])).items;
}

describe('warm helm', { skip }, () => {
  it('--helm-mode=warm: install, upgrade and uninstall run on workers, at most one per helm slot', async (t) => {
    const { op, cr, cluster, ns } = await operatorScenario(t, { kind: 'WarmLife', chart: SAMPLE_CHART, operator: { args: ['--helm-mode=warm', '--max-concurrent-reconciles', '2'] } });
    const found = logLines(op).find((l) => l.msg === 'helm found');
    assert.equal(found?.mode, 'warm', op.logs());
    await cr.apply('shop', { replicaCount: 1, message: 'v1' });
    await cr.apply('cart', { replicaCount: 1, message: 'v1' });
    await cr.apply('till', { replicaCount: 1, message: 'v1' });
    for (const name of ['shop', 'cart', 'till']) await cr.deployed(name);
    await cr.apply('shop', { replicaCount: 2, message: 'v2' });
    await cr.until('shop', 'revision 2', (c) => c.status?.deployedRelease?.revision === 2);
    await cr.delete('shop');
    await cr.gone('shop');
    assert.deepEqual((await helmList(cluster, ns)).map((r) => r.name).sort(), ['cart', 'till']);
    const calls = op.helmCalls();
    assert.equal(calls.filter((c) => c.startsWith('upgrade ')).length, 4, calls.join(' | '));
    assert.ok(calls.some((c) => c.startsWith('uninstall ') && c.endsWith(' shop')), calls.join(' | '));
    // Workers idle for 10 s end and later calls start new ones: at most two run at any time.
    let runningNow = 0;
    let mostAtOnce = 0;
    for (const l of logLines(op)) {
      if (l.msg === 'warm helm worker started' || l.msg === 'warm helm worker replaced') mostAtOnce = Math.max(mostAtOnce, ++runningNow);
      if (l.msg === IDLE_END || l.msg === 'warm helm worker died' || l.msg === 'warm helm worker killed') runningNow--;
    }
    assert.ok(mostAtOnce >= 1 && mostAtOnce <= 2, `workers running at once: up to ${String(mostAtOnce)} (2 slots)`);
    assert.equal(logLines(op).filter((l) => l.msg === 'warm helm worker died' || l.msg === 'warm helm worker killed').length, 0);
  });

  it('--helm-mode=cli runs the same lifecycle with a helm process per call and no worker', async (t) => {
    const { op, cr, cluster, ns } = await operatorScenario(t, { kind: 'CliLife', chart: SAMPLE_CHART, operator: { args: ['--helm-mode=cli'] } });
    assert.equal(logLines(op).find((l) => l.msg === 'helm found')?.mode, 'cli');
    await cr.apply('shop', { replicaCount: 1, message: 'v1' });
    const installed = await cr.deployed('shop');
    assert.equal(condition(installed, 'Deployed')?.reason, 'InstallSuccessful');
    await cr.apply('shop', { replicaCount: 3, message: 'v2' });
    await cr.until('shop', 'revision 2', (c) => c.status?.deployedRelease?.revision === 2);
    assert.equal((await cluster.kubectl(['get', 'deployment', 'shop', '-n', ns, '-o', 'jsonpath={.spec.replicas}'])).stdout, '3');
    await cr.delete('shop');
    await cr.gone('shop');
    assert.deepEqual(await helmList(cluster, ns), []);
    assert.ok(op.helmCalls().some((c) => c.startsWith('uninstall ') && c.endsWith(' shop')));
    assert.equal(logLines(op).filter((l) => (l.msg ?? '').startsWith('warm helm worker')).length, 0, 'no worker in cli mode');
  });

  it('a worker killed mid-install or mid-upgrade fails that call, is replaced, and its lock is cleared at once', { timeout: 5 * 60_000 }, async (t) => {
    const s = await setUp(t, { kind: 'WarmKill', chart: fixtureChart('stoppable-hook') });
    const { cluster, ns } = s;
    // helm's own timeout is minutes away: only the stopped-call record can clear a lock in time.
    const op = await s.start({ args: ['--helm-mode=warm', '--helm-timeout', '5m', '--max-concurrent-reconciles', '1'] });
    const cr = crsOf(cluster, s.kind, ns, op);

    /**
     * Waits for `status` (the call hangs on its hook), applies the fix and kills every live worker:
     * the pool may hold an idle one beside the busy one (a status read started it), and which is
     * which is not visible from outside, so all go and exactly the busy one must be replaced.
     */
    const killMidCall = async (status: string): Promise<{ workers: number[]; killedAt: number }> => {
      const pending = await waitFor(
        `the call waiting on its hook (${status})`,
        async () => (await records(cluster, ns, 'web')).find((r) => r.metadata.labels?.['status'] === status),
        { timeoutMs: 90_000 },
      );
      assert.match(pending.metadata.labels?.[CALL_LABEL] ?? '', /^[0-9a-f]{12}-\d+$/);
      const lines = logLines(op);
      const exited = new Set(lines.filter((l) => l.msg === 'warm helm worker died' || l.msg === 'warm helm worker killed' || l.msg === IDLE_END).map((l) => l.pid));
      const workers = lines
        .filter((l) => (l.msg === 'warm helm worker started' || l.msg === 'warm helm worker replaced') && l.pid !== undefined && !exited.has(l.pid))
        .map((l) => l.pid ?? 0);
      assert.ok(workers.length > 0, op.logs());
      // The fix goes in first, so the retry after the kill can finish.
      await cr.apply('web', { stuck: false });
      const killedAt = Date.now();
      for (const pid of workers) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch (err) {
          // Ended as idle since the log was read (settled() checks that it says so).
          if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
        }
      }
      return { workers, killedAt };
    };
    const settled = async (what: string, killed: { workers: number[]; killedAt: number }): Promise<void> => {
      const deployed = await cr.until('web', `Deployed with the fixed spec (${what})`, (c) => condition(c, 'Deployed')?.status === 'True' && c.metadata.generation === c.status?.observedGeneration, 120_000);
      const tookMs = Date.now() - killed.killedAt;
      t.diagnostic(`${what}: worker killed → Deployed in ${String(tookMs)} ms`);
      assert.ok(tookMs < 90_000, `the lock was cleared at once, not after the helm timeout (${String(tookMs)} ms)`);
      const lines = logLines(op);
      for (const pid of killed.workers) {
        assert.ok(lines.some((l) => (l.msg === 'warm helm worker died' || l.msg === IDLE_END) && l.pid === pid), op.logs().slice(-3000));
        assert.throws(() => process.kill(pid, 0), `the killed worker ${String(pid)} is gone`);
      }
      // Only the worker that was running the install or upgrade is replaced at once; idle ones are
      // started again when a call needs them.
      // The replacement's line comes when the new worker is ready, which can be after the CR's
      // status already reads Deployed: wait for it (seconds), then count.
      const replacedLines = (): unknown[] => logLines(op).filter((l) => l.msg === 'warm helm worker replaced' && killed.workers.includes(l.replaces ?? -1));
      await waitFor(`the killed worker replaced (${what})`, () => Promise.resolve(replacedLines().length > 0), { timeoutMs: 30_000 }).catch(() => undefined);
      assert.equal(replacedLines().length, 1, op.logs().slice(-3000));
      const statuses = (await records(cluster, ns, 'web')).map((r) => r.metadata.labels?.['status']);
      assert.ok(!statuses.some((st) => st?.startsWith('pending-')), `no lock remains: ${statuses.join(', ')}`);
      assert.equal(condition(deployed, 'ReleaseFailed'), undefined, JSON.stringify(deployed.status));
      assert.equal((await cluster.kubectl(['get', 'configmap', 'web-config', '-n', ns, '-o', 'jsonpath={.data.stuck}'])).stdout, 'false');
    };

    await cr.apply('web', { stuck: true });
    await settled('install', await killMidCall('pending-install'));
    // An upgrade's lock is not removed by remediation (as a failed install's is): only the record
    // of the stopped call clears it before the helm timeout.
    await cr.apply('web', { stuck: true });
    await settled('upgrade', await killMidCall('pending-upgrade'));
    assert.doesNotMatch(op.logs(), /another operation .* is in progress/);
  });
});
