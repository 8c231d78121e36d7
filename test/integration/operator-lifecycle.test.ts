/**
 * What a user sees the operator do with real helm: install on create, upgrade on change, uninstall
 * on delete; overrideValues; a name too long for Helm; label selectors and watched namespaces;
 * two kinds side by side; a batch of deletes.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FINALIZER } from '../../src/engines/helm/names.js';
import { condition, crJson, eventsFor, getCr, helmList } from './crs.js';
import { SAMPLE_CHART, fixtureChart } from './fixtures.js';
import { newNamespace } from './harness.js';
import { operatorScenario } from './scenario.js';
import { waitFor } from './wait.js';

describe('operator lifecycle', () => {
  it('installs on create, upgrades on a spec change, uninstalls and drops the finalizer on delete', async (t) => {
    const { cluster, ns, op, cr } = await operatorScenario(t, { kind: 'Lifecycle', chart: SAMPLE_CHART });

    await cr.apply('shop', { replicaCount: 1, message: 'v1' });
    const installed = await cr.deployed('shop');
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

    await cr.apply('shop', { replicaCount: 3, message: 'v2' });
    const upgraded = await cr.until('shop', 'revision 2', (c) => c.status?.deployedRelease?.revision === 2);
    assert.equal(condition(upgraded, 'Deployed')?.reason, 'UpgradeSuccessful');
    assert.equal(upgraded.status?.observedGeneration, 2);
    const scaled = await cluster.kubectl(['get', 'deployment', 'shop', '-n', ns, '-o', 'jsonpath={.spec.replicas}']);
    assert.equal(scaled.stdout, '3');
    const reasons = (await eventsFor(cluster, ns, 'shop')).map((e) => e.reason);
    assert.ok(reasons.includes('InstallSuccessful') && reasons.includes('UpgradeSuccessful'), `events: ${reasons.join(',')}`);

    await cr.delete('shop');
    await cr.gone('shop');
    assert.deepEqual(await helmList(cluster, ns), []);
    const leftovers = await cluster.kubectl(['get', 'deployment,service,configmap', '-n', ns, '-l', 'app.kubernetes.io/instance=shop', '-o', 'name']);
    assert.equal(leftovers.stdout.trim(), '');
    assert.ok(op.helmCalls().some((c) => c.startsWith('uninstall ') && c.endsWith(' shop')), op.helmCalls().join(' | '));
  });

  it('post-renders through a Node process per call where curl is missing (the bundled operator runs dist/bundle/postrender.js)', async (t) => {
    // No curl on PATH: the script transport (src/helm/postrender/plugin.ts). helm (HELM_BIN) and
    // node (the operator's own) are absolute paths, so nothing else needs PATH.
    const { cluster, ns, cr } = await operatorScenario(t, { kind: 'NoCurl', chart: SAMPLE_CHART, operator: { env: { PATH: '/nonexistent' } } });
    await cr.apply('plain', { replicaCount: 1 });
    const deployed = await cr.deployed('plain');
    // Only the post-renderer puts the owner's label and ownerReference on the chart's objects.
    const owner = await cluster.kubectl(['get', 'deployment', 'plain', '-n', ns, '-o', "jsonpath={.metadata.labels.chartpilot\\.io/owner-uid} {.metadata.ownerReferences[0].uid}"]);
    assert.equal(owner.stdout, `${String(deployed.metadata.uid)} ${String(deployed.metadata.uid)}`);
  });

  it('lets overrideValues win over the spec and warns once per overridden key', async (t) => {
    const { cluster, ns, cr } = await operatorScenario(t, {
      kind: 'Override',
      chart: SAMPLE_CHART,
      extra: { overrideValues: { 'image.repository': '$MIRROR/nginx', replicaCount: '2' } },
      operator: { env: { MIRROR: 'registry.internal' } },
    });
    await cr.apply('ov', { replicaCount: 5, image: { repository: 'docker.io/nginx', tag: '1.27' } });
    await cr.deployed('ov');
    const image = await cluster.kubectl(['get', 'deployment', 'ov', '-n', ns, '-o', 'jsonpath={.spec.template.spec.containers[0].image} {.spec.replicas}']);
    assert.equal(image.stdout, 'registry.internal/nginx:1.27 2');
    const warnings = (await eventsFor(cluster, ns, 'ov')).filter((e) => e.reason === 'OverrideValuesInUse');
    assert.equal(warnings.length, 2, JSON.stringify(warnings));
    assert.ok(warnings.every((w) => w.type === 'Warning' && !w.message.includes('registry.internal')), 'events name keys, never values');
  });

  it('refuses a 60-character name with a clear condition and installs nothing', async (t) => {
    const { cluster, ns, op, cr } = await operatorScenario(t, { kind: 'LongName', chart: SAMPLE_CHART });
    const name = `a${'b'.repeat(58)}c`;
    await cr.apply(name, {});
    const refused = await cr.until(name, 'Irreconcilable', (c) => condition(c, 'Irreconcilable')?.status === 'True');
    assert.match(condition(refused, 'Irreconcilable')?.message ?? '', /60 characters long.*at most 53/);
    assert.deepEqual(await helmList(cluster, ns), []);
    assert.equal(op.helmCalls().filter((c) => c.startsWith('upgrade')).length, 0);
    const events = await eventsFor(cluster, ns, name);
    assert.ok(events.some((e) => e.type === 'Warning' && e.reason === 'ReconcileError'));
  });

  it('acts only on CRs matching the selector, in the watched namespaces', async (t) => {
    const { cluster, ns: watched, kind: k, cr } = await operatorScenario(t, {
      kind: 'Selector',
      chart: SAMPLE_CHART,
      extra: { selector: { matchLabels: { tier: 'web' } } },
      namespace: 'sel-in',
    });
    const other = await newNamespace(t, 'sel-out');
    await cluster.kubectl(['apply', '-f', '-'], { input: crJson(k, watched, 'match', {}, { labels: { tier: 'web' } }) });
    await cr.apply('nolabel', {});
    await cluster.kubectl(['apply', '-f', '-'], { input: crJson(k, other, 'elsewhere', {}, { labels: { tier: 'web' } }) });
    await cr.deployed('match');
    // The matching CR converged; the operator processes keys in order of arrival, so by now it
    // has seen the others too and must have left them alone.
    for (const [ns, name] of [
      [watched, 'nolabel'],
      [other, 'elsewhere'],
    ] as const) {
      const untouched = await getCr(cluster, k, ns, name);
      assert.equal(untouched?.status, undefined, `${ns}/${name} must not be touched`);
      assert.equal(untouched?.metadata.finalizers, undefined);
    }
    assert.deepEqual((await helmList(cluster, other)).map((r) => r.name), []);
    assert.deepEqual((await helmList(cluster, watched)).map((r) => r.name), ['match']);
  });

  it('runs two kinds mapped to two charts side by side', async (t) => {
    const { cluster, ns, crs: [web, cfg] } = await operatorScenario(t, {
      watches: [
        { kind: 'SideWeb', chart: SAMPLE_CHART },
        { kind: 'SideCfg', chart: fixtureChart('settings') },
      ],
    });
    await web.apply('front', {});
    await cfg.apply('conf', { settings: { color: 'blue' } });
    const a = await web.deployed('front');
    const b = await cfg.deployed('conf');
    assert.equal(a.status?.deployedRelease?.chart, 'webapp');
    assert.equal(b.status?.deployedRelease?.chart, 'settings');
    const cm = await cluster.kubectl(['get', 'configmap', 'conf-settings', '-n', ns, '-o', 'jsonpath={.data.color}']);
    assert.equal(cm.stdout, 'blue');
  });

  it('deletes a batch of CRs without a failed reconcile (a queued reconcile finding its CR gone is quiet)', async (t) => {
    const { cluster, ns, kind: k, op, cr } = await operatorScenario(t, { kind: 'Batch', chart: SAMPLE_CHART, operator: { args: ['--max-concurrent-reconciles', '4'] } });
    const names = Array.from({ length: 8 }, (_, i) => `b${String(i)}`);
    await Promise.all(names.map((n) => cr.apply(n, { message: n })));
    for (const n of names) await cr.deployed(n);
    await cluster.kubectl(['delete', `${k.plural}.${k.group}`, '--all', '-n', ns, '--wait=false']);
    await waitFor('all CRs gone', async () => (await Promise.all(names.map((n) => cr.get(n)))).every((c) => c === undefined), { timeoutMs: 90_000 });
    assert.deepEqual(await helmList(cluster, ns), []);
    const failures = op.logs().split('\n').filter((l) => l.includes('reconcile failed'));
    assert.deepEqual(failures, [], 'no reconcile failed while deleting');
  });
});
