/** Step 3 proof: chart and watches.yaml edits apply without a restart; bad edits change nothing. */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse, stringify } from 'yaml';
import { newNamespace, testCluster, waitFor } from './harness.js';
import { FIXTURE_CHARTS, SAMPLE_CHART, applyCr, condition, getCr, installCrd, startOperator, testKind, waitForCr, writeWatches } from './operator-harness.js';

describe('hot reload', () => {
  it('follows chart and watches.yaml edits without a restart, and ignores a broken edit', async (t) => {
    const cluster = await testCluster();
    const web = testKind('ReloadWeb');
    const cfg = testKind('ReloadCfg');
    await installCrd(cluster, web);
    await installCrd(cluster, cfg);
    const ns = await newNamespace(t, 'reload');
    const op = await startOperator(t, cluster, { namespaces: [ns], watches: [{ kind: web, chart: SAMPLE_CHART }] });
    await applyCr(cluster, web, ns, 'site', {});
    await waitForCr(cluster, web, ns, 'site', 'Deployed', (cr) => condition(cr, 'Deployed')?.status === 'True', op);

    // 1. Editing the chart's values.yaml upgrades the existing CR.
    const valuesFile = join(op.dir, 'charts', `${web.kind.toLowerCase()}-webapp`, 'values.yaml');
    writeFileSync(valuesFile, readFileSync(valuesFile, 'utf8').replace('Hello from chartpilot', 'Hello after reload'));
    await waitForCr(cluster, web, ns, 'site', 'revision 2 after chart edit', (cr) => cr.status?.deployedRelease?.revision === 2, op);
    const content = await cluster.kubectl(['get', 'configmap', 'site-content', '-n', ns, '-o', 'jsonpath={.data.index\\.html}']);
    assert.equal(content.stdout, 'Hello after reload');

    // 2. A broken watches.yaml keeps the running kind working.
    const good = readFileSync(op.watchesFile, 'utf8');
    writeFileSync(op.watchesFile, `${good}\n- kind: [not, a, kind]\n  reconcilPeriod: soon\n`);
    await waitFor('the broken edit to be reported', () => Promise.resolve(op.logs().includes('invalid watches.yaml edit ignored')));
    await applyCr(cluster, web, ns, 'site', { message: 'still managed' });
    const still = await waitForCr(cluster, web, ns, 'site', 'revision 3 after a spec change', (cr) => cr.status?.deployedRelease?.revision === 3, op);
    assert.equal(condition(still, 'Deployed')?.status, 'True');

    // 3. A new entry starts its kind without a restart; the first kind is not disturbed.
    writeWatches(op.dir, [
      { kind: web, chart: SAMPLE_CHART },
      { kind: cfg, chart: `${FIXTURE_CHARTS}/settings` },
    ]);
    await applyCr(cluster, cfg, ns, 'prefs', { settings: { color: 'green' } });
    await waitForCr(cluster, cfg, ns, 'prefs', 'Deployed by the new entry', (cr) => condition(cr, 'Deployed')?.status === 'True', op);
    assert.equal((await getCr(cluster, web, ns, 'site'))?.status?.deployedRelease?.revision, 3, 'the running kind was not re-deployed');

    // 4. Removing the entry stops that kind's controller.
    const entries = parse(readFileSync(op.watchesFile, 'utf8')) as unknown[];
    writeFileSync(op.watchesFile, stringify(entries.slice(0, 1)));
    await waitFor('the controller to stop', () => Promise.resolve(op.logs().includes('controller stopped')));
    await applyCr(cluster, cfg, ns, 'later', {});
    await applyCr(cluster, web, ns, 'probe', {});
    await waitForCr(cluster, web, ns, 'probe', 'Deployed', (cr) => condition(cr, 'Deployed')?.status === 'True', op);
    assert.equal((await getCr(cluster, cfg, ns, 'later'))?.status, undefined, 'a removed kind is no longer reconciled');
  });
});
