/**
 * A watches.yaml edit that changes only confinement (allowCrossNamespace) applies to running CRs at
 * once, even with `reconcilePeriod: 0` (no periodic re-check that would pick it up later).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newNamespace, testCluster } from './harness.js';
import { FIXTURE_CHARTS, applyCr, condition, installCrd, startOperator, testKind, waitForCr, writeWatches } from './operator-harness.js';

describe('hot reload of confinement', () => {
  it('tightening allowCrossNamespace re-checks every CR of the kind at once', async (t) => {
    const cluster = await testCluster();
    const k = testKind('Elsewhere');
    await installCrd(cluster, k);
    const ns = await newNamespace(t, 'confine');
    const other = await newNamespace(t, 'confine-other');
    const chart = `${FIXTURE_CHARTS}/elsewhere`;
    const op = await startOperator(t, cluster, {
      namespaces: [ns],
      watches: [{ kind: k, chart, extra: { reconcilePeriod: '0', allowCrossNamespace: true } }],
    });
    await applyCr(cluster, k, ns, 'spread', { targetNamespace: other });
    await waitForCr(cluster, k, ns, 'spread', 'Deployed', (cr) => condition(cr, 'Deployed')?.status === 'True', op);
    const placed = await cluster.kubectl(['get', 'configmap', 'spread-elsewhere', '-n', other, '-o', 'jsonpath={.data.from}']);
    assert.equal(placed.stdout, ns, 'allowed: the ConfigMap went to the other namespace');

    // Same chart, same period, same overrides: only the confinement setting changes.
    writeWatches(op.dir, [{ kind: k, chart, extra: { reconcilePeriod: '0', allowCrossNamespace: false } }]);
    const refused = await waitForCr(cluster, k, ns, 'spread', 'the tightened confinement to refuse the release', (cr) => condition(cr, 'ReleaseFailed')?.status === 'True', op);
    assert.match(condition(refused, 'ReleaseFailed')?.message ?? '', new RegExp(`namespace ${other}`));
    assert.equal(refused.status?.deployedRelease?.revision, 1, 'the deployed revision stays as it was');
  });
});
