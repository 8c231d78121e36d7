/** Step 2 proof: failures are reported and recovered from — real cluster, real helm. */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { gunzipSync, gzipSync } from 'node:zlib';
import { newNamespace, testCluster, waitFor } from './harness.js';
import { SAMPLE_CHART, applyCr, condition, eventsFor, getCr, helmList, installCrd, startOperator, testKind, waitForCr } from './operator-harness.js';

describe('operator recovery', () => {
  it('reports a broken chart template as ReleaseFailed with helm’s message, keeps the release, and recovers once fixed', async (t) => {
    const cluster = await testCluster();
    const k = testKind('Broken');
    await installCrd(cluster, k);
    const ns = await newNamespace(t, 'broken');
    let op = await startOperator(t, cluster, { namespaces: [ns], watches: [{ kind: k, chart: SAMPLE_CHART }] });
    await applyCr(cluster, k, ns, 'app', { message: 'one' });
    await waitForCr(cluster, k, ns, 'app', 'Deployed', (cr) => condition(cr, 'Deployed')?.status === 'True', op);
    await op.stop();

    const template = join(op.dir, 'charts', `${k.kind.toLowerCase()}-webapp`, 'templates', 'configmap.yaml');
    const good = readFileSync(template, 'utf8');
    writeFileSync(template, good.replace('{{ .Values.message | quote }}', '{{ .Values.message | nosuchfunction }}'));
    op = await startOperator(t, cluster, { namespaces: [ns], watches: [], dir: op.dir });
    await applyCr(cluster, k, ns, 'app', { message: 'two' });
    const failed = await waitForCr(cluster, k, ns, 'app', 'ReleaseFailed', (cr) => condition(cr, 'ReleaseFailed')?.status === 'True', op);
    assert.equal(condition(failed, 'ReleaseFailed')?.reason, 'UpgradeError');
    assert.match(condition(failed, 'ReleaseFailed')?.message ?? '', /nosuchfunction/);
    assert.equal(condition(failed, 'Deployed')?.status, 'True', 'the last good release stays deployed');
    const releases = await helmList(cluster, ns);
    assert.equal(releases[0]?.status, 'deployed');
    assert.equal(String(releases[0].revision), '1');
    assert.ok((await eventsFor(cluster, ns, 'app')).some((e) => e.type === 'Warning' && e.reason === 'UpgradeError'));
    await op.stop();

    writeFileSync(template, good);
    op = await startOperator(t, cluster, { namespaces: [ns], watches: [], dir: op.dir });
    const fixed = await waitForCr(cluster, k, ns, 'app', 'recovered', (cr) => cr.status?.deployedRelease?.revision === 2 && condition(cr, 'ReleaseFailed') === undefined, op);
    assert.equal(condition(fixed, 'Deployed')?.reason, 'UpgradeSuccessful');
  });

  it('uninstalls a CR deleted while the operator was stopped', async (t) => {
    const cluster = await testCluster();
    const k = testKind('DeletedWhileDown');
    await installCrd(cluster, k);
    const ns = await newNamespace(t, 'down');
    let op = await startOperator(t, cluster, { namespaces: [ns], watches: [{ kind: k, chart: SAMPLE_CHART }] });
    await applyCr(cluster, k, ns, 'gone', {});
    await waitForCr(cluster, k, ns, 'gone', 'Deployed', (cr) => condition(cr, 'Deployed')?.status === 'True', op);
    assert.equal(await op.stop(), 0, 'SIGTERM exits 0');

    await cluster.kubectl(['delete', `${k.plural}.${k.group}`, 'gone', '-n', ns, '--wait=false']);
    const deleting = await getCr(cluster, k, ns, 'gone');
    assert.ok(deleting !== undefined, 'the finalizer holds the CR while the operator is down');

    op = await startOperator(t, cluster, { namespaces: [ns], watches: [], dir: op.dir });
    await waitFor('CR removed after restart', async () => (await getCr(cluster, k, ns, 'gone')) === undefined, { timeoutMs: 90_000 });
    assert.deepEqual(await helmList(cluster, ns), []);
  });

  it('recovers a release left pending-upgrade by an interrupted operation', async (t) => {
    const cluster = await testCluster();
    const k = testKind('Pending');
    await installCrd(cluster, k);
    const ns = await newNamespace(t, 'pending');
    let op = await startOperator(t, cluster, { namespaces: [ns], watches: [{ kind: k, chart: SAMPLE_CHART }] });
    await applyCr(cluster, k, ns, 'stuck', { message: 'before' });
    await waitForCr(cluster, k, ns, 'stuck', 'Deployed', (cr) => condition(cr, 'Deployed')?.status === 'True', op);
    await op.stop();

    // Forge what a killed `helm upgrade` leaves behind: revision 2 recorded as pending-upgrade.
    const secretName = `sh.helm.release.v1.stuck.v1`;
    const secret = JSON.parse((await cluster.kubectl(['get', 'secret', secretName, '-n', ns, '-o', 'json'])).stdout) as {
      data: { release: string };
      metadata: { labels: Record<string, string> };
    };
    const release = JSON.parse(gunzipSync(Buffer.from(Buffer.from(secret.data.release, 'base64').toString(), 'base64')).toString()) as {
      version: number;
      info: { status: string };
    };
    release.version = 2;
    release.info.status = 'pending-upgrade';
    const encoded = Buffer.from(gzipSync(Buffer.from(JSON.stringify(release))).toString('base64')).toString('base64');
    await cluster.kubectl(['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'Secret',
        type: 'helm.sh/release.v1',
        metadata: { name: 'sh.helm.release.v1.stuck.v2', namespace: ns, labels: { ...secret.metadata.labels, version: '2', status: 'pending-upgrade' } },
        data: { release: encoded },
      }),
    });
    const blocked = await cluster.helm(['upgrade', 'stuck', SAMPLE_CHART, '-n', ns], { allowFail: true });
    assert.match(blocked.stderr, /another operation .* is in progress/, 'the forged lock blocks plain helm');

    op = await startOperator(t, cluster, { namespaces: [ns], watches: [], dir: op.dir });
    await applyCr(cluster, k, ns, 'stuck', { message: 'after' });
    const recovered = await waitForCr(cluster, k, ns, 'stuck', 'upgraded past the lock', (cr) => (cr.status?.deployedRelease?.revision ?? 0) >= 2, op);
    assert.equal(condition(recovered, 'Deployed')?.status, 'True');
    const releases = await helmList(cluster, ns);
    assert.equal(releases[0]?.status, 'deployed');
    assert.ok((await eventsFor(cluster, ns, 'stuck')).some((e) => e.reason === 'ReleaseUnlocked'));
  });
});
