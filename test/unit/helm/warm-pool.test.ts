/**
 * The warm pool's side of the protocol, against a fake worker (test/unit/fakes/fake-warm-helm.ts)
 * that runs the fake helm per call: queueing, one call per worker, timeouts, deaths, aborts, the
 * call's environment, start-up failures and the choice of mode. That the real chartpilot-helm
 * keeps calls apart is helm-worker's own test suite; that it runs chartpilot's calls, the
 * integration tests'.
 */
import assert from 'node:assert/strict';
import { chmod, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';

import { createHelmClient } from '../../../src/helm/cli-client.js';
import { HelmKilledError, HelmProcessDied, type RunOptions } from '../../../src/helm/exec.js';
import { chooseHelm, WarmHelmUnavailable } from '../../../src/helm/helm-mode.js';
import { StoppedCalls } from '../../../src/helm/stopped-calls.js';
import { HelmError } from '../../../src/helm/types.js';
import { WarmHelmPool, type WarmPoolOptions, type WorkerEvent } from '../../../src/helm/warm-pool.js';
import { WorkerStartError } from '../../../src/helm/warm-worker.js';
import { ReleaseLabels } from '../../../src/engines/helm/names.js';
import { HelmCallInterrupted, HelmCallsStopped } from '../../../src/engines/helm/ports.js';

const FIXTURES = fileURLToPath(new URL('../../../../test/fixtures/helm/', import.meta.url));
const FAKE_HELM = join(FIXTURES, 'fake-helm.sh');
const FAKE_WORKER = join(FIXTURES, 'fake-warm-helm.sh');
await chmod(FAKE_HELM, 0o755);
await chmod(FAKE_WORKER, 0o755);

interface Recorded {
  argv: string[];
  env: Record<string, string>;
  dir: string;
  pid: number;
}

interface Fixture {
  dir: string;
  pool: WarmHelmPool;
  events: WorkerEvent[];
  /** Options for a call: the fake helm records into `dir`; `env` adds to the call's environment. */
  opts(env?: Record<string, string>, more?: Partial<RunOptions>): RunOptions;
  /** What the worker saw, per call, in the order the calls were made. */
  recorded(): Promise<Recorded[]>;
}

async function fixture(t: TestContext, workerEnv: Record<string, string> = {}, more: Partial<WarmPoolOptions> = {}): Promise<Fixture> {
  const dir = await mkdtemp(join(tmpdir(), 'chartpilot-warm-pool-'));
  const events: WorkerEvent[] = [];
  const pool = new WarmHelmPool({
    bin: FAKE_WORKER,
    size: 2,
    env: { ...process.env, FAKE_WORKER_NODE: process.execPath, FAKE_WORKER_HELM: FAKE_HELM, ...workerEnv },
    readyTimeoutMs: 10_000,
    log: (e) => events.push(e),
    ...more,
  });
  t.after(async () => {
    await pool.close(0);
    await rm(dir, { recursive: true, force: true });
  });
  return {
    dir,
    pool,
    events,
    opts: (env = {}, extra = {}) => ({ helmBin: FAKE_WORKER, env: { FAKE_HELM_DIR: dir, ...env }, timeoutMs: 20_000, action: 'upgrade', killGraceMs: 300, ...extra }),
    recorded: async () => {
      const files = (await readdir(dir)).filter((f) => f.startsWith('worker-'));
      const all = await Promise.all(files.map(async (f) => JSON.parse(await readFile(join(dir, f), 'utf8')) as Recorded));
      return all.sort((a, b) => Number(a.env['CALL'] ?? 0) - Number(b.env['CALL'] ?? 0));
    },
  };
}

async function until(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

const running = (dir: string) => async () => (await readdir(dir)).some((n) => n.endsWith('.running'));

describe('WarmHelmPool', () => {
  it('starts workers only when calls need them, at most size, each running one call at a time', async (t) => {
    const f = await fixture(t);
    assert.equal(f.pool.running, 0, 'lazily: no worker before the first call');
    // The first two wait for each other, so a slow second worker start cannot leave all to the first.
    const calls = [1, 2, 3, 4, 5].map((n) => f.pool.run(['upgrade', `r${String(n)}`], f.opts({ CALL: String(n), FAKE_HELM_BARRIER: 'first:2' })));
    await Promise.all(calls);
    const rec = await f.recorded();
    assert.deepEqual(rec.map((r) => r.argv[1]), ['r1', 'r2', 'r3', 'r4', 'r5']);
    const pids = new Set(rec.map((r) => r.pid));
    assert.equal(pids.size, 2, 'two workers served five calls');
    assert.equal(f.pool.running, 2);
    assert.deepEqual(f.events.filter((e) => e.event === 'started').length, 2);
    // The fake worker exits (and the call fails) if a second call reaches it while one runs: none did.
    assert.deepEqual(f.events.filter((e) => e.event === 'exited'), []);
  });

  it("passes the call's environment as execa's extendEnv does: ours plus the call's, nothing of the worker's or the last call's", async (t) => {
    const f = await fixture(t, { WORKER_OWN: 'worker-only' }, { size: 1 });
    process.env['CHARTPILOT_TEST_PROCESS_VAR'] = 'from-the-operator';
    t.after(() => delete process.env['CHARTPILOT_TEST_PROCESS_VAR']);
    await f.pool.run(['status', 'a'], f.opts({ CALL: '1', ONLY_FIRST: 'x', KUBECONFIG: '/first' }));
    await f.pool.run(['status', 'b'], f.opts({ CALL: '2' }));
    const [first, second] = await f.recorded();
    assert.ok(first && second);
    assert.equal(first.pid, second.pid, 'the same worker ran both');
    assert.equal(first.env['ONLY_FIRST'], 'x');
    assert.equal(first.env['KUBECONFIG'], '/first');
    assert.equal(second.env['ONLY_FIRST'], undefined);
    assert.equal(second.env['KUBECONFIG'], process.env['KUBECONFIG']);
    assert.equal(second.env['CHARTPILOT_TEST_PROCESS_VAR'], 'from-the-operator');
    assert.equal(second.env['PATH'], process.env['PATH']);
    assert.equal(second.env['WORKER_OWN'], undefined);
    assert.equal(second.env['CHARTPILOT_HELM_WORKER'], undefined);
    assert.equal(second.dir, process.cwd());
  });

  it("maps helm's exit code and stderr as for a process: typed HelmErrors, values redacted", async (t) => {
    const f = await fixture(t);
    await assert.rejects(
      f.pool.run(['upgrade', 'web'], f.opts({ FAKE_HELM_MODE: 'fail', FAKE_HELM_STDERR: join(FIXTURES, 'stderr/upgrade-locked.txt') })),
      (err: unknown) => err instanceof HelmError && err.kind === 'locked' && err.action === 'upgrade',
    );
    await assert.rejects(
      f.pool.run(['template', 'web'], f.opts({ FAKE_HELM_MODE: 'fail', FAKE_HELM_STDERR: join(FIXTURES, 'stderr/template-schema-pattern.txt') }, { secrets: ['hunter2'] })),
      (err: unknown) => err instanceof HelmError && err.kind === 'render' && !err.message.includes('hunter2'),
    );
    const ok = await f.pool.run(['upgrade', 'web'], f.opts({ FAKE_HELM_STDOUT: join(FIXTURES, 'upgrade-install.json') }));
    assert.equal(ok.stdout, await readFile(join(FIXTURES, 'upgrade-install.json'), 'utf8'));
  });

  it('time up: the call is cancelled; a worker that answers the cancel stays', async (t) => {
    const f = await fixture(t, {}, { size: 1 });
    // The worker's pid is read from the calls before and after: on a loaded machine the timed-out
    // call can be cancelled before its fake helm has recorded anything.
    await f.pool.run(['status', 'warm-up'], f.opts({ CALL: '0' }));
    await assert.rejects(f.pool.run(['upgrade', 'web'], f.opts({ CALL: '1', FAKE_HELM_MODE: 'wait' }, { timeoutMs: 300, killGraceMs: 10_000 })), (err: unknown) => {
      assert.ok(err instanceof HelmKilledError);
      assert.equal(err.kind, 'timeout');
      assert.equal(err.message, 'helm upgrade timed out after 0.3s');
      return true;
    });
    await f.pool.run(['status', 'web'], f.opts({ CALL: '2' }));
    const recorded = await f.recorded();
    const before = recorded[0];
    const after = recorded.at(-1);
    assert.ok(before !== undefined && after !== undefined && before !== after);
    assert.equal(before.pid, after.pid, 'same worker after a cancelled call');
    assert.deepEqual(f.events.map((e) => e.event), ['started']);
  });

  it('time up and the cancel not honoured: the worker is killed after the grace and replaced', async (t) => {
    const f = await fixture(t, { FAKE_WORKER_IGNORE_CANCEL: '1' }, { size: 1 });
    // A worker started first: the call's time counts from its submission, and a worker start on a
    // busy machine can take longer than the time given to the call.
    await f.pool.run(['status', 'warm-up'], f.opts({ CALL: '0' }));
    const started = Date.now();
    await assert.rejects(f.pool.run(['upgrade', 'web'], f.opts({ CALL: '1', FAKE_HELM_MODE: 'wait' }, { timeoutMs: 1000, killGraceMs: 300 })), HelmKilledError);
    assert.ok(Date.now() - started < 5000, 'SIGKILL followed the grace');
    await f.pool.run(['status', 'web'], f.opts({ CALL: '2' }));
    const [, a, b] = await f.recorded();
    assert.ok(a && b);
    assert.notEqual(a.pid, b.pid, 'a new worker ran the next call');
    assert.throws(() => process.kill(a.pid, 0), 'the old worker is gone');
    const exited = f.events.find((e) => e.event === 'exited');
    assert.deepEqual(exited, { event: 'exited', pid: a.pid, how: 'killed by SIGKILL', why: 'timeout' });
    const replacement = f.events.filter((e) => e.event === 'started')[1];
    assert.ok(replacement?.event === 'started');
    assert.equal(replacement.replaces, a.pid);
    assert.equal(replacement.pid, b.pid);
  });

  it('a worker dying mid-call fails the call like a helm that died, and a new worker takes the next', async (t) => {
    const f = await fixture(t, {}, { size: 1 });
    await assert.rejects(f.pool.run(['upgrade', 'web'], f.opts({ CALL: '1', FAKE_HELM_MODE: 'wait', FAKE_WORKER_DIE: '1' })), (err: unknown) => {
      assert.ok(err instanceof HelmProcessDied);
      assert.equal(err.kind, 'failed');
      assert.match(err.message, /^helm upgrade: the warm helm worker \(.*\) died during the call \(exit code 3\); a new one replaces it$/);
      return true;
    });
    await f.pool.run(['status', 'web'], f.opts({ CALL: '2' }));
    const [a, b] = await f.recorded();
    assert.notEqual(a?.pid, b?.pid);
    assert.ok(f.events.some((e) => e.event === 'exited' && e.why === 'died'));
  });

  it('an install whose worker died is a stopped call: its lock may be cleared at once', async (t) => {
    const f = await fixture(t, {}, { size: 1 });
    const client = createHelmClient({ helmBin: FAKE_WORKER, env: { FAKE_HELM_DIR: f.dir, FAKE_HELM_MODE: 'wait', FAKE_WORKER_DIE: '1' }, runner: (args, o) => f.pool.run(args, o), curlBin: null });
    t.after(() => client.close());
    const stopped = new StoppedCalls('0123456789ab');
    let label: string | undefined;
    const tracked = stopped.track({
      ...client,
      upgradeInstall: (req) => {
        label = req.releaseLabels?.[ReleaseLabels.call];
        return client.upgradeInstall(req);
      },
    });
    await assert.rejects(tracked.upgradeInstall({ release: 'web', namespace: 'ns', chart: '/c', values: {}, timeoutMs: 20_000 }), HelmProcessDied);
    assert.ok(label !== undefined);
    assert.deepEqual(stopped.list(), [label]);
  });

  it('an aborted signal cancels a running call; it rejects as interrupted once the worker answered', async (t) => {
    const f = await fixture(t, {}, { size: 1 });
    const stop = new AbortController();
    const call = f.pool.run(['upgrade', 'web'], f.opts({ FAKE_HELM_MODE: 'wait' }, { signal: stop.signal, killGraceMs: 10_000 }));
    await until(running(f.dir));
    const aborted = Date.now();
    stop.abort();
    await assert.rejects(call, (err: unknown) => err instanceof HelmCallInterrupted && err.message === 'helm upgrade was stopped (cancelled): the operator is stopping');
    assert.ok(Date.now() - aborted < 5000, 'the cancel ended it, well before the grace');
    assert.deepEqual(f.events.map((e) => e.event), ['started'], 'the worker stays');
  });

  it('an abort the worker does not honour kills it after the grace (interrupted, SIGKILL) and replaces it', async (t) => {
    const f = await fixture(t, { FAKE_WORKER_IGNORE_CANCEL: '1' }, { size: 1 });
    const stop = new AbortController();
    const call = f.pool.run(['upgrade', 'web'], f.opts({ FAKE_HELM_MODE: 'wait' }, { signal: stop.signal, killGraceMs: 300 }));
    await until(running(f.dir));
    stop.abort();
    await assert.rejects(call, (err: unknown) => err instanceof HelmCallInterrupted && /\(SIGKILL\)/.test(err.message));
    assert.ok(f.events.some((e) => e.event === 'exited' && e.why === 'stopped'));
    await until(() => Promise.resolve(f.events.filter((e) => e.event === 'started').length === 2));
  });

  it('a worker that answers a cancel with 143 and exits gets no other call: the next one runs on its replacement', async (t) => {
    const f = await fixture(t, { FAKE_WORKER_CANCEL_EXITS: '1' }, { size: 1 });
    const stop = new AbortController();
    const call = f.pool.run(['status', 'web'], f.opts({ CALL: '1', FAKE_HELM_MODE: 'wait' }, { signal: stop.signal, action: 'status' }));
    await until(running(f.dir));
    stop.abort();
    // Queued at once: it must not reach the worker that is going.
    const next = f.pool.run(['status', 'next'], f.opts({ CALL: '2' }, { action: 'status' }));
    await assert.rejects(call, (err: unknown) => err instanceof HelmCallInterrupted && err.message === 'helm status was stopped (cancelled): the operator is stopping');
    await next;
    const [a, b] = await f.recorded();
    assert.ok(a && b);
    assert.notEqual(a.pid, b.pid);
    assert.ok(f.events.some((e) => e.event === 'exited' && e.pid === a.pid && e.why === 'stopped'));
  });

  it('a call waiting for a worker: aborted, it is refused as never started; out of time, it times out', async (t) => {
    const f = await fixture(t, {}, { size: 1 });
    const busy = f.pool.run(['upgrade', 'busy'], f.opts({ FAKE_HELM_MODE: 'wait' }, { timeoutMs: 2000, killGraceMs: 5000 }));
    await until(running(f.dir));
    const stop = new AbortController();
    const waiting = f.pool.run(['status', 'waiting'], f.opts({}, { signal: stop.signal, action: 'status' }));
    const late = f.pool.run(['status', 'late'], f.opts({}, { timeoutMs: 200, action: 'status' }));
    stop.abort();
    await assert.rejects(waiting, (err: unknown) => err instanceof HelmCallsStopped && !(err instanceof HelmCallInterrupted));
    await assert.rejects(late, (err: unknown) => err instanceof HelmKilledError && err.action === 'status');
    await assert.rejects(busy, HelmKilledError);
    assert.deepEqual((await f.recorded()).map((r) => r.argv[1]), ['busy'], 'neither waiting call reached a worker');
  });

  it('a worker idle for idleMs ends, all but the last; the next wave starts them again', async (t) => {
    const f = await fixture(t, {}, { size: 3, idleMs: 300 });
    // CALL orders the records: numbers, first wave 1–3, second 11–13.
    const wave = async (from: number): Promise<Set<number>> => {
      const calls = [from, from + 1, from + 2];
      // The three wait for each other: three calls at once whatever the machine's load.
      await Promise.all(calls.map((n) => f.pool.run(['upgrade', `r${String(n)}`], f.opts({ CALL: String(n), FAKE_HELM_BARRIER: `wave${String(from)}:3` }))));
      return new Set((await f.recorded()).filter((r) => calls.includes(Number(r.env['CALL']))).map((r) => r.pid));
    };
    const first = await wave(1);
    assert.equal(first.size, 3, 'three calls at once: three workers');
    await until(() => Promise.resolve(f.pool.running === 1), 5000);
    const idleExits = f.events.filter((e) => e.event === 'exited' && e.why === 'idle');
    assert.equal(idleExits.length, 2, 'two ended as idle, the last one stays');
    // It stays for good: no further idle exit while nothing runs.
    await new Promise((r) => setTimeout(r, 700));
    assert.equal(f.pool.running, 1);
    const kept = [...first].filter((pid) => !idleExits.some((e) => e.event === 'exited' && e.pid === pid));
    assert.equal(kept.length, 1);
    const second = await wave(11);
    assert.equal(second.size, 3, 'the next wave has three workers again');
    assert.ok(second.has(kept[0] ?? -1), 'the kept worker serves a call of the next wave warm');
    assert.ok(!f.events.some((e) => e.event === 'exited' && e.why !== 'idle'), 'no worker died or was killed');
  });

  it('a worker in use is not ended as idle, and one call after another keeps one worker', async (t) => {
    const f = await fixture(t, {}, { size: 2, idleMs: 250 });
    for (let i = 0; i < 4; i++) {
      await f.pool.run(['upgrade', `s${String(i)}`], f.opts({ CALL: String(i), FAKE_HELM_SLEEP: '0.2' }));
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(new Set((await f.recorded()).map((r) => r.pid)).size, 1, 'serial calls: one worker throughout');
    assert.deepEqual(f.events.filter((e) => e.event === 'exited'), []);
  });

  it('a signal aborted before the call, or a closed pool, starts nothing', async (t) => {
    const f = await fixture(t);
    const stop = new AbortController();
    stop.abort();
    await assert.rejects(f.pool.run(['status', 'x'], f.opts({}, { signal: stop.signal })), HelmCallsStopped);
    await f.pool.close(0);
    await assert.rejects(f.pool.run(['status', 'x'], f.opts()), HelmCallsStopped);
    assert.equal(f.pool.running, 0);
  });

  it('the whole client runs through it as through processes (upgrade parsed, version asked once)', async (t) => {
    const f = await fixture(t);
    const client = createHelmClient({ helmBin: FAKE_WORKER, env: { FAKE_HELM_DIR: f.dir, FAKE_HELM_STDOUT: join(FIXTURES, 'upgrade-install.json') }, runner: (args, o) => f.pool.run(args, o), curlBin: null });
    t.after(() => client.close());
    const release = await client.upgradeInstall({ release: 'web', namespace: 'ns', chart: '/c', values: { a: 1 }, timeoutMs: 20_000 });
    assert.equal(release.status, 'deployed');
    assert.equal(await client.version(), 'v4.1.4');
  });

  it('start-up failures say what is wrong: a plain helm, a crash, silence', async (t) => {
    const usage = await fixture(t, { FAKE_WORKER_START: 'usage' });
    await assert.rejects(usage.pool.warmUp(), (err: unknown) => err instanceof WorkerStartError && /is not a chartpilot-helm/.test(err.message));
    const crash = await fixture(t, { FAKE_WORKER_START: 'crash' });
    await assert.rejects(crash.pool.warmUp(), (err: unknown) => err instanceof WorkerStartError && /exited before it was ready \(exit code 2\); it said: panic: something broke/.test(err.message));
    const silent = await fixture(t, { FAKE_WORKER_START: 'silent' }, { readyTimeoutMs: 300 });
    await assert.rejects(silent.pool.warmUp(), (err: unknown) => err instanceof WorkerStartError && /did not say it was ready within 300 ms/.test(err.message));
    // A call that needs a worker that cannot start fails at once, as a missing helm does.
    await assert.rejects(crash.pool.run(['status', 'x'], crash.opts({}, { action: 'status' })), (err: unknown) => err instanceof HelmError && err.kind === 'failed' && /^helm status: .*exited before it was ready/.test(err.message));
    assert.ok(crash.events.some((e) => e.event === 'start-failed'));
  });
});

describe('chooseHelm', () => {
  const poolOpts = (env: Record<string, string>) => ({ size: 1, env: { ...process.env, FAKE_WORKER_NODE: process.execPath, FAKE_WORKER_HELM: FAKE_HELM, ...env }, readyTimeoutMs: 10_000 });
  const noWarm = { PATH: '/nonexistent', CHARTPILOT_CACHE: '/nonexistent' };

  it('HELM_BIN that is a chartpilot-helm is kept warm', async (t) => {
    const chosen = await chooseHelm({ requested: undefined, env: { ...noWarm, HELM_BIN: FAKE_WORKER }, pool: poolOpts({}) });
    assert.ok(chosen.mode === 'warm');
    t.after(() => chosen.pool.close(0));
    assert.equal(chosen.helmVersion, 'v4.1.4');
    assert.equal(chosen.pool.running, 1, 'the first worker is up');
  });

  it('a HELM_BIN that does not come up as a worker falls back to cli, with the reason', async () => {
    const chosen = await chooseHelm({ requested: undefined, env: { ...noWarm, HELM_BIN: FAKE_WORKER }, pool: poolOpts({ FAKE_WORKER_START: 'usage' }) });
    assert.ok(chosen.mode === 'cli');
    assert.deepEqual(chosen.found, { bin: FAKE_WORKER, source: 'HELM_BIN' });
    assert.match(chosen.why ?? '', /could not be kept warm: .* is not a chartpilot-helm/);
  });

  it('no chartpilot-helm anywhere: cli with the reason; --helm-mode=warm refuses instead', async () => {
    const chosen = await chooseHelm({ requested: undefined, env: noWarm, pool: poolOpts({}), packageRoot: '/nonexistent' });
    assert.deepEqual(chosen, { mode: 'cli', found: undefined, why: 'no chartpilot-helm on PATH or in the chartpilot cache (build it: devcluster/provision.sh helm-worker)' });
    await assert.rejects(chooseHelm({ requested: 'warm', env: noWarm, pool: poolOpts({}) }), (err: unknown) => err instanceof WarmHelmUnavailable && /--helm-mode=cli/.test(err.message));
    await assert.rejects(
      chooseHelm({ requested: 'warm', env: { ...noWarm, HELM_BIN: FAKE_WORKER }, pool: poolOpts({ FAKE_WORKER_START: 'crash' }) }),
      (err: unknown) => err instanceof WarmHelmUnavailable && /exited before it was ready/.test(err.message),
    );
  });

  it('--helm-mode=cli never starts a worker', async () => {
    const chosen = await chooseHelm({ requested: 'cli', env: { ...noWarm, HELM_BIN: FAKE_WORKER }, pool: poolOpts({ FAKE_WORKER_START: 'crash' }) });
    assert.deepEqual(chosen, { mode: 'cli', found: { bin: FAKE_WORKER, source: 'HELM_BIN' }, why: undefined });
  });
});
