/** Chart and watches.yaml edits apply without a restart; a broken edit changes nothing. */
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse, stringify } from 'yaml';
import { installCrd, testKind } from './crd.js';
import { condition, crsOf, eventsFor, type Cr } from './crs.js';
import { SAMPLE_CHART, fixtureChart } from './fixtures.js';
import { writeWatches, type RunningOperator } from './operator.js';
import { operatorScenario } from './scenario.js';
import { explained, waitFor } from './wait.js';
import { logTail } from './operator-log.js';

describe('hot reload', () => {
  it('follows chart and watches.yaml edits without a restart, and ignores a broken edit', async (t) => {
    const { cluster, ns, op, cr: web } = await operatorScenario(t, { kind: 'ReloadWeb', chart: SAMPLE_CHART, namespace: 'reload' });
    // A kind with a CRD but no watches entry yet.
    const cfg = crsOf(cluster, testKind('ReloadCfg'), ns, op);
    await installCrd(cluster, cfg.kind);
    await web.apply('site', {});
    await web.deployed('site');

    // 1. Editing the chart's values.yaml upgrades the existing CR.
    const valuesFile = join(op.dir, 'charts', `${web.kind.kind.toLowerCase()}-webapp`, 'values.yaml');
    writeFileSync(valuesFile, readFileSync(valuesFile, 'utf8').replace('Hello from chartpilot', 'Hello after reload'));
    await web.until('site', 'revision 2 after chart edit', (c) => c.status?.deployedRelease?.revision === 2);
    const content = await cluster.kubectl(['get', 'configmap', 'site-content', '-n', ns, '-o', 'jsonpath={.data.index\\.html}']);
    assert.equal(content.stdout, 'Hello after reload');

    // 2. A broken watches.yaml keeps the running kind working.
    const good = readFileSync(op.watchesFile, 'utf8');
    writeFileSync(op.watchesFile, `${good}\n- kind: [not, a, kind]\n  reconcilPeriod: soon\n`);
    await waitFor('the broken edit to be reported', () => Promise.resolve(op.logs().includes('invalid watches.yaml edit ignored')));
    await web.apply('site', { message: 'still managed' });
    const still = await web.until('site', 'revision 3 after a spec change', (c) => c.status?.deployedRelease?.revision === 3);
    assert.equal(condition(still, 'Deployed')?.status, 'True');

    // 3. A new entry starts its kind without a restart; the first kind is not disturbed.
    writeWatches(op.dir, [
      { kind: web.kind, chart: SAMPLE_CHART },
      { kind: cfg.kind, chart: fixtureChart('settings') },
    ]);
    await cfg.apply('prefs', { settings: { color: 'green' } });
    await cfg.until('prefs', 'Deployed by the new entry', (c) => condition(c, 'Deployed')?.status === 'True');
    assert.equal((await web.get('site'))?.status?.deployedRelease?.revision, 3, 'the running kind was not re-deployed');

    // 4. Removing the entry stops that kind's controller.
    const entries = parse(readFileSync(op.watchesFile, 'utf8')) as unknown[];
    writeFileSync(op.watchesFile, stringify(entries.slice(0, 1)));
    await waitFor('the controller to stop', () => Promise.resolve(op.logs().includes('controller stopped')));
    await cfg.apply('later', {});
    await web.apply('probe', {});
    await web.deployed('probe');
    assert.equal((await cfg.get('later'))?.status, undefined, 'a removed kind is no longer reconciled');
  });

  it('a chart edit with a template error reaches no CR beyond the first; the kind says so, new CRs get the last good chart, and a fix rolls out', async (t) => {
    const { cluster, ns, op, cr: web } = await operatorScenario(t, { kind: 'ReloadHeld', chart: SAMPLE_CHART, namespace: 'held' });
    const names = ['alpha', 'beta', 'gamma'];
    for (const n of names) await web.apply(n, {});
    for (const n of names) await web.deployed(n);
    const chartDir = join(op.dir, 'charts', `${web.kind.kind.toLowerCase()}-webapp`);
    const good = upgradesSince(op, 0);
    const goodCharts = new Set(good.map((u) => u.chart));
    assert.equal(goodCharts.size, 1, `every CR was given the same chart: ${JSON.stringify(good)}`);

    // 1. A template that does not parse.
    const before = op.helmCalls().length;
    writeFileSync(join(chartDir, 'templates', 'broken.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }-broken\n');
    const isHeld = (c: Cr): boolean => condition(c, 'ChartChangeHeld')?.status === 'True';
    const failedHere = (c: Cr): boolean => condition(c, 'ReleaseFailed')?.status === 'True';
    let canary = '';
    let seen = '';
    await explained(
      waitFor('one CR to fail with the edit and the two others to be held', async () => {
        const crs = await Promise.all(names.map((n) => web.get(n)));
        const failed = crs.filter((c): c is Cr => c !== undefined && failedHere(c));
        const held = crs.filter((c): c is Cr => c !== undefined && isHeld(c));
        seen = `failed: ${failed.map((c) => c.metadata.name).join(', ')}; held: ${held.map((c) => c.metadata.name).join(', ')}`;
        if (failed.length !== 1 || held.length !== 2) return false;
        canary = failed[0]?.metadata.name ?? '';
        return true;
      }, { timeoutMs: 90_000 }),
      () => `${seen}\n${logTail(op, 40)}`,
    );
    const afterEdit = upgradesSince(op, before);
    assert.deepEqual([...new Set(afterEdit.map((u) => u.release))], [canary], `only the first CR was upgraded with the edit: ${JSON.stringify(afterEdit)}`);
    const edited = afterEdit[0]?.chart ?? '';
    const failed = await web.get(canary);
    assert.match(condition(failed, 'ReleaseFailed')?.message ?? '', /helm upgrade failed: .*broken\.yaml/u);
    assert.equal(failed?.status?.deployedRelease?.revision, 1, 'a template error records nothing: revision 1 stays');
    assert.equal(condition(failed, 'ChartChangeHeld'), undefined, 'the first CR shows its own failure');
    const events = await eventsFor(cluster, ns, canary);
    const told = events.find((e) => e.reason === 'ChartChangeHeld');
    assert.ok(told !== undefined, `a ChartChangeHeld Event on ${canary}: ${JSON.stringify(events)}`);
    assert.match(told.message, new RegExp(`^chart ${chartDir} changed and failed here, the first resource it was tried on \\(helm upgrade failed: .*broken\\.yaml`, 'u'));
    for (const n of names.filter((x) => x !== canary)) {
      const c = await web.get(n);
      const held = condition(c, 'ChartChangeHeld');
      assert.equal(held?.reason, 'CanaryFailed');
      assert.match(held.message, new RegExp(`^chart ${chartDir} changed, and the change is held: it failed on ${ns}/${canary}, the first resource it was tried on \\(helm upgrade failed: .*broken\\.yaml`, 'u'));
      assert.equal((c?.status as { chartpilot?: { summary?: { state?: string } } } | undefined)?.chartpilot?.summary?.state, 'Held');
      assert.equal(c?.status?.deployedRelease?.revision, 1);
    }

    // 2. A new CR, and a spec change of a held one, are served the last good chart: a private copy, not the directory being edited.
    assert.ok(!goodCharts.has(chartDir), `helm is given a copy of the chart, not ${chartDir}`);
    const held = names.find((x) => x !== canary) ?? '';
    await web.apply('delta', {});
    await web.apply(held, { message: 'changed while held' });
    const delta = await web.deployed('delta');
    assert.ok(isHeld(delta), 'the new CR says the change is held from it too');
    await web.until(held, 'its spec change deployed', (c) => c.status?.deployedRelease?.revision === 2);
    for (const u of upgradesSince(op, before).filter((x) => x.release !== canary)) assert.ok(goodCharts.has(u.chart), `${u.release} got the last good chart, not ${u.chart}`);
    assert.ok(!upgradesSince(op, before).some((u) => u.release !== canary && u.chart === edited));

    // 3. The fix: tried on the same CR first, then everywhere; nothing is held any more.
    rmSync(join(chartDir, 'templates', 'broken.yaml'));
    const valuesFile = join(chartDir, 'values.yaml');
    writeFileSync(valuesFile, readFileSync(valuesFile, 'utf8').replace('Hello from chartpilot', 'Hello after the fix'));
    const beforeFix = op.helmCalls().length;
    const all = [...names, 'delta'];
    for (const n of all) await web.until(n, 'the fix deployed, nothing held', (c) => !isHeld(c) && !failedHere(c) && condition(c, 'Deployed')?.reason === 'UpgradeSuccessful' && (c.status?.deployedRelease?.revision ?? 0) >= 2);
    const fixes = upgradesSince(op, beforeFix);
    assert.equal(fixes[0]?.release, canary, `the fix went to ${canary} first: ${JSON.stringify(fixes)}`);
    const content = await cluster.kubectl(['get', 'configmap', `${held}-content`, '-n', ns, '-o', 'jsonpath={.data.index\\.html}']);
    assert.equal(content.stdout, 'changed while held');
    const deltaContent = await cluster.kubectl(['get', 'configmap', 'delta-content', '-n', ns, '-o', 'jsonpath={.data.index\\.html}']);
    assert.equal(deltaContent.stdout, 'Hello after the fix');
  });
});

/** The releases helm upgraded (or installed) after the first `from` helm calls, with the chart each was given. */
function upgradesSince(op: RunningOperator, from: number): { release: string; chart: string }[] {
  return op
    .helmCalls()
    .slice(from)
    .filter((l) => l.startsWith('upgrade '))
    .map((l) => {
      const m = / -- (\S+) (\S+)$/u.exec(l);
      return { release: m?.[1] ?? '', chart: m?.[2] ?? '' };
    });
}
