/**
 * Faults: the operator killed mid-wave, the API server and etcd restarted under it, helm calls
 * that hang. Each test ends with the cluster in the state the CRs ask for and nothing stuck.
 *
 * The control-plane restarts run on a private control plane started by this file: restarting the
 * run's shared API server would break the test files running next to this one.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync, chmodSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it, type TestContext } from 'node:test';
import { execa } from 'execa';
import { restartComponent, startControlPlane, stopControlPlane } from '../../devcluster/control-plane.js';
import { installCrd, resourceOf, testKind, type TestKind } from './crd.js';
import { condition, crJson, crsOf, eventsFor, getCr, helmList } from './crs.js';
import { fixtureChart } from './fixtures.js';
import { newNamespace, otherCluster, testCluster, type TestCluster } from './harness.js';
import { startOperator, type RunningOperator } from './operator.js';
import { operatorScenario, setUp } from './scenario.js';
import { waitFor } from './wait.js';
import { convergenceProblems, prng, waitConverged, type ChurnResult } from '../soak/churn.js';
import { descendants, isAlive, killTree } from '../soak/procfs.js';

const SETTINGS_CHART = fixtureChart('settings');
const SLOW_HOOK_CHART = fixtureChart('slow-hook');

/** One `kubectl apply` for many CRs of the settings chart (name → color). */
async function applySettings(cluster: TestCluster, k: TestKind, ns: string, colors: ReadonlyMap<string, string>): Promise<void> {
  const items = [...colors].map(([name, color]) => JSON.parse(crJson(k, ns, name, { settings: { color } })) as unknown);
  await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items }) });
}

function modelOf(colors: ReadonlyMap<string, string>, absent: Iterable<string> = []): ChurnResult {
  return { present: new Map(colors), absent: new Set(absent), ops: { create: 0, update: 0, delete: 0, refused: 0 } };
}

interface ReleaseRecord {
  metadata: { name: string; labels?: Record<string, string> };
}

/** Release records (Helm's Secrets) in ns by status, e.g. {deployed: 40, 'pending-install': 3}. */
async function recordStatuses(cluster: TestCluster, ns: string): Promise<Record<string, number>> {
  const r = await cluster.kubectl(['get', 'secrets', '-n', ns, '-l', 'owner=helm', '-o', 'json']);
  const out: Record<string, number> = {};
  for (const s of (JSON.parse(r.stdout) as { items: ReleaseRecord[] }).items) {
    const st = s.metadata.labels?.status ?? '?';
    out[st] = (out[st] ?? 0) + 1;
  }
  return out;
}

const upgradeCalls = (op: RunningOperator): number => op.helmCalls().filter((l) => l.startsWith('upgrade ')).length;

/**
 * Follows Helm's release records in ns (a `kubectl get --watch`), so a kill can land right after
 * a helm process wrote a pending-install/-upgrade record: the moment whose recovery matters.
 */
function watchPendingRecords(t: TestContext, cluster: TestCluster, ns: string): PendingRecords {
  const proc = execa(
    cluster.kubectlBin,
    ['get', 'secrets', '-n', ns, '-l', 'owner=helm', '--watch-only', '--output-watch-events', '-o', 'jsonpath={.type} {.object.metadata.labels.status}{"\\n"}'],
    { env: cluster.env, extendEnv: false, buffer: false, reject: false, stdin: 'ignore' },
  );
  t.after(() => {
    proc.kill('SIGKILL');
  });
  let wake: (() => void) | undefined;
  let partial = '';
  let deleted = 0;
  proc.stdout.on('data', (chunk: Buffer) => {
    const lines = (partial + chunk.toString()).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      const [type, status] = line.split(' ');
      if (!status?.startsWith('pending-')) continue;
      // Helm turns its own lock into the outcome (MODIFIED); only an unlock deletes one.
      if (type === 'DELETED') deleted++;
      else wake?.();
    }
  });
  return {
    next: (timeoutMs) =>
      new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => {
          wake = undefined;
          resolve(false);
        }, timeoutMs);
        wake = () => {
          clearTimeout(timer);
          wake = undefined;
          resolve(true);
        };
      }),
    deleted: () => deleted,
  };
}

