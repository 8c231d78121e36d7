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
import { condition, crsOf, eventsFor, helmList, type Cr, type Crs } from './crs.js';
import { BIN, SAMPLE_CHART } from './fixtures.js';
import { testCluster } from './harness.js';
import type { RunningOperator } from './operator.js';
import { logLines, logTail } from './operator-log.js';
import { REGISTRY_USER, registryBeforeAll, testRegistry, testRepo } from './registries.js';
import { setUp } from './scenario.js';
import { explained, waitFor } from './wait.js';

const c = await testCluster();
registryBeforeAll();

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
    assert.match(cond.message, new RegExp(`registry ${reg.registry.host.replace(/\./gu, '\\.')} is unreachable`, 'u'));
    assert.deepEqual((await helmList(c, setup.ns)).map((r) => `${r.name}:${String(r.revision)}`).sort(), ['after-restart:1', 'kept:1', 'while-down:1']);

    await reg.registry.start();
    const recovered = await later.until('new', 'installed once the registry is back', (cr) => released(cr) === '1@3.0.0' && condition(cr, 'Deployed')?.status === 'True');
    assert.equal(condition(recovered, 'ChartUnavailable'), undefined, 'ChartUnavailable is cleared');
    assert.equal(released(await again.get('kept')), '1@1.0.0', 'the release deployed before the outage was not touched');
  });

  it('wrong password, unknown chart, no matching version, pinned digest mismatch, truncated archive: each a clear condition, nothing deployed lost', async (t) => {
    const reg = await testRegistry(t, c);
    const repo = await testRepo(t, c);
    const pushed = await reg.push(SAMPLE_CHART, '1.0.0');
    await reg.push(SAMPLE_CHART, '1.1.0');
    await repo.publish(SAMPLE_CHART, '1.0.0', { truncate: true });
    const wrongDigest = `sha256:${'0'.repeat(64)}`;
    const oci = (extra: Record<string, unknown>): Record<string, unknown> => ({ chartPullSecret: 'regcred', chartRefreshInterval: '2s', ...extra });
    const setup = await setUp(t, {
      namespace: 'badchart',
      watches: [
        { kind: 'BadKept', chart: `${reg.base}/webapp`, extra: oci({ chartVersion: '1.0.0', chartDigest: pushed }) },
        { kind: 'BadPassword', chart: `${reg.base}/webapp`, extra: oci({ chartPullSecret: 'wrongcred' }) },
        { kind: 'BadChart', chart: `${reg.base}/nope`, extra: oci({}) },
        { kind: 'BadVersion', chart: `${reg.base}/webapp`, extra: oci({ chartVersion: '^9.0' }) },
        { kind: 'BadDigest', chart: `${reg.base}/webapp`, extra: oci({ chartVersion: '1.1.0', chartDigest: wrongDigest }) },
        { kind: 'BadArchive', chart: 'webapp', extra: { repository: repo.repo.url, chartPullSecret: 'repocred', chartRefreshInterval: '2s' } },
      ],
    });
    await reg.secret(setup.ns, 'regcred');
    await reg.secret(setup.ns, 'wrongcred', 'not-the-password');
    await repo.secret(setup.ns, 'repocred');
    const op = await setup.start({ args: ['--chart-cache-dir', tempDir(t, 'charts-')], env: { POD_NAMESPACE: setup.ns } });
    const [kept, password, chart, version, digest, archive] = setup.kinds.map((k) => crsOf(c, k, setup.ns, op)) as [Crs, Crs, Crs, Crs, Crs, Crs];
    await kept.apply('kept', {});
    await at(kept, ['kept'], 1, '1.0.0');

    const expectations: [Crs, string, RegExp][] = [
      [password, 'RegistryUnauthorized', new RegExp(`registry ${reg.registry.host.replace(/\./gu, '\\.')} answered 401 Unauthorized .* with Secret ${setup.ns}/wrongcred \\(user ${REGISTRY_USER}\\); check the user name and password`, 'u')],
      [chart, 'ChartNotFound', /no chart charts\/nope/u],
      [version, 'NoMatchingVersion', /no version of oci:\/\/.*\/charts\/webapp matches chartVersion "\^9\.0"; the nearest available are 1\.1\.0, 1\.0\.0/u],
      [digest, 'DigestMismatch', new RegExp(`1\\.1\\.0 has the manifest digest sha256:[0-9a-f]{64}, but chartDigest pins ${wrongDigest}; refusing it`, 'u')],
      [archive, 'InvalidChartArchive', /webapp 1\.0\.0 \(sha256:[0-9a-f]{64}\) is not a chart Helm can load: the packaged chart cannot be decompressed/u],
    ];
    for (const [crs, , ] of expectations) await crs.apply('x', {});
    for (const [crs, reason, message] of expectations) {
      const cr = await crs.until('x', `ChartUnavailable (${reason})`, (o) => condition(o, 'ChartUnavailable')?.reason === reason);
      assert.match(condition(cr, 'ChartUnavailable')?.message ?? '', message);
      assert.equal(cr.metadata.finalizers, undefined, 'nothing was started for a CR whose chart is unavailable');
    }
    const events = await eventsFor(c, setup.ns, 'x');
    assert.ok(events.some((e) => e.reason === 'ChartUnavailable' && e.type === 'Warning'), JSON.stringify(events));

    // A hot-reloaded entry whose pinned digest no longer matches: refused, the release stays as it is.
    const entries = parse(readFileSync(op.watchesFile, 'utf8')) as Record<string, unknown>[];
    const first = entries[0];
    if (first === undefined) throw new Error('no entries');
    first['chartDigest'] = wrongDigest;
    writeFileSync(op.watchesFile, stringify(entries));
    const refused = await kept.until('kept', 'ChartUnavailable after the bad edit', (o) => condition(o, 'ChartUnavailable')?.reason === 'DigestMismatch');
    assert.equal(released(refused), '1@1.0.0');
    assert.equal(condition(refused, 'Deployed')?.status, 'True', 'the release stays deployed');
    assert.deepEqual((await helmList(c, setup.ns)).map((r) => `${r.name}:${String(r.revision)}:${r.status}`), ['kept:1:deployed']);

    // Fixed again: back to normal without an upgrade (same content).
    first['chartDigest'] = pushed;
    writeFileSync(op.watchesFile, stringify(entries));
    const back = await kept.until('kept', 'ChartUnavailable cleared', (o) => condition(o, 'ChartUnavailable') === undefined);
    assert.equal(released(back), '1@1.0.0');
    assert.ok(!op.logs().includes('not-the-password') && !op.logs().includes(reg.password), 'a password was logged');
    assert.doesNotThrow(() => process.kill(op.process.pid ?? -1, 0), 'the operator is still running');
  });

  it('generate and new pull a chart from a registry first (credentials from Helm\'s registry config)', async (t) => {
    const reg = await testRegistry(t, c);
    await reg.push(SAMPLE_CHART, '1.2.0');
    const dir = tempDir(t, 'generate-remote-');
    const registryConfig = join(dir, 'registry.json');
    writeFileSync(registryConfig, JSON.stringify({ auths: { [reg.registry.host]: { auth: Buffer.from(`${REGISTRY_USER}:${reg.password}`).toString('base64') } } }));
    const watches = join(dir, 'watches.yaml');
    writeFileSync(watches, stringify([{ group: 'remote.example.com', version: 'v1', kind: 'Site', chart: `${reg.base}/webapp`, chartVersion: '^1' }]));
    const env = { ...c.env, HELM_REGISTRY_CONFIG: registryConfig, NODE_EXTRA_CA_CERTS: reg.registry.caFile, CHARTPILOT_CHART_CACHE: join(dir, 'cache') };
    const run = (args: string[]): Promise<{ exitCode?: number; stdout: string; stderr: string }> => execa(process.execPath, [BIN, ...args], { env, reject: false, cwd: dir });

    const sample = await run(['generate', 'sample', '--watches-file', watches]);
    assert.equal(sample.exitCode, 0, sample.stderr);
    assert.match(sample.stdout, /kind: Site/u);
    assert.match(sample.stdout, /Hello from chartpilot/u, 'the sample spec is the pulled chart\'s values.yaml');
    const crd = await run(['generate', 'crd', '--watches-file', watches]);
    assert.equal(crd.exitCode, 0, crd.stderr);
    assert.match(crd.stdout, /replicaCount/u, 'the schema comes from the pulled chart\'s values.schema.json');

    writeFileSync(join(dir, 'bad.yaml'), stringify([{ group: 'remote.example.com', version: 'v1', kind: 'Site', chart: `${reg.base}/webapp`, chartVersion: '^2' }]));
    const bad = await run(['generate', 'crd', '--watches-file', join(dir, 'bad.yaml')]);
    assert.equal(bad.exitCode, 2, bad.stderr);
    assert.match(bad.stderr, /^error: Site: cannot pull oci:\/\/.*webapp: no version of .* matches chartVersion "\^2"; the nearest available are 1\.2\.0$/mu);

    const project = join(dir, 'site-operator');
    const made = await run(['new', project, '--chart', `${reg.base}/webapp`, '--chart-version', '^1.2', '--group', 'remote.example.com', '--version', 'v1', '--kind', 'Site']);
    assert.equal(made.exitCode, 0, made.stderr);
    const projectWatches = parse(readFileSync(join(project, 'watches.yaml'), 'utf8')) as Record<string, unknown>[];
    assert.deepEqual(projectWatches, [{ group: 'remote.example.com', version: 'v1', kind: 'Site', chart: `${reg.base}/webapp`, chartVersion: '^1.2' }]);
    assert.doesNotMatch(readFileSync(join(project, 'Dockerfile'), 'utf8'), /COPY charts/u, 'the chart is pulled at run time, not built into the image');
    assert.match(readFileSync(join(project, 'deploy', 'samples', 'site.yaml'), 'utf8'), /Hello from chartpilot/u);
  });
});
