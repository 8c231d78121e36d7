/**
 * Charts from registries, against a real OCI registry (CNCF distribution, TLS, htpasswd) and a
 * real HTTPS Helm repository, with charts published by the real `helm push` / `helm repo index`:
 * version ranges, upgrades on a newer matching version (once per CR), nothing on a non-matching
 * one, the registry going away and coming back, and each kind of bad input as a clear condition.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { describe, it } from 'node:test';
import { execa } from 'execa';
import { parse, stringify } from 'yaml';
import { testKind } from './crd.js';
import { condition, crsOf, helmList, type Cr, type Crs } from './crs.js';
import { BIN, SAMPLE_CHART } from './fixtures.js';
import { testCluster } from './harness.js';
import type { RunningOperator } from './operator.js';
import { logLines, logTail } from './operator-log.js';
import { REGISTRY_USER, testRegistry, testRepo } from './registries.js';
import { setUp } from './scenario.js';
import { explained, waitFor } from './wait.js';

const c = await testCluster();

function tempDir(t: TestContext, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.after(() => { rmSync(dir, { recursive: true, force: true }); });
  return dir;
}

/** Refresh rounds that found the chart unchanged, so far. */
const unchangedRounds = (op: RunningOperator): number => logLines(op).filter((l) => l.msg === 'chart unchanged').length;

/** Waits until `rounds` more refreshes have found the chart unchanged (so one ran wholly after now). */
async function quietRounds(op: RunningOperator, rounds = 2): Promise<void> {
  const from = unchangedRounds(op);
  await explained(waitFor(`${String(rounds)} unchanged refresh rounds`, () => Promise.resolve(unchangedRounds(op) >= from + rounds)), () => logTail(op));
}

const upgrades = (op: RunningOperator, since: number): string[] => op.helmCalls().slice(since).filter((l) => l.startsWith('upgrade'));

function released(cr: Cr | undefined): string {
  return `${String(cr?.status?.deployedRelease?.revision)}@${cr?.status?.deployedRelease?.version ?? '?'}`;
}

async function at(crs: Crs, names: readonly string[], revision: number, version: string): Promise<void> {
  for (const n of names) await crs.until(n, `revision ${String(revision)} of chart ${version}`, (cr) => released(cr) === `${String(revision)}@${version}` && condition(cr, 'Deployed')?.status === 'True');
}