/** The namespace's helm records as the API server tells them, from a watch. */
interface PendingRecords {
  /** Resolves true at the next pending record written (false after `timeoutMs`). */
  next(timeoutMs: number): Promise<boolean>;
  /** Pending records deleted so far: each one an unlock, whether or not its log line outlived a SIGKILL. */
  deleted(): number;
}

interface KillPlan {
  readonly t: TestContext;
  readonly cluster: TestCluster;
  readonly ns: string;
  readonly rnd: () => number;
  readonly pending: PendingRecords;
  /** Kill after 1..maxCalls new helm upgrade calls, at the next pending record. */
  readonly maxCalls: number;
  readonly done: () => Promise<boolean>;
  /** 'tree': the operator and its helm children (a crashed pod); 'operator': the operator only. */
  readonly how: 'tree' | 'operator';
}

/**
 * Kills the operator at a random moment of a wave: after a random number of new `helm upgrade`
 * calls, right when a helm process has just written a pending record (or after 20 s without
 * one). Returns the number of pending records left behind and the pids left running.
 */
async function killMidWave(op: RunningOperator, plan: KillPlan): Promise<{ pending: number; orphans: number[] }> {
  const { t, cluster, ns } = plan;
  const from = upgradeCalls(op);
  const want = 1 + Math.floor(plan.rnd() * plan.maxCalls);
  let nextDoneCheck = Date.now() + 3000;
  const wave = { finished: false };
  await waitFor(
    `${String(want)} more helm upgrade calls`,
    async () => {
      if (upgradeCalls(op) - from >= want) return true;
      // The wave may finish before `want` calls: look (four kubectl calls) only every few seconds.
      if (Date.now() < nextDoneCheck) return false;
      nextDoneCheck = Date.now() + 3000;
      wave.finished = await plan.done();
      return wave.finished;
    },
    { timeoutMs: 180_000, intervalMs: 50 },
  );
  const atPending = !wave.finished && (await plan.pending.next(20_000));
  const pid = op.process.pid;
  assert.ok(pid !== undefined);
  let children = 0;
  let orphans: number[] = [];
  if (plan.how === 'tree') {
    children = (await killTree(pid)).length - 1;
  } else {
    orphans = descendants(pid).map((p) => p.pid);
    children = orphans.length;
    process.kill(pid, 'SIGKILL');
  }
  await op.stop('SIGKILL');
  const records = await recordStatuses(cluster, ns);
  const pending = Object.entries(records).filter(([s]) => s.startsWith('pending-')).reduce((n, [, c]) => n + c, 0);
  t.diagnostic(
    `SIGKILL (${plan.how}) after ${String(upgradeCalls(op) - from)} upgrade calls${atPending ? ', at a pending record' : ''}: ` +
      `${String(children)} child processes ${plan.how === 'tree' ? 'killed with it' : 'left running'}; release records ${JSON.stringify(records)}`,
  );
  return { pending, orphans };
}

