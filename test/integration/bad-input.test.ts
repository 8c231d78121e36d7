/**
 * Bad input: specs that are not values, values the chart's schema refuses, values that look like
 * `--set` syntax or shell, unicode and NUL, huge and deep values, names at and over Helm's limit,
 * and charts that fail to render or render objects the API server rejects. For each: a clear
 * condition and a Warning event on that CR, the operator keeps running and another good CR in the
 * same namespace converges; a bad update to a deployed CR removes nothing.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { condition, eventsFor, helmList, type Cr, type Crs } from './crs.js';
import { REPO_ROOT, SAMPLE_CHART, fixtureChart } from './fixtures.js';
import type { TestCluster } from './harness.js';
import type { RunningOperator } from './operator.js';
import { lineTime, logLines } from './operator-log.js';
import { operatorScenario } from './scenario.js';
import { waitFor } from './wait.js';
import { isAlive } from '../soak/procfs.js';

const BAD_SPECS = join(REPO_ROOT, 'test/fixtures/bad-specs');
const SETTINGS_CHART = fixtureChart('settings');

/** A fixture spec, with `@PWNED@` replaced by `pwned` (a path prefix no file may ever get). */
function fixture(name: string, pwned = ''): unknown {
  return JSON.parse(readFileSync(join(BAD_SPECS, name), 'utf8').replaceAll('@PWNED@', pwned)) as unknown;
}

/** A path prefix in the temp dir; files starting with it would prove a shell ran a value. */
function pwnedPrefix(): string {
  return join(tmpdir(), `chartpilot-pwned-${randomBytes(6).toString('hex')}`);
}

function pwnedFiles(prefix: string): string[] {
  const dir = dirname(prefix);
  const base = basename(prefix);
  return readdirSync(dir).filter((f) => f.startsWith(base));
}

interface Expectation {
  readonly type: 'ReleaseFailed' | 'Irreconcilable';
  readonly reason: string;
  readonly message: RegExp;
}

/** Waits for the condition, then checks its reason and message and the Warning event. */
async function expectRefused(cluster: TestCluster, crs: Crs, name: string, want: Expectation): Promise<Cr> {
  const cr = await crs.until(name, want.type, (c) => condition(c, want.type)?.status === 'True', 120_000);
  const c = condition(cr, want.type);
  assert.equal(c?.reason, want.reason, `${name}: ${want.type} reason`);
  assert.match(c.message, want.message, `${name}: ${want.type} message`);
  await waitFor(
    `a Warning ${want.reason} event on ${name}`,
    async () => (await eventsFor(cluster, crs.ns, name)).some((e) => e.type === 'Warning' && e.reason === want.reason),
    { timeoutMs: 30_000 },
  );
  return cr;
}

/** Deployed, of the current generation, and no ReleaseFailed left. */
async function expectDeployed(crs: Crs, name: string): Promise<Cr> {
  return crs.until(
    name,
    'Deployed',
    (c) => condition(c, 'Deployed')?.status === 'True' && c.status?.observedGeneration === c.metadata.generation && condition(c, 'ReleaseFailed') === undefined,
    120_000,
  );
}

/** The operator is alive and still serves the namespace: a good CR of the kind converges. */
async function expectStillServing(crs: Crs, goodSpec: unknown, op: RunningOperator): Promise<void> {
  const pid = op.process.pid;
  assert.ok(pid !== undefined && isAlive(pid), 'the operator is still running');
  const name = `good-${randomBytes(3).toString('hex')}`;
  await crs.apply(name, goodSpec);
  await expectDeployed(crs, name);
}

async function configMapData(cluster: TestCluster, ns: string, name: string): Promise<Record<string, string> | undefined> {
  const r = await cluster.kubectl(['get', 'configmap', name, '-n', ns, '-o', 'json'], { allowFail: true });
  return r.exitCode === 0 ? ((JSON.parse(r.stdout) as { data?: Record<string, string> }).data ?? {}) : undefined;
}

