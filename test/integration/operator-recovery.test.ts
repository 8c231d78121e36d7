/**
 * Failures the operator reports and recovers from across restarts: a chart template that breaks,
 * a CR deleted while the operator was down, a release left locked by an interrupted helm call.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { gunzipSync, gzipSync } from 'node:zlib';
import { condition, eventsFor, helmList } from './crs.js';
import { SAMPLE_CHART } from './fixtures.js';
import { stampedAsOperatorWould } from './operator-records.js';
import { operatorScenario } from './scenario.js';

describe('operator recovery', () => {
  it('reports a broken chart template as ReleaseFailed with helm’s message, keeps the release, and recovers once fixed', async (t) => {
    const s = await operatorScenario(t, { kind: 'Broken', chart: SAMPLE_CHART });
    const { cluster, ns, kind: k, cr } = s;
    let op = s.op;
    await cr.apply('app', { message: 'one' });
    await cr.deployed('app');
    await op.stop();

    const template = join(op.dir, 'charts', `${k.kind.toLowerCase()}-webapp`, 'templates', 'configmap.yaml');
    const good = readFileSync(template, 'utf8');
    writeFileSync(template, good.replace('{{ .Values.message | quote }}', '{{ .Values.message | nosuchfunction }}'));
    op = await s.restart(op);
    await cr.apply('app', { message: 'two' });
    const failed = await cr.until('app', 'ReleaseFailed', (c) => condition(c, 'ReleaseFailed')?.status === 'True');
    assert.equal(condition(failed, 'ReleaseFailed')?.reason, 'UpgradeError');
    assert.match(condition(failed, 'ReleaseFailed')?.message ?? '', /nosuchfunction/);
    assert.equal(condition(failed, 'Deployed')?.status, 'True', 'the last good release stays deployed');
    const releases = await helmList(cluster, ns);
    assert.equal(releases[0]?.status, 'deployed');
    assert.equal(String(releases[0].revision), '1');
    assert.ok((await eventsFor(cluster, ns, 'app')).some((e) => e.type === 'Warning' && e.reason === 'UpgradeError'));
    await op.stop();

    writeFileSync(template, good);
    await s.restart(op);
    const fixed = await cr.until('app', 'recovered', (c) => c.status?.deployedRelease?.revision === 2 && condition(c, 'ReleaseFailed') === undefined);
    assert.equal(condition(fixed, 'Deployed')?.reason, 'UpgradeSuccessful');
  });

  it('uninstalls a CR deleted while the operator was stopped', async (t) => {
    const s = await operatorScenario(t, { kind: 'DeletedWhileDown', chart: SAMPLE_CHART, namespace: 'down' });
    const { cluster, ns, op, cr } = s;
    await cr.apply('gone', {});
    await cr.deployed('gone');
    assert.equal(await op.stop(), 0, 'SIGTERM exits 0');

    await cr.delete('gone');
    const deleting = await cr.get('gone');
    assert.ok(deleting !== undefined, 'the finalizer holds the CR while the operator is down');

    await s.restart(op);
    await cr.gone('gone');
    assert.deepEqual(await helmList(cluster, ns), []);
  });

  it('recovers a release left pending-upgrade by an interrupted operation', async (t) => {
    const s = await operatorScenario(t, { kind: 'Pending', chart: SAMPLE_CHART });
    const { cluster, ns, op, cr } = s;
    await cr.apply('stuck', { message: 'before' });
    await cr.deployed('stuck');
    await op.stop();

    // Forge what a killed `helm upgrade` leaves behind: revision 2 recorded as pending-upgrade.
    const secretName = `sh.helm.release.v1.stuck.v1`;
    const secret = JSON.parse((await cluster.kubectl(['get', 'secret', secretName, '-n', ns, '-o', 'json'])).stdout) as {
      data: { release: string };
      metadata: { labels: Record<string, string> };
    };
    const release = JSON.parse(gunzipSync(Buffer.from(Buffer.from(secret.data.release, 'base64').toString(), 'base64')).toString()) as {
      version: number;
      info: { status: string; last_deployed: string };
    };
    release.version = 2;
    release.info.status = 'pending-upgrade';
    // Helm stamps the operation's start on the record it locks with. Written at the top of a second,
    // the record's whole-second creationTimestamp is most often the second the operator below starts
    // in, where only that stamp tells the operator the lock is older than it (a CI run failed there).
    await new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000)));
    release.info.last_deployed = new Date().toISOString();
    const encoded = Buffer.from(gzipSync(Buffer.from(JSON.stringify(release))).toString('base64')).toString('base64');
    const lock = {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'helm.sh/release.v1',
      metadata: { name: 'sh.helm.release.v1.stuck.v2', namespace: ns, labels: { ...secret.metadata.labels, version: '2', status: 'pending-upgrade' } },
      data: { release: encoded },
    };
    // The operator's helm wrote it through the API proxy, which stamped it for this CR.
    const uid = (await cr.get('stuck'))?.metadata.uid ?? '';
    await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify(await stampedAsOperatorWould(cluster, lock, ns, uid)) });
    const blocked = await cluster.helm(['upgrade', 'stuck', SAMPLE_CHART, '-n', ns], { allowFail: true });
    assert.match(blocked.stderr, /another operation .* is in progress/, 'the forged lock blocks plain helm');

    await s.restart(op);
    await cr.apply('stuck', { message: 'after' });
    const recovered = await cr.until('stuck', 'upgraded past the lock', (c) => (c.status?.deployedRelease?.revision ?? 0) >= 2);
    assert.equal(condition(recovered, 'Deployed')?.status, 'True');
    const releases = await helmList(cluster, ns);
    assert.equal(releases[0]?.status, 'deployed');
    assert.ok((await eventsFor(cluster, ns, 'stuck')).some((e) => e.reason === 'ReleaseUnlocked'));
  });
});
