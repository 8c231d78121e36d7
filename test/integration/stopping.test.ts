/**
 * Stopping and hand-over on the real control plane with the real helm: SIGTERM while a helm call
 * waits on a hook that never completes must stop helm within the drain, release the Lease with a
 * note of the stopped calls, and let the next leader finish the CR in seconds; a pending lock such
 * a call left is cleared by the next leader at once, a live one never.
 */
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { execa } from 'execa';
import { condition, eventsFor } from './crs.js';
import { BIN, fixtureChart } from './fixtures.js';
import { getJson, type TestCluster } from './harness.js';
import { OPERATOR_NAMESPACE, type RunningOperator } from './operator.js';
import { setUp } from './scenario.js';
import { crsOf } from './crs.js';
import { waitFor } from './wait.js';
import { processTable } from '../soak/procfs.js';

const CHART = fixtureChart('stoppable-hook');
const LEASE = 'stopping';
const CALL_LABEL = 'chartpilot.io/helm-call';
const HAND_OVER = 'chartpilot.io/hand-over';

interface Lease {
  metadata: { annotations?: Record<string, string> };
  spec?: { holderIdentity?: string };
}

interface Record_ {
  metadata: { name: string; labels?: Record<string, string> };
}

/** Helm's release records of `release` in ns. */
async function records(cluster: TestCluster, ns: string, release: string): Promise<Record_[]> {
  return (await getJson<{ items: Record_[] }>(cluster, ['get', 'secrets', '-n', ns, '-l', `owner=helm,name=${release}`, '-o', 'json'])).items;
}

async function waitForLog(op: RunningOperator, text: string, timeoutMs = 60_000): Promise<void> {
  await waitFor(`operator log: ${text}`, () => Promise.resolve(op.logs().includes(text)), { timeoutMs, intervalMs: 100 });
}

/** Running helm processes acting on namespace ns (whoever started them). */
function helmProcessesIn(ns: string): string[] {
  return processTable()
    .map((p) => p.cmdline)
    .filter((c) => c.includes(`--namespace=${ns}`) || c.includes(` -n ${ns}`))
    .filter((c) => /\bhelm\b/.test(c) && !c.includes('kubectl'));
}