describe('operator faults', () => {
  it(
    'converges an install wave and an upgrade wave of 50 CRs through repeated SIGKILLs',
    { timeout: 20 * 60_000 },
    async (t) => {
      const setup = await setUp(t, { kind: 'KillWave', chart: SETTINGS_CHART, operator: { args: ['--max-concurrent-reconciles', '10'] } });
      const { cluster, ns, kind: k } = setup;
      const seed = Number(process.env.CHARTPILOT_FAULTS_SEED ?? Date.now() % 1_000_000);
      t.diagnostic(`seed ${String(seed)} (set CHARTPILOT_FAULTS_SEED to replay)`);
      const rnd = prng(seed);

      const names = Array.from({ length: 50 }, (_, i) => `w${String(i).padStart(2, '0')}`);
      const v1 = new Map(names.map((n) => [n, `v1-${n}`]));
      const v2 = new Map(names.map((n) => [n, `v2-${n}`]));
      const converged = async (colors: ReadonlyMap<string, string>): Promise<boolean> =>
        (await convergenceProblems(cluster, k, ns, modelOf(colors))).length === 0;

      const pending = watchPendingRecords(t, cluster, ns);
      let locksLeft = 0;

      let op = await setup.start();
      /** Applies `colors`, kills the operator three times mid-wave, and waits until all converged. */
      const killedWave = async (what: string, colors: ReadonlyMap<string, string>): Promise<void> => {
        const started = Date.now();
        await applySettings(cluster, k, ns, colors);
        for (let i = 0; i < 3; i++) {
          locksLeft += (await killMidWave(op, { t, cluster, ns, rnd, pending, maxCalls: 12, done: () => converged(colors), how: 'tree' })).pending;
          op = await setup.restart(op);
        }
        const ms = await waitConverged(cluster, k, ns, modelOf(colors), 300_000, op);
        t.diagnostic(`${what} wave converged ${String(Math.round((Date.now() - started) / 1000))} s after it began (${String(Math.round(ms / 1000))} s after the last restart)`);
      };

      // Install wave, killed three times.
      await killedWave('install', v1);

      const revisionsAfterInstall = new Map<string, number>();
      const list1 = await helmList(cluster, ns);
      assert.equal(list1.length, 50, `one release per CR: ${list1.map((r) => r.name).join(',')}`);
      for (const r of list1) {
        assert.equal(r.status, 'deployed', `${r.name} is ${r.status}`);
        const cr = await getCr(cluster, k, ns, r.name);
        assert.equal(condition(cr, 'Deployed')?.status, 'True', `${r.name} Deployed`);
        const rev = cr?.status?.deployedRelease?.revision ?? 0;
        assert.ok(rev >= 1, `${r.name} revision ${String(rev)}`);
        assert.equal(rev, Number(r.revision), `${r.name}: status revision matches helm's`);
        revisionsAfterInstall.set(r.name, rev);
      }

      // Upgrade wave: every spec changes, killed three times again.
      await killedWave('upgrade', v2);

      const list2 = await helmList(cluster, ns);
      assert.equal(list2.length, 50);
      for (const r of list2) {
        assert.equal(r.status, 'deployed', `${r.name} is ${r.status}`);
        const cr = await getCr(cluster, k, ns, r.name);
        const rev = cr?.status?.deployedRelease?.revision ?? 0;
        assert.ok(rev > (revisionsAfterInstall.get(r.name) ?? Infinity), `${r.name}: revision ${String(rev)} after the upgrade wave`);
        assert.equal(rev, Number(r.revision), `${r.name}: status revision matches helm's`);
      }
      const records = await recordStatuses(cluster, ns);
      assert.deepEqual(Object.keys(records).sort(), ['deployed', 'superseded'].filter((s) => s in records), JSON.stringify(records));
      assert.equal(records.deployed, 50, JSON.stringify(records));
      // operator.log holds the output of every run in this dir.
      // The API server's count: a line logged just before a SIGKILL may never have left the process.
      const unlocked = pending.deleted();
      const told = op.logs().split('\n').filter((l) => l.includes('removed stale pending revision')).length;
      t.diagnostic(`release records at the end ${JSON.stringify(records)}; kills left ${String(locksLeft)} pending records, restarts removed ${String(unlocked)} stale locks (${String(told)} logged)`);
      if (locksLeft > 0) assert.ok(unlocked > 0, 'pending records left by a kill were unlocked');
    },
  );

  it(
    'converges when only the operator is killed and its helm children finish on their own',
    { timeout: 15 * 60_000 },
    async (t) => {
      // Outside a container (a VM service, `chartpilot run` on a laptop) SIGKILL reaches the
      // operator only: its helm processes keep going and write their records after a new operator
      // has started and may already have taken their pending records for a crash's leftovers.
      const setup = await setUp(t, { kind: 'KillOrphans', chart: SETTINGS_CHART, operator: { args: ['--max-concurrent-reconciles', '10'] } });
      const { cluster, ns, kind: k } = setup;
      const seed = Number(process.env.CHARTPILOT_FAULTS_SEED ?? Date.now() % 1_000_000) + 7;
      const rnd = prng(seed);
      const pending = watchPendingRecords(t, cluster, ns);
      let op = await setup.start();
      const names = Array.from({ length: 20 }, (_, i) => `o${String(i).padStart(2, '0')}`);
      const orphans: number[] = [];
      for (const version of ['v1', 'v2']) {
        const colors = new Map(names.map((n) => [n, `${version}-${n}`]));
        await applySettings(cluster, k, ns, colors);
        const done = async (): Promise<boolean> => (await convergenceProblems(cluster, k, ns, modelOf(colors))).length === 0;
        for (let i = 0; i < 2; i++) {
          orphans.push(...(await killMidWave(op, { t, cluster, ns, rnd, pending, maxCalls: 8, done, how: 'operator' })).orphans);
          op = await setup.restart(op);
        }
        await waitConverged(cluster, k, ns, modelOf(colors), 300_000, op);
      }
      await waitFor('the orphaned helm processes to finish', () => Promise.resolve(!orphans.some(isAlive)), { timeoutMs: 120_000 });
      const list = await helmList(cluster, ns);
      assert.equal(list.length, 20);
      for (const r of list) {
        assert.equal(r.status, 'deployed', `${r.name} is ${r.status}`);
        const cr = await getCr(cluster, k, ns, r.name);
        assert.equal(cr?.status?.deployedRelease?.revision, Number(r.revision), `${r.name}: status revision matches helm's`);
        const vals = JSON.parse((await cluster.helm(['get', 'values', r.name, '-n', ns, '-o', 'json'])).stdout) as { settings?: { color?: string } };
        assert.equal(vals.settings?.color, `v2-${r.name}`, `${r.name}: the deployed revision has the latest values`);
      }
      const records = await recordStatuses(cluster, ns);
      assert.deepEqual(Object.keys(records).filter((s) => s !== 'deployed' && s !== 'superseded'), [], JSON.stringify(records));
      t.diagnostic(`${String(orphans.length)} helm processes outlived their operator; records at the end ${JSON.stringify(records)}`);
    },
  );

  describe('control plane outages (private control plane)', () => {
    let shared: Promise<{ dir: string; cluster: TestCluster }> | undefined;
    const privateCluster = (): Promise<{ dir: string; cluster: TestCluster }> => (shared ??= startPrivateCluster());
    after(async () => {
      if (shared !== undefined) await stopControlPlane((await shared).dir);
    });

    for (const component of ['kube-apiserver', 'etcd'] as const) {
      it(`applies every change made around a ${component} restart and keeps watching`, { timeout: 10 * 60_000 }, async (t) => {
        const { dir, cluster } = await privateCluster();
        const k = testKind(`Outage${component === 'etcd' ? 'Etcd' : 'Api'}`);
        await installCrd(cluster, k);
        const ns = await newNamespace(t, `outage-${component === 'etcd' ? 'etcd' : 'api'}`, cluster);
        // No periodic requeue: after the restart, only a working watch can deliver a change.
        const op = await startOperator(t, cluster, {
          namespaces: [ns],
          watches: [{ kind: k, chart: SETTINGS_CHART }],
          args: ['--reconcile-period', '0', '--helm-timeout', '90s', '--max-concurrent-reconciles', '4'],
        });
        const pid = op.process.pid;
        assert.ok(pid !== undefined);

        const colors = new Map(['a', 'b', 'c', 'd', 'e'].map((n) => [n, 'v1']));
        await applySettings(cluster, k, ns, colors);
        await waitConverged(cluster, k, ns, modelOf(colors), 120_000, op);

        // Right before the outage.
        colors.set('a', 'v2');
        await applySettings(cluster, k, ns, new Map([['a', 'v2']]));

        // During it: keep trying until the API answers again (kubectl fails while it is down).
        const restart = restartComponent(dir, component);
        const restarted = restart.then(() => Date.now());
        const retry = (what: string, args: string[], input?: string): Promise<unknown> =>
          waitFor(
            `${what} to succeed`,
            async () => {
              const r = await cluster.kubectl(['--request-timeout=5s', ...args], { allowFail: true, ...(input === undefined ? {} : { input }) });
              if (r.exitCode === 0) return true;
              if (/NotFound|not found/.test(r.stderr) && args[0] === 'delete') return true;
              throw new Error(r.stderr);
            },
            { timeoutMs: 300_000 },
          );
        const settings = (color: string): unknown => ({ settings: { color } });
        await Promise.all([
          retry('update b', ['apply', '-f', '-'], crJson(k, ns, 'b', settings('v2'))),
          retry('delete c', ['delete', resourceOf(k), 'c', '-n', ns, '--wait=false']),
          retry('create f', ['apply', '-f', '-'], crJson(k, ns, 'f', settings('v1'))),
        ]);
        colors.set('b', 'v2');
        colors.delete('c');
        colors.set('f', 'v1');
        const backAt = await restarted;
        t.diagnostic(`${component} back after the restart; changes made during the outage were accepted`);

        // After it: only a resumed watch can tell the operator about this one.
        colors.set('e', 'v2');
        await applySettings(cluster, k, ns, new Map([['e', 'v2']]));
        const ms = await waitConverged(cluster, k, ns, modelOf(colors, ['c']), 180_000, op);
        t.diagnostic(`all changes applied ${String(Math.round((Date.now() - backAt) / 1000))} s after ${component} was healthy again (${String(Math.round(ms / 1000))} s after the last change)`);
        assert.ok(isAlive(pid), 'the operator rode out the outage without restarting');
        const watchLines = op.logs().split('\n').filter((l) => /list\/watch failed|relisting|watch silent/.test(l)).length;
        t.diagnostic(`informer recovery log lines: ${String(watchLines)}`);
      });
    }
  });

  it('kills a helm call that hangs after --helm-timeout, reports it, and frees the worker', { timeout: 10 * 60_000 }, async (t) => {
    const setup = await setUp(t, { kind: 'HangKill', chart: SETTINGS_CHART, namespace: 'hang' });
    const { cluster, ns } = setup;
    // A HELM_BIN that, for the release "hang" only, becomes a process ignoring SIGTERM: the
    // operator must escalate to SIGKILL after its grace period. Everything else goes to the
    // harness's recording wrapper and the real helm.
    const dir = mkdtempSync(join(tmpdir(), 'chartpilot-op-'));
    const pidFile = join(dir, 'hung.pids');
    const wrapper = join(dir, 'hang-wrapper.sh');
    writeFileSync(
      wrapper,
      `#!/bin/sh\ncase " $* " in\n  " upgrade "*" -- hang "*) echo $$ >> '${pidFile}'; trap '' TERM; exec sleep 120 ;;\nesac\nexec '${join(dir, 'helm-wrapper.sh')}' "$@"\n`,
    );
    chmodSync(wrapper, 0o755);
    const hungPids = (): number[] => (existsSync(pidFile) ? readFileSync(pidFile, 'utf8').split('\n').filter((l) => l !== '').map(Number) : []);
    // A process per call (--helm-mode=cli): the stand-in must see each call's argv. The warm
    // pool's kill of a hung worker has its own test (warm-helm.test.ts).
    const op = await setup.start({ dir, args: ['--helm-timeout', '8s', '--max-concurrent-reconciles', '1', '--helm-mode', 'cli'], env: { HELM_BIN: wrapper } });
    const cr = crsOf(cluster, setup.kind, ns, op);
    t.after(() => {
      // The operator is gone by now (the harness kills it first); its last stand-in may not be.
      for (const p of hungPids()) if (isAlive(p)) process.kill(p, 'SIGKILL');
    });

    const created = Date.now();
    await cr.apply('hang', { settings: { color: 'x' } });
    await cr.apply('ok', { settings: { color: 'y' } });
    const failed = await cr.until('hang', 'ReleaseFailed', (c) => condition(c, 'ReleaseFailed')?.status === 'True', 120_000);
    const tookMs = Date.now() - created;
    const message = condition(failed, 'ReleaseFailed')?.message ?? '';
    assert.equal(condition(failed, 'ReleaseFailed')?.reason, 'InstallError');
    assert.match(message, /timed out after 8s/, message);
    assert.ok(tookMs >= 8000, `reported after ${String(tookMs)} ms, before the timeout`);
    const first = hungPids()[0];
    assert.ok(first !== undefined, 'the hanging stand-in ran');
    await waitFor('the hung helm process to be gone', () => Promise.resolve(!isAlive(first)), { timeoutMs: 15_000 });
    assert.ok((await eventsFor(cluster, ns, 'hang')).some((e) => e.type === 'Warning' && e.reason === 'InstallError' && /timed out/.test(e.message)));

    // One worker, and it was not lost to the hung call.
    await cr.deployed('ok', 120_000);
    assert.equal((await cluster.kubectl(['get', 'configmap', 'ok-settings', '-n', ns, '-o', 'jsonpath={.data.color}'])).stdout, 'y');
    t.diagnostic(`ReleaseFailed after ${String(tookMs)} ms; stand-ins started so far: ${String(hungPids().length)}`);
  });

  it('reports a hook that never completes as a timeout and frees the worker', { timeout: 10 * 60_000 }, async (t) => {
    const { cluster, ns, cr } = await operatorScenario(t, {
      kind: 'SlowHook',
      chart: SLOW_HOOK_CHART,
      // helm's own --timeout is 20 % under this budget: helm needs that much time before its hook
      // wait begins (render, post-render, API calls), or our kill beats its hook-naming message.
      // 8 s left 1.6 s, which a loaded CI machine overran.
      operator: { args: ['--helm-timeout', '20s', '--max-concurrent-reconciles', '1'] },
    });
    await cr.apply('stuck', {});
    // Same kind, hooks disabled for this one: it must still get the single worker.
    await cr.apply('free', {}, { 'helm.sdk.operatorframework.io/install-disable-hooks': 'true' });
    const failed = await cr.until('stuck', 'ReleaseFailed', (c) => condition(c, 'ReleaseFailed')?.status === 'True', 120_000);
    const message = condition(failed, 'ReleaseFailed')?.message ?? '';
    assert.equal(condition(failed, 'ReleaseFailed')?.reason, 'InstallError');
    assert.match(message, /timed out|deadline exceeded|timeout/i, message);
    assert.match(message, /pre-install|hook|Job/i, `the message names what was waited on: ${message}`);
    assert.ok((await eventsFor(cluster, ns, 'stuck')).some((e) => e.type === 'Warning' && e.reason === 'InstallError'));
    await cr.deployed('free', 120_000);
    assert.equal((await cluster.kubectl(['get', 'configmap', 'free-slow', '-n', ns, '-o', 'name'])).stdout.trim(), 'configmap/free-slow');
    t.diagnostic(`stuck: ${message}`);
  });
});

/** A control plane of this test file's own, with a TestCluster handle on it. */
async function startPrivateCluster(): Promise<{ dir: string; cluster: TestCluster }> {
  const base = await testCluster();
  const dir = mkdtempSync(join(tmpdir(), 'chartpilot-faults-cp-'));
  const cp = await startControlPlane({ dir, binDir: base.binDir });
  return { dir, cluster: otherCluster(base, cp.kubeconfig, dir) };
}
