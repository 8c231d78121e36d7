/**
 * A watches.yaml edit that changes only confinement (allowCrossNamespace) applies to running CRs at
 * once, even with `reconcilePeriod: 0` (no periodic re-check that would pick it up later).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { condition } from './crs.js';
import { fixtureChart } from './fixtures.js';
import { newNamespace } from './harness.js';
import { writeWatches } from './operator.js';
import { operatorScenario } from './scenario.js';

describe('hot reload of confinement', () => {
  it('tightening allowCrossNamespace re-checks every CR of the kind at once', async (t) => {
    const chart = fixtureChart('elsewhere');
    const { cluster, ns, op, cr } = await operatorScenario(t, {
      kind: 'Elsewhere',
      chart,
      namespace: 'confine',
      extra: { reconcilePeriod: '0', allowCrossNamespace: true },
    });
    const other = await newNamespace(t, 'confine-other');
    await cr.apply('spread', { targetNamespace: other });
    await cr.deployed('spread');
    const placed = await cluster.kubectl(['get', 'configmap', 'spread-elsewhere', '-n', other, '-o', 'jsonpath={.data.from}']);
    assert.equal(placed.stdout, ns, 'allowed: the ConfigMap went to the other namespace');

    // Same chart, same period, same overrides: only the confinement setting changes.
    writeWatches(op.dir, [{ kind: cr.kind, chart, extra: { reconcilePeriod: '0', allowCrossNamespace: false } }]);
    const refused = await cr.until('spread', 'the tightened confinement to refuse the release', (c) => condition(c, 'ReleaseFailed')?.status === 'True');
    assert.match(condition(refused, 'ReleaseFailed')?.message ?? '', new RegExp(`namespace ${other}`));
    assert.equal(refused.status?.deployedRelease?.revision, 1, 'the deployed revision stays as it was');
  });
});
