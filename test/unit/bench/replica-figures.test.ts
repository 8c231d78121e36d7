import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { replicaDeltas, shareFigures, shares } from '../../../bench/replica-figures.js';
import { OperatorMetrics } from '../../../src/observe/metrics.js';

describe('bench per-replica figures', () => {
  it('reads the share series from the operator\'s own exposition: CRs held, members, dependents cached', async () => {
    const m = new OperatorMetrics({ build: { version: '1' }, defaultMetrics: false });
    m.shardRing('bench-ring', 'chartpilot-1', () => 331, () => 3);
    m.dependentCaches(() => ({ owned: 993, unbucketed: 4, buckets: 347, swaps: 2 }));
    assert.deepEqual(shareFigures((await m.render()).body), {
      assignedCrs: 331, ringMembers: 3, dependentsOwned: 993, dependentsUnbucketed: 4, dependentBuckets: 347, dependentSwaps: 2,
    });
  });

  it('without --shards: the dependents figures only, the ring\'s series absent (null, not 0)', async () => {
    const m = new OperatorMetrics({ build: { version: '1' }, defaultMetrics: false });
    m.dependentCaches(() => ({ owned: 3000, unbucketed: 0, buckets: 0, swaps: 0 }));
    const f = shareFigures((await m.render()).body);
    assert.equal(f.assignedCrs, null);
    assert.equal(f.ringMembers, null);
    assert.equal(f.dependentsOwned, 3000);
    assert.equal(f.dependentsUnbucketed, 0);
  });

  it('nothing from an empty or foreign body; other series and label values are not mistaken for them', () => {
    assert.deepEqual(shareFigures(''), { assignedCrs: null, ringMembers: null, dependentsOwned: null, dependentsUnbucketed: null, dependentBuckets: null, dependentSwaps: null });
    const f = shareFigures([
      'chartpilot_dependent_cached_objects_other{watch="owned"} 7',
      'chartpilot_dependent_cached_objects{watch="unowned"} 9',
      'chartpilot_dependent_cached_objects{watch="owned"} 12 1700000000000',
      'chartpilot_dependent_watch_buckets NaN',
    ].join('\n'));
    assert.equal(f.dependentsOwned, 12);
    assert.equal(f.dependentsUnbucketed, null);
    assert.equal(f.dependentBuckets, null);
  });

  it('per replica: deltas of CPU (operator apart) and helm processes, the phase\'s peak RSS; a replica with no earlier mark counts from 0', () => {
    const a = [{ name: 'r0', self: 10, children: 5, helm: 4 }, { name: 'r1', self: 1, children: 0, helm: 1 }];
    const b = [{ name: 'r0', self: 12.5, children: 9, helm: 6 }, { name: 'r1', self: 3, children: 1, helm: 1 }, { name: 'r2', self: 2, children: 1, helm: 1 }];
    const d = replicaDeltas(a, b, new Map([['r0', 150 * 1024], ['r2', 100 * 1024]]));
    assert.deepEqual(d, [
      { name: 'r0', cpuSeconds: 6.5, cpuOperatorSeconds: 2.5, helmProcesses: 2, peakRssMiB: 150 },
      { name: 'r1', cpuSeconds: 3, cpuOperatorSeconds: 2, helmProcesses: 0, peakRssMiB: 0 },
      { name: 'r2', cpuSeconds: 3, cpuOperatorSeconds: 2, helmProcesses: 1, peakRssMiB: 100 },
    ]);
  });

  it('shares of a sum', () => {
    assert.deepEqual(shares([1, 1, 2]), [0.25, 0.25, 0.5]);
    assert.deepEqual(shares([0, 0]), [0, 0]);
  });
});