/** What must not change when a deployed CR gets a bad update: its objects and its release. */
async function snapshot(cluster: TestCluster, ns: string, release: string, objects: readonly string[]): Promise<{ uids: string[]; revision: string }> {
  const uids: string[] = [];
  for (const o of objects) uids.push((await cluster.kubectl(['get', o, '-n', ns, '-o', 'jsonpath={.metadata.uid}'])).stdout);
  const rel = (await helmList(cluster, ns)).find((r) => r.name === release);
  assert.equal(rel?.status, 'deployed');
  return { uids, revision: String(rel.revision) };
}

describe('bad input', () => {
  it('refuses specs that are not maps with Irreconcilable, and such an update removes nothing', { timeout: 10 * 60_000 }, async (t) => {
    const { cluster, ns, op, cr } = await operatorScenario(t, { kind: 'BadShape', chart: SAMPLE_CHART });

    await cr.apply('list', fixture('not-an-object-list.json'));
    await cr.apply('string', fixture('not-an-object-string.json'));
    await expectRefused(cluster, cr, 'list', { type: 'Irreconcilable', reason: 'ReconcileError', message: /spec must be a map.*it is a list/ });
    await expectRefused(cluster, cr, 'string', { type: 'Irreconcilable', reason: 'ReconcileError', message: /spec must be a map.*it is a string/ });
    assert.deepEqual(await helmList(cluster, ns), [], 'nothing installed for them');

    // A deployed CR updated to a list: Irreconcilable, and the release and its objects stay.
    await cr.apply('shop', { message: 'good' });
    await expectDeployed(cr, 'shop');
    const objects = ['deployment/shop', 'service/shop', 'configmap/shop-content'];
    const before = await snapshot(cluster, ns, 'shop', objects);
    await cr.apply('shop', fixture('not-an-object-list.json'));
    const bad = await expectRefused(cluster, cr, 'shop', { type: 'Irreconcilable', reason: 'ReconcileError', message: /spec must be a map/ });
    assert.equal(condition(bad, 'Deployed')?.status, 'True', 'the deployed release is still reported');
    assert.deepEqual(await snapshot(cluster, ns, 'shop', objects), before, 'same objects, same revision');
    assert.equal((await configMapData(cluster, ns, 'shop-content'))?.['index.html'], 'good');

    // Fixing the spec clears the condition.
    await cr.apply('shop', { message: 'good' });
    await cr.until('shop', 'Irreconcilable cleared', (c) => condition(c, 'Irreconcilable') === undefined && condition(c, 'Deployed')?.status === 'True');
    await expectStillServing(cr, { message: 'still here' }, op);
  });

  it('reports values that break values.schema.json with helm’s message; such an update keeps the release', { timeout: 10 * 60_000 }, async (t) => {
    const { cluster, ns, op, cr } = await operatorScenario(t, { kind: 'BadSchema', chart: SAMPLE_CHART });

    await cr.apply('three', fixture('schema-wrong-type.json'));
    await cr.apply('dotted', fixture('schema-dotted-key.json'));
    await expectRefused(cluster, cr, 'three', { type: 'ReleaseFailed', reason: 'InstallError', message: /schema[\s\S]*replicaCount/ });
    await expectRefused(cluster, cr, 'dotted', { type: 'ReleaseFailed', reason: 'InstallError', message: /schema[\s\S]*'a\.b' not allowed/ });
    assert.deepEqual((await helmList(cluster, ns)).map((r) => r.name), [], 'no release for values the schema refuses');

    await cr.apply('shop', { replicaCount: 2, message: 'good' });
    await expectDeployed(cr, 'shop');
    const objects = ['deployment/shop', 'service/shop', 'configmap/shop-content'];
    const before = await snapshot(cluster, ns, 'shop', objects);
    await cr.apply('shop', { ...(fixture('schema-wrong-type.json') as object), message: 'bad' });
    const bad = await expectRefused(cluster, cr, 'shop', { type: 'ReleaseFailed', reason: 'UpgradeError', message: /replicaCount/ });
    assert.equal(condition(bad, 'Deployed')?.status, 'True');
    assert.deepEqual(await snapshot(cluster, ns, 'shop', objects), before, 'same objects, release still at its old revision, deployed');
    assert.equal(before.revision, '1');
    assert.equal((await cluster.kubectl(['get', 'deployment', 'shop', '-n', ns, '-o', 'jsonpath={.spec.replicas}'])).stdout, '2');
    assert.equal((await configMapData(cluster, ns, 'shop-content'))?.['index.html'], 'good');
    await expectStillServing(cr, { message: 'still here' }, op);
  });

  it('passes --set syntax, shell metacharacters, templates, dotted keys and unicode through verbatim and runs nothing', { timeout: 10 * 60_000 }, async (t) => {
    const pwned = pwnedPrefix();
    const { cluster, ns, op, crs: [web, cfg] } = await operatorScenario(t, {
      watches: [
        { kind: 'Verbatim', chart: SAMPLE_CHART },
        { kind: 'VerbatimCfg', chart: SETTINGS_CHART },
      ],
    });

    const values = fixture('settings-verbatim-values.json', pwned) as { settings: Record<string, string> };
    await cfg.apply('odd', values);
    const message = (fixture('webapp-metachar-message.json', pwned) as { message: string }).message;
    await web.apply('web', { message });
    await expectDeployed(cfg, 'odd');
    const deployedWeb = await expectDeployed(web, 'web');

    const data = await configMapData(cluster, ns, 'odd-settings');
    assert.deepEqual(data, { color: 'red', ...values.settings }, 'every value arrives byte for byte, "a.b" as one key');
    assert.equal((await configMapData(cluster, ns, 'web-content'))?.['index.html'], message);
    assert.ok(condition(deployedWeb, 'Deployed')?.message.includes(message), 'the NOTES in the Deployed condition carry the message verbatim');
    assert.deepEqual(pwnedFiles(pwned), [], 'no value was run by a shell');
    await expectStillServing(cfg, { settings: { color: 'blue' } }, op);
  });

  it('handles a NUL character in a value', { timeout: 10 * 60_000 }, async (t) => {
    const { cluster, ns, op, cr } = await operatorScenario(t, { kind: 'Nul', chart: SAMPLE_CHART });
    const spec = fixture('webapp-nul.json') as { message: string };
    await cr.apply('nul', spec);
    const deployed = await expectDeployed(cr, 'nul');
    assert.equal((await configMapData(cluster, ns, 'nul-content'))?.['index.html'], spec.message, 'the NUL arrives verbatim');
    assert.ok(condition(deployed, 'Deployed')?.message.includes(spec.message));
    await expectStillServing(cr, { message: 'still here' }, op);
  });

  it('reports ConfigMap keys the API server refuses (shell and --set syntax in keys) and runs nothing', { timeout: 10 * 60_000 }, async (t) => {
    const pwned = pwnedPrefix();
    const { cluster, op, cr } = await operatorScenario(t, { kind: 'BadKeys', chart: SETTINGS_CHART });
    await cr.apply('keys', fixture('settings-metachar-keys.json', pwned));
    await expectRefused(cluster, cr, 'keys', { type: 'ReleaseFailed', reason: 'InstallError', message: /keys-settings[\s\S]*invalid[\s\S]*x=1,y=2/ });
    assert.deepEqual(pwnedFiles(pwned), [], 'no key was run by a shell');
    await expectStillServing(cr, { settings: { color: 'green' } }, op);
  });

  it('deploys ~1 MiB of values and 200 levels of nesting; refuses values too big for a release record', { timeout: 10 * 60_000 }, async (t) => {
    const { cluster, ns, op, cr } = await operatorScenario(t, { kind: 'BigValues', chart: SETTINGS_CHART });

    // Just under a ConfigMap's 1 MiB data limit; compresses well, so Helm's record stays small.
    const blob = 'chartpilot '.repeat(93_000);
    await cr.create('big', { settings: { blob } });
    let deep: unknown = 'bottom';
    for (let i = 0; i < 200; i++) deep = { a: deep };
    await cr.create('deep', { settings: { deep } });
    // 1.2 MiB that does not compress: Helm's release record (values + manifest) could not hold it,
    // so it is refused before helm runs (over the 1 MiB values limit).
    await cr.create('huge', { settings: { blob: randomBytes(600 * 1024).toString('hex') } });

    await expectDeployed(cr, 'big');
    assert.equal((await configMapData(cluster, ns, 'big-settings'))?.blob, blob);
    await expectDeployed(cr, 'deep');
    assert.match((await configMapData(cluster, ns, 'deep-settings'))?.deep ?? '', /^(map\[a:){200}bottom\]{200}$/);
    await expectRefused(cluster, cr, 'huge', { type: 'Irreconcilable', reason: 'ValuesTooLarge', message: /larger than 1024 KiB.*ConfigMap or Secret/ });
    assert.ok(!(await helmList(cluster, ns)).some((r) => r.name === 'huge'), 'no helm release for it');
    await expectStillServing(cr, { settings: { color: 'small' } }, op);
  });

  it('deploys a 53-character name, refuses 54 with a clear condition, and reports a name the chart cannot use', { timeout: 10 * 60_000 }, async (t) => {
    const { cluster, ns, op, cr } = await operatorScenario(t, { kind: 'Names', chart: SAMPLE_CHART });
    const n53 = `n${'x'.repeat(51)}3`;
    const n54 = `n${'x'.repeat(52)}4`;
    assert.equal(n53.length, 53);
    await cr.apply(n53, {});
    await cr.apply(n54, {});
    // A valid Helm release name, but webapp names its Service after the release, and a Service
    // name may not contain dots: the API server's refusal must reach the CR.
    await cr.apply('my.app', {});
    await expectDeployed(cr, n53);
    await expectRefused(cluster, cr, n54, { type: 'Irreconcilable', reason: 'ReconcileError', message: /54 characters long.*at most 53/ });
    await expectRefused(cluster, cr, 'my.app', { type: 'ReleaseFailed', reason: 'InstallError', message: /Service "my\.app" is invalid/ });
    assert.ok(!(await helmList(cluster, ns)).some((r) => r.name === n54));
    await expectStillServing(cr, {}, op);
  });

  it('reports charts that fail to render or render objects the API server refuses, keeping the previous release', { timeout: 10 * 60_000 }, async (t) => {
    const { cluster, ns, op, crs: [broken, render, object] } = await operatorScenario(t, {
      namespace: 'badchart',
      watches: [
        { kind: 'ChartBroken', chart: fixtureChart('broken') },
        { kind: 'ChartBadRender', chart: fixtureChart('bad-render') },
        { kind: 'ChartBadObject', chart: fixtureChart('bad-object') },
      ],
    });

    // Install of a chart that never renders.
    await broken.apply('never', {});
    await expectRefused(cluster, broken, 'never', { type: 'ReleaseFailed', reason: 'InstallError', message: /nil pointer evaluating[\s\S]*deeper/ });
    // Install that renders an object the API server refuses.
    await object.apply('minus', { replicas: -1 });
    await expectRefused(cluster, object, 'minus', { type: 'ReleaseFailed', reason: 'InstallError', message: /spec\.replicas[\s\S]*greater than or equal to 0/ });

    // Update that stops rendering: nothing changes, the release stays at revision 1.
    await render.apply('paint', { color: 'blue' });
    await expectDeployed(render, 'paint');
    const paintBefore = await snapshot(cluster, ns, 'paint', ['configmap/paint-bad-render']);
    await render.apply('paint', { color: 'green', explode: true });
    await expectRefused(cluster, render, 'paint', { type: 'ReleaseFailed', reason: 'UpgradeError', message: /bad-render refuses to render: explode is set/ });
    assert.deepEqual(await snapshot(cluster, ns, 'paint', ['configmap/paint-bad-render']), paintBefore);
    assert.equal((await configMapData(cluster, ns, 'paint-bad-render'))?.color, 'blue');

    // Update that renders a Deployment the API server refuses: helm records a failed revision and
    // the operator rolls back; the objects survive and the deployed revision has the old values.
    await object.apply('tiered', { tier: 'web' });
    await expectDeployed(object, 'tiered');
    const objects = ['deployment/tiered-bad-object', 'configmap/tiered-bad-object'];
    const tieredBefore = await snapshot(cluster, ns, 'tiered', objects);
    await object.apply('tiered', { tier: 'not a label!' });
    const failed = await expectRefused(cluster, object, 'tiered', { type: 'ReleaseFailed', reason: 'UpgradeError', message: /Deployment[\s\S]*is invalid[\s\S]*labels/ });
    t.diagnostic(`tiered: ${condition(failed, 'ReleaseFailed')?.message.slice(0, 400) ?? ''}`);
    await waitFor(
      'tiered: the deployed revision is the old one again, its objects intact',
      async () => {
        const rel = (await helmList(cluster, ns)).find((r) => r.name === 'tiered');
        if (rel?.status !== 'deployed') return false;
        const vals = JSON.parse((await cluster.helm(['get', 'values', 'tiered', '-n', ns, '-o', 'json'])).stdout) as Record<string, unknown>;
        const uids = (await snapshot(cluster, ns, 'tiered', objects).catch(() => undefined))?.uids;
        return vals.tier === 'web' && (await configMapData(cluster, ns, 'tiered-bad-object'))?.tier === 'web' && JSON.stringify(uids) === JSON.stringify(tieredBefore.uids);
      },
      { timeoutMs: 120_000 },
    );
    const tiered = await object.get('tiered');
    assert.equal(condition(tiered, 'Deployed')?.status, 'True');
    assert.ok((await eventsFor(cluster, ns, 'tiered')).some((e) => e.reason === 'RollbackSuccessful'));

    for (const k of [render, object]) await expectStillServing(k, {}, op);
  });

  it(
    'backs off while a bad update persists: its own failed upgrade and rollback do not retrigger it',
    // Guards the fix: dependent events are soft adds that respect a failing key's backoff.
    { timeout: 10 * 60_000 },
    async (t) => {
      const { cluster, ns, op, cr } = await operatorScenario(t, { kind: 'Flap', chart: fixtureChart('bad-object') });
      await cr.apply('flap', { tier: 'web' });
      await expectDeployed(cr, 'flap');
      await cr.apply('flap', { tier: 'not a label!' });
      await expectRefused(cluster, cr, 'flap', { type: 'ReleaseFailed', reason: 'UpgradeError', message: /is invalid/ });
      const failedAt = Date.now();
      const revision = async (): Promise<number> => Number((await helmList(cluster, ns)).find((r) => r.name === 'flap')?.revision ?? 0);

      // The per-key backoff doubles from 0.5 s (±10 % jitter): once the 6th attempt has failed,
      // the next retry is 16 s away, and a 40 s window holds at most two more attempts (each a
      // failed revision and a rollback).
      const lastFailedAttempt = (): number =>
        Math.max(0, ...logLines(op).filter((l) => l.msg === 'reconcile failed; will retry' && l.name === 'flap').map((l) => Number(l.attempt)));
      await waitFor('the 6th failed attempt of flap', () => Promise.resolve(lastFailedAttempt() >= 6), { timeoutMs: 120_000, intervalMs: 1000 });
      const from = await revision();
      const seen = new Set<string>();
      const until = Date.now() + 40_000;
      while (Date.now() < until) {
        // Measurement window: sample the live ConfigMap that each attempt rewrites and rolls back.
        seen.add((await configMapData(cluster, ns, 'flap-bad-object'))?.tier ?? '<missing>');
      }
      const to = await revision();
      const retries = logLines(op)
        .filter((l) => l.msg === 'reconcile failed; will retry' && l.name === 'flap')
        .map((l) => ({ attempt: Number(l.attempt), at: lineTime(l) }));
      const gaps = retries.slice(1).map((r, i) => Math.round((r.at - (retries[i]?.at ?? r.at)) / 100) / 10);
      t.diagnostic(
        `revision ${String(from)} → ${String(to)} in a 40 s window ${String(Math.round((until - 40_000 - failedAt) / 1000))} s into the failure; ` +
          `live ConfigMap tier values seen: ${JSON.stringify([...seen])}; ${String(retries.length)} failed attempts so far (last attempt number ${String(retries.at(-1)?.attempt ?? 0)}), seconds between them: ${gaps.join(' ')}`,
      );
      assert.ok(to - from <= 4, `revision ${String(from)} → ${String(to)} within 40 s, after the backoff had grown past 16 s`);
    },
  );
});
