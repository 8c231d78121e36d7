/** Step 2 proof: install, upgrade, uninstall, overrides, filtering, names, two kinds — real cluster, real helm. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FINALIZER } from '../../src/reconcile/names.js';
import { newNamespace, testCluster, waitFor } from './harness.js';
import {
  FIXTURE_CHARTS,
  SAMPLE_CHART,
  applyCr,
  condition,
  eventsFor,
  getCr,
  helmList,
  installCrd,
  startOperator,
  testKind,
  waitForCr,
} from './operator-harness.js';

const kind = testKind('Lifecycle');

describe('operator lifecycle', () => {
  it('installs on create, upgrades on a spec change, uninstalls and drops the finalizer on delete', async (t) => {
    const cluster = await testCluster();
    await installCrd(cluster, kind);
    const ns = await newNamespace(t, 'life');
    const op = await startOperator(t, cluster, { namespaces: [ns], watches: [{ kind, chart: SAMPLE_CHART }] });

    await applyCr(cluster, kind, ns, 'shop', { replicaCount: 1, message: 'v1' });
    const installed = await waitForCr(cluster, kind, ns, 'shop', 'Deployed', (cr) => condition(cr, 'Deployed')?.status === 'True', op);
    assert.equal(condition(installed, 'Deployed')?.reason, 'InstallSuccessful');
    assert.match(condition(installed, 'Deployed')?.message ?? '', /shop serves "v1"/, 'Deployed message carries the chart NOTES');
    assert.equal(condition(installed, 'Initialized')?.status, 'True');
    assert.deepEqual(installed.metadata.finalizers, [FINALIZER]);
    assert.equal(installed.status?.deployedRelease?.revision, 1);
    assert.equal(installed.status.deployedRelease.chart, 'webapp');
    assert.equal(installed.status.deployedRelease.version, '0.1.0');
    assert.equal(installed.status.deployedRelease.appVersion, '1.0.0');
    assert.equal(installed.status.observedGeneration, installed.metadata.generation);
    const deployment = await cluster.kubectl(['get', 'deployment', 'shop', '-n', ns, '-o', 'jsonpath={.spec.replicas}']);
    assert.equal(deployment.stdout, '1');

    await applyCr(cluster, kind, ns, 'shop', { replicaCount: 3, message: 'v2' });
    const upgraded = await waitForCr(cluster, kind, ns, 'shop', 'revision 2', (cr) => cr.status?.deployedRelease?.revision === 2, op);
    assert.equal(condition(upgraded, 'Deployed')?.reason, 'UpgradeSuccessful');
    assert.equal(upgraded.status?.observedGeneration, 2);
    const scaled = await cluster.kubectl(['get', 'deployment', 'shop', '-n', ns, '-o', 'jsonpath={.spec.replicas}']);
    assert.equal(scaled.stdout, '3');
    const reasons = (await eventsFor(cluster, ns, 'shop')).map((e) => e.reason);
    assert.ok(reasons.includes('InstallSuccessful') && reasons.includes('UpgradeSuccessful'), `events: ${reasons.join(',')}`);

    await cluster.kubectl(['delete', `${kind.plural}.${kind.group}`, 'shop', '-n', ns, '--wait=false']);
    await waitFor('CR gone after uninstall', async () => (await getCr(cluster, kind, ns, 'shop')) === undefined, { timeoutMs: 90_000 });
    assert.deepEqual(await helmList(cluster, ns), []);
    const leftovers = await cluster.kubectl(['get', 'deployment,service,configmap', '-n', ns, '-l', 'app.kubernetes.io/instance=shop', '-o', 'name']);
    assert.equal(leftovers.stdout.trim(), '');
    assert.ok(op.helmCalls().some((c) => c.startsWith('uninstall ') && c.endsWith(' shop')), op.helmCalls().join(' | '));
  });

  it('lets overrideValues win over the spec and warns once per overridden key', async (t) => {
    const cluster = await testCluster();
    const k = testKind('Override');
    await installCrd(cluster, k);
    const ns = await newNamespace(t, 'ovr');
    const op = await startOperator(t, cluster, {
      namespaces: [ns],
      watches: [{ kind: k, chart: SAMPLE_CHART, extra: { overrideValues: { 'image.repository': '$MIRROR/nginx', replicaCount: '2' } } }],
      env: { MIRROR: 'registry.internal' },
    });
    await applyCr(cluster, k, ns, 'ov', { replicaCount: 5, image: { repository: 'docker.io/nginx', tag: '1.27' } });
    await waitForCr(cluster, k, ns, 'ov', 'Deployed', (cr) => condition(cr, 'Deployed')?.status === 'True', op);
    const image = await cluster.kubectl(['get', 'deployment', 'ov', '-n', ns, '-o', 'jsonpath={.spec.template.spec.containers[0].image} {.spec.replicas}']);
    assert.equal(image.stdout, 'registry.internal/nginx:1.27 2');
    const warnings = (await eventsFor(cluster, ns, 'ov')).filter((e) => e.reason === 'OverrideValuesInUse');
    assert.equal(warnings.length, 2, JSON.stringify(warnings));
    assert.ok(warnings.every((w) => w.type === 'Warning' && !w.message.includes('registry.internal')), 'events name keys, never values');
  });

  it('refuses a 60-character name with a clear condition and installs nothing', async (t) => {
    const cluster = await testCluster();
    const k = testKind('LongName');
    await installCrd(cluster, k);
    const ns = await newNamespace(t, 'long');
    const op = await startOperator(t, cluster, { namespaces: [ns], watches: [{ kind: k, chart: SAMPLE_CHART }] });
    const name = `a${'b'.repeat(58)}c`;
    await applyCr(cluster, k, ns, name, {});
    const cr = await waitForCr(cluster, k, ns, name, 'Irreconcilable', (c) => condition(c, 'Irreconcilable')?.status === 'True', op);
    assert.match(condition(cr, 'Irreconcilable')?.message ?? '', /60 characters long.*at most 53/);
    assert.deepEqual(await helmList(cluster, ns), []);
    assert.equal(op.helmCalls().filter((c) => c.startsWith('upgrade')).length, 0);
    const events = await eventsFor(cluster, ns, name);
    assert.ok(events.some((e) => e.type === 'Warning' && e.reason === 'ReconcileError'));
  });

  it('acts only on CRs matching the selector, in the watched namespaces', async (t) => {
    const cluster = await testCluster();
    const k = testKind('Selector');
    await installCrd(cluster, k);
    const watched = await newNamespace(t, 'sel-in');
    const other = await newNamespace(t, 'sel-out');
    const op = await startOperator(t, cluster, {
      namespaces: [watched],
      watches: [{ kind: k, chart: SAMPLE_CHART, extra: { selector: { matchLabels: { tier: 'web' } } } }],
    });
    await cluster.kubectl(['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: `${k.group}/${k.version}`,
        kind: k.kind,
        metadata: { name: 'match', namespace: watched, labels: { tier: 'web' } },
        spec: {},
      }),
    });
    await applyCr(cluster, k, watched, 'nolabel', {});
    await cluster.kubectl(['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: `${k.group}/${k.version}`,
        kind: k.kind,
        metadata: { name: 'elsewhere', namespace: other, labels: { tier: 'web' } },
        spec: {},
      }),
    });
    await waitForCr(cluster, k, watched, 'match', 'Deployed', (cr) => condition(cr, 'Deployed')?.status === 'True', op);
    // The matching CR converged; the operator processes keys in order of arrival, so by now it
    // has seen the others too and must have left them alone.
    for (const [ns, name] of [
      [watched, 'nolabel'],
      [other, 'elsewhere'],
    ] as const) {
      const cr = await getCr(cluster, k, ns, name);
      assert.equal(cr?.status, undefined, `${ns}/${name} must not be touched`);
      assert.equal(cr?.metadata.finalizers, undefined);
    }
    assert.deepEqual((await helmList(cluster, other)).map((r) => r.name), []);
    assert.deepEqual((await helmList(cluster, watched)).map((r) => r.name), ['match']);
  });

  it('runs two kinds mapped to two charts side by side', async (t) => {
    const cluster = await testCluster();
    const web = testKind('SideWeb');
    const cfg = testKind('SideCfg');
    await installCrd(cluster, web);
    await installCrd(cluster, cfg);
    const ns = await newNamespace(t, 'two');
    const op = await startOperator(t, cluster, {
      namespaces: [ns],
      watches: [
        { kind: web, chart: SAMPLE_CHART },
        { kind: cfg, chart: `${FIXTURE_CHARTS}/settings` },
      ],
    });
    await applyCr(cluster, web, ns, 'front', {});
    await applyCr(cluster, cfg, ns, 'conf', { settings: { color: 'blue' } });
    const a = await waitForCr(cluster, web, ns, 'front', 'Deployed', (cr) => condition(cr, 'Deployed')?.status === 'True', op);
    const b = await waitForCr(cluster, cfg, ns, 'conf', 'Deployed', (cr) => condition(cr, 'Deployed')?.status === 'True', op);
    assert.equal(a.status?.deployedRelease?.chart, 'webapp');
    assert.equal(b.status?.deployedRelease?.chart, 'settings');
    const cm = await cluster.kubectl(['get', 'configmap', 'conf-settings', '-n', ns, '-o', 'jsonpath={.data.color}']);
    assert.equal(cm.stdout, 'blue');
  });

  it('deletes a batch of CRs without a failed reconcile (a queued reconcile finding its CR gone is quiet)', async (t) => {
    const cluster = await testCluster();
    const k = testKind('Batch');
    await installCrd(cluster, k);
    const ns = await newNamespace(t, 'batch');
    const op = await startOperator(t, cluster, { namespaces: [ns], watches: [{ kind: k, chart: SAMPLE_CHART }], args: ['--max-concurrent-reconciles', '4'] });
    const names = Array.from({ length: 8 }, (_, i) => `b${String(i)}`);
    await Promise.all(names.map((n) => applyCr(cluster, k, ns, n, { message: n })));
    for (const n of names) await waitForCr(cluster, k, ns, n, 'Deployed', (cr) => condition(cr, 'Deployed')?.status === 'True', op);
    await cluster.kubectl(['delete', `${k.plural}.${k.group}`, '--all', '-n', ns, '--wait=false']);
    await waitFor('all CRs gone', async () => (await Promise.all(names.map((n) => getCr(cluster, k, ns, n)))).every((cr) => cr === undefined), { timeoutMs: 90_000 });
    assert.deepEqual(await helmList(cluster, ns), []);
    const failures = op.logs().split('\n').filter((l) => l.includes('reconcile failed'));
    assert.deepEqual(failures, [], 'no reconcile failed while deleting');
  });
});