describe('charts from registries', () => {
  it('OCI: installs a range, upgrades every CR once on a newer matching version, ignores a non-matching one', async (t) => {
    const reg = await testRegistry(t, c);
    await reg.push(SAMPLE_CHART, '1.0.0');
    const setup = await setUp(t, {
      kind: 'OciWeb',
      chart: `${reg.base}/webapp`,
      extra: { chartVersion: '^1.0', chartPullSecret: 'regcred', chartRefreshInterval: '2s' },
    });
    await reg.secret(setup.ns, 'regcred');
    const op = await setup.start({ args: ['--log-level', 'debug', '--chart-cache-dir', tempDir(t, 'charts-')], env: { POD_NAMESPACE: setup.ns } });
    const web = crsOf(c, setup.kind, setup.ns, op);
    await web.apply('a', { message: 'a' });
    await web.apply('b', { message: 'b' });
    await at(web, ['a', 'b'], 1, '1.0.0');

    // An unchanged refresh runs no helm process.
    const base = op.helmCalls().length;
    await quietRounds(op);
    assert.deepEqual(op.helmCalls().slice(base), [], 'helm ran although the chart did not change');

    // 2.0.0 is outside ^1.0: seen by the next refreshes, and nothing happens.
    await reg.push(SAMPLE_CHART, '2.0.0');
    await quietRounds(op);
    assert.deepEqual(op.helmCalls().slice(base), [], 'helm ran for a version outside the range');
    assert.deepEqual([released(await web.get('a')), released(await web.get('b'))], ['1@1.0.0', '1@1.0.0']);

    // 1.1.0 matches: every CR upgrades, once.
    const before = op.helmCalls().length;
    await reg.push(SAMPLE_CHART, '1.1.0');
    await at(web, ['a', 'b'], 2, '1.1.0');
    await quietRounds(op);
    assert.equal(upgrades(op, before).length, 2, `expected one upgrade per CR: ${upgrades(op, before).join(' | ')}`);
    assert.deepEqual([released(await web.get('a')), released(await web.get('b'))], ['2@1.1.0', '2@1.1.0']);

    // Each archive was downloaded once; refreshes only list tags and look up one manifest digest.
    const ours = reg.registry.requests().filter((l) => l.endsWith('"chartpilot"'));
    const blobs = ours.filter((l) => / "GET \/v2\/charts\/webapp\/blobs\//u.test(l));
    assert.equal(blobs.length, 2, `archives pulled: ${blobs.join('\n')}`);
    assert.ok(ours.every((l) => / "(GET|HEAD) \/v2\/charts\/webapp\/(tags\/list|manifests\/|blobs\/)/u.test(l)), ours.join('\n'));
    // Credentials stay out of logs and helm's command lines; helm never talks to the registry.
    assert.ok(!op.logs().includes(reg.password), 'the registry password was logged');
    assert.ok(op.helmCalls().every((l) => !l.includes(reg.password) && !l.includes('oci://') && !l.includes(reg.registry.host)), op.helmCalls().join('\n'));
  });

  it('HTTPS Helm repository with basic auth: a range, prereleases and other majors ignored, one upgrade per CR', async (t) => {
    const repo = await testRepo(t, c);
    await repo.publish(SAMPLE_CHART, '1.0.0');
    const setup = await setUp(t, {
      kind: 'RepoWeb',
      chart: 'webapp',
      extra: { repository: repo.repo.url, chartVersion: '>=1.0.0, <2.0.0', chartPullSecret: 'repocred', chartRefreshInterval: '2s' },
    });
    await repo.secret(setup.ns, 'repocred');
    const op = await setup.start({ args: ['--log-level', 'debug', '--chart-cache-dir', tempDir(t, 'charts-')], env: { POD_NAMESPACE: setup.ns } });
    const web = crsOf(c, setup.kind, setup.ns, op);
    await web.apply('a', {});
    await web.apply('b', {});
    await at(web, ['a', 'b'], 1, '1.0.0');

    const base = op.helmCalls().length;
    await repo.publish(SAMPLE_CHART, '1.1.0-rc.1');
    await repo.publish(SAMPLE_CHART, '2.0.0');
    await quietRounds(op);
    assert.deepEqual(op.helmCalls().slice(base), [], 'helm ran for a prerelease or a version outside the range');

    await repo.publish(SAMPLE_CHART, '1.2.0');
    await at(web, ['a', 'b'], 2, '1.2.0');
    await quietRounds(op);
    assert.equal(upgrades(op, base).length, 2, `expected one upgrade per CR: ${upgrades(op, base).join(' | ')}`);

    // An unchanged index costs a 304; each archive was downloaded once.
    const log = repo.repo.requests();
    assert.ok(log.some((l) => l === '304 GET /index.yaml'), log.join('\n'));
    assert.equal(log.filter((l) => l === '200 GET /webapp-1.2.0.tgz').length, 1, log.join('\n'));
    assert.equal(log.filter((l) => l === '200 GET /webapp-1.0.0.tgz').length, 1, log.join('\n'));
    assert.ok(!op.logs().includes(repo.password), 'the repository password was logged');
  });

  it('registry stopped: releases untouched, a cached version installs, an uncached one is ChartUnavailable until the registry is back', async (t) => {
    const reg = await testRegistry(t, c);
    await reg.push(SAMPLE_CHART, '1.0.0');
    await reg.push(SAMPLE_CHART, '3.0.0');
    const setup = await setUp(t, {
      watches: [
        { kind: 'DownCached', chart: `${reg.base}/webapp`, extra: { chartVersion: '~1.0', chartPullSecret: 'regcred', chartRefreshInterval: '2s' } },
        { kind: 'DownLater', chart: `${reg.base}/webapp`, extra: { chartVersion: '3.0.0', chartPullSecret: 'regcred', chartRefreshInterval: '2s' } },
      ],
    });
    await reg.secret(setup.ns, 'regcred');
    const cache = tempDir(t, 'charts-');
    const args = ['--log-level', 'debug', '--chart-cache-dir', cache];
    const env = { POD_NAMESPACE: setup.ns };
    // The first kind only: its chart gets cached.
    const first = await setup.start({ args, env, watches: [{ kind: setup.kinds[0], chart: `${reg.base}/webapp`, extra: { chartVersion: '~1.0', chartPullSecret: 'regcred', chartRefreshInterval: '2s' } }] });
    const cached = crsOf(c, setup.kinds[0], setup.ns, first);
    await cached.apply('kept', {});
    await at(cached, ['kept'], 1, '1.0.0');

    await reg.registry.stop();
    await explained(waitFor('a failed refresh', () => Promise.resolve(logLines(first).some((l) => l.msg === 'chart refresh failed; keeping the chart in use'))), () => logTail(first));
    await cached.apply('while-down', {});
    await at(cached, ['while-down'], 1, '1.0.0');
    await first.stop();

    // Restarted with the registry still down: the cached copy serves the first kind; the second
    // kind's version was never pulled.
    const op = await setup.start({ args, env, dir: first.dir });
    const later = crsOf(c, setup.kinds[1], setup.ns, op);
    const again = crsOf(c, setup.kinds[0], setup.ns, op);
    // (The log holds both runs: wait for this run's line rather than for "controller started".)
    await explained(
      waitFor('start on the cached copy', () => Promise.resolve(logLines(op).some((l) => l.msg === 'registry unreachable at start; running with the cached copy' && l.version === '1.0.0'))),
      () => logTail(op),
    );
    await again.apply('after-restart', {});
    await at(again, ['after-restart'], 1, '1.0.0');
    await later.apply('new', {});
    const unavailable = await later.until('new', 'ChartUnavailable', (cr) => condition(cr, 'ChartUnavailable')?.status === 'True');
    const cond = condition(unavailable, 'ChartUnavailable');
    assert.equal(cond?.reason, 'RegistryUnreachable');
    assert.match(cond?.message ?? '', new RegExp(`registry ${reg.registry.host.replace(/\./gu, '\\.')} is unreachable`, 'u'));
    assert.deepEqual((await helmList(c, setup.ns)).map((r) => `${r.name}:${String(r.revision)}`).sort(), ['after-restart:1', 'kept:1', 'while-down:1']);

    await reg.registry.start();
    const recovered = await later.until('new', 'installed once the registry is back', (cr) => released(cr) === '1@3.0.0' && condition(cr, 'Deployed')?.status === 'True');
    assert.equal(condition(recovered, 'ChartUnavailable'), undefined, 'ChartUnavailable is cleared');
    assert.equal(released(await again.get('kept')), '1@1.0.0', 'the release deployed before the outage was not touched');
  });
});
