/** Chart and watches.yaml edits apply without a restart; a broken edit changes nothing. */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse, stringify } from 'yaml';
import { installCrd, testKind } from './crd.js';
import { condition, crsOf } from './crs.js';
import { SAMPLE_CHART, fixtureChart } from './fixtures.js';
import { writeWatches } from './operator.js';
import { operatorScenario } from './scenario.js';
import { waitFor } from './wait.js';

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
});