/** The pids of the helm engines or warm helm workers `op` started (none in cli mode). */
function warmWorkers(op: RunningOperator): number[] {
  const started = ['warm helm worker started', 'warm helm worker replaced', 'helm engine started', 'helm engine replaced'].map((m) => `"msg":"${m}"`);
  return op
    .logs()
    .split('\n')
    .filter((l) => started.some((m) => l.includes(m)))
    .map((l) => (JSON.parse(l) as { pid: number }).pid);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function leaderArgs(ns: string): string[] {
  return ['--leader-elect', '--leader-election-namespace', ns, '--leader-election-id', LEASE, '--helm-timeout', '5m'];
}

describe('stopping and hand-over', () => {
  it('SIGTERM mid-hook: helm stopped within the drain, the Lease released with a note, the standby finishes the CR in seconds', { timeout: 5 * 60_000 }, async (t: TestContext) => {
    const s = await setUp(t, { kind: 'StopHook', chart: CHART });
    const { cluster, ns } = s;
    const a = await s.start({ args: leaderArgs(ns), noWait: true });
    await waitForLog(a, 'became leader');
    const b = await s.start({ args: leaderArgs(ns), noWait: true });
    await waitForLog(b, 'another replica is the leader; standing by');
    const cr = crsOf(cluster, s.kind, ns, b);

    await cr.apply('web', { stuck: true });
    const pending = await waitFor(
      'the install waiting on its hook (pending-install)',
      async () => (await records(cluster, ns, 'web')).find((r) => r.metadata.labels?.['status'] === 'pending-install'),
      { timeoutMs: 90_000 },
    );
    const call = pending.metadata.labels?.[CALL_LABEL];
    assert.match(call ?? '', /^[0-9a-f]{12}-\d+$/, 'the record names the helm call that wrote it');
    // A helm process (cli mode), or the call on a warm worker (the harness's relay logged it).
    const workers = warmWorkers(a);
    assert.ok(helmProcessesIn(ns).some((c) => c.includes('upgrade')) || (workers.length > 0 && a.helmCalls().some((c) => c.startsWith('upgrade ') && c.includes(' -- web '))), 'helm is running');

    const sigterm = Date.now();
    const exited = a.stop('SIGTERM');
    // The fix the next owner deploys; the stopping operator takes no new work.
    await cr.apply('web', { stuck: false });
    const code = await exited;
    const stopMs = Date.now() - sigterm;
    t.diagnostic(`SIGTERM → exit: ${String(stopMs)} ms`);
    assert.equal(code, 0, a.logs().slice(-3000));
    assert.ok(stopMs < 28_000, `exited within the pod's 30 s grace (drain 20 s + kill grace 5 s), took ${String(stopMs)} ms`);
    assert.match(a.logs(), /the running helm call was stopped; the next owner of this release finishes the work/);
    assert.match(a.logs(), /released the leader lease/);
    assert.deepEqual(helmProcessesIn(ns).filter((c) => c.includes('upgrade')), [], 'no helm of the stopped operator runs on');
    assert.deepEqual(workers.filter(isAlive), [], 'no warm helm worker of the stopped operator runs on');
    // helm 4 turns SIGTERM into a failed release; nothing was left pending.
    const stoppedRecord = (await records(cluster, ns, 'web')).find((r) => r.metadata.labels?.[CALL_LABEL] === call);
    assert.equal(stoppedRecord?.metadata.labels?.['status'], 'failed');
    // No condition claims the stop was a failure of the CR.
    const afterStop = await cr.get('web');
    assert.notEqual(condition(afterStop, 'ReleaseFailed')?.status, 'True', JSON.stringify(afterStop?.status));

    const deployed = await cr.until('web', 'Deployed by the new leader with the fixed spec', (c) => condition(c, 'Deployed')?.status === 'True' && c.metadata.generation === c.status?.observedGeneration, 120_000);
    const handOverMs = Date.now() - sigterm;
    t.diagnostic(`SIGTERM → Deployed by the standby: ${String(handOverMs)} ms (after the old leader exited: ${String(handOverMs - stopMs)} ms)`);
    assert.ok(handOverMs - stopMs < 30_000, `the standby finished within seconds of the hand-over, took ${String(handOverMs - stopMs)} ms`);
    assert.match(b.logs(), /became leader/);
    const lease = await getJson<Lease>(cluster, ['get', 'lease', LEASE, '-n', ns, '-o', 'json']);
    assert.ok((lease.metadata.annotations?.[HAND_OVER] ?? '').split(',').includes(call ?? ''), `the Lease names the stopped call: ${JSON.stringify(lease.metadata.annotations)}`);
    assert.notEqual(lease.spec?.holderIdentity, '');

    const statuses = (await records(cluster, ns, 'web')).map((r) => r.metadata.labels?.['status']);
    assert.ok(!statuses.some((st) => st?.startsWith('pending-')), `no lock remains: ${statuses.join(', ')}`);
    assert.equal(condition(deployed, 'ReleaseFailed'), undefined, JSON.stringify(deployed.status));
    assert.doesNotMatch(b.logs(), /another operation .* is in progress/);
    assert.equal((await cluster.kubectl(['get', 'configmap', 'web-config', '-n', ns, '-o', 'jsonpath={.data.stuck}'])).stdout, 'false');
  });

  it('the next leader clears at once a lock a stopped call left, and never one a live helm holds', { timeout: 5 * 60_000 }, async (t: TestContext) => {
    const s = await setUp(t, { kind: 'StopLock', chart: CHART });
    const { cluster, ns } = s;
    // A leader of the past holds the Lease while the new operator starts: it stands by, and the
    // locks below are younger than it, so only the hand-over note can clear them early.
    await applyLease(cluster, ns, { holderIdentity: 'previous-leader', leaseDurationSeconds: 3600 });
    const op = await s.start({ args: leaderArgs(ns), noWait: true });
    await waitForLog(op, 'another replica is the leader; standing by');
    const cr = crsOf(cluster, s.kind, ns, op);

    // What a stopped call leaves when helm had to be killed: a pending-install record carrying
    // its call id. Made by the real helm, killed while it waits on the hook.
    const stoppedCall = 'aaaaaaaaaaaa-1';
    const killed = helmInstall(t, cluster, ns, 'web', stoppedCall);
    await waitFor('web pending-install', async () => (await records(cluster, ns, 'web'))[0]?.metadata.labels?.['status'] === 'pending-install', { timeoutMs: 60_000 });
    killed.kill('SIGKILL');
    await killed.catch(() => undefined);
    // A live helm, of someone else, holding the lock of another release.
    const live = helmInstall(t, cluster, ns, 'other', 'bbbbbbbbbbbb-1');
    await waitFor('other pending-install', async () => (await records(cluster, ns, 'other'))[0]?.metadata.labels?.['status'] === 'pending-install', { timeoutMs: 60_000 });
    await cr.apply('web', { stuck: false });
    await cr.apply('other', { stuck: false });
    // These locks stand for the operator's own helm calls, whose records its API proxy stamps
    // for each CR; plain helm's are not, so they are adopted for the CRs (as an installer would),
    // or the operator would refuse them as foreign (records.test.ts) before looking at the lock.
    const adopt = await execa(process.execPath, [BIN, 'adopt', '--watches-file', op.watchesFile, '--namespace', ns, '--operator-namespace', OPERATOR_NAMESPACE], { env: cluster.env, reject: false });
    assert.equal(adopt.exitCode, 0, `${adopt.stdout}\n${adopt.stderr}`);

    // The previous leader stops: it releases the Lease with its note.
    const released = Date.now();
    await applyLease(cluster, ns, { holderIdentity: '', leaseDurationSeconds: 1, handOver: stoppedCall });
    await waitForLog(op, 'became leader', 30_000);
    await cr.deployed('web', 60_000);
    const tookMs = Date.now() - released;
    t.diagnostic(`lease released → web Deployed: ${String(tookMs)} ms (the time rule alone: helm timeout 5 min + 30 s after the lock was written)`);
    assert.ok(tookMs < 30_000, `within seconds, took ${String(tookMs)} ms`);
    assert.ok((await eventsFor(cluster, ns, 'web')).some((e) => e.reason === 'ReleaseUnlocked'));

    // The live lock stays: the operator saw it and waits.
    await waitForLog(op, '"name":"other"', 30_000);
    await waitFor('the operator to look at other', () => Promise.resolve(/"name":"other".*release has an operation in progress/.test(op.logs())), { timeoutMs: 30_000 });
    assert.equal((await records(cluster, ns, 'other'))[0]?.metadata.labels?.['status'], 'pending-install', 'a live helm’s lock is not removed');
    assert.ok(helmProcessesIn(ns).some((c) => c.includes('other')), 'and that helm still runs');
    live.kill('SIGKILL');
    await live.catch(() => undefined);
  });
});

/** `helm upgrade --install` of the stuck chart, labelled like one of our calls; runs until killed. */
function helmInstall(t: TestContext, cluster: TestCluster, ns: string, release: string, call: string): ReturnType<typeof execa> {
  const proc = execa(cluster.helmBin, ['upgrade', '--install', release, CHART, `--namespace=${ns}`, '--timeout=10m', `--labels=${CALL_LABEL}=${call}`], {
    env: cluster.env,
    extendEnv: false,
    reject: false,
    stdin: 'ignore',
  });
  t.after(() => {
    proc.kill('SIGKILL');
  });
  return proc;
}

/** Writes the Lease as another replica would (create or replace). */
async function applyLease(cluster: TestCluster, ns: string, o: { holderIdentity: string; leaseDurationSeconds: number; handOver?: string }): Promise<void> {
  const now = new Date().toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
  const lease = {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name: LEASE, namespace: ns, ...(o.handOver === undefined ? {} : { annotations: { [HAND_OVER]: o.handOver } }) },
    spec: { holderIdentity: o.holderIdentity, leaseDurationSeconds: o.leaseDurationSeconds, acquireTime: now, renewTime: now, leaseTransitions: 0 },
  };
  await cluster.kubectl(['apply', '--server-side', '--force-conflicts', '--field-manager=previous-leader', '-f', '-'], { input: JSON.stringify(lease) });
}
