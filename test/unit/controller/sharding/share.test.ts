import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pickOf } from '../../../../src/controller/sharding/guard.js';
import { dependentShare } from '../../../../src/controller/sharding/share.js';
import { selects } from '../../../../src/dependents/selection.js';
import { BUCKETS, bucketOf } from '../../../../src/lib/uid-bucket.js';

const uids = Array.from({ length: 3000 }, (_, i) => `30000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`);

describe('dependentShare', () => {
  it('holds the objects of exactly the CRs the same view gives the member, and the members\' shares hold all once', () => {
    const view = ['a', 'b', 'c'];
    const shares = view.map((m) => dependentShare(view, m));
    for (const uid of uids) {
      const holders = view.filter((_, i) => selects(shares[i] ?? dependentShare([], 'x'), bucketOf(uid)));
      assert.deepEqual(holders, [pickOf(view, uid)], `${uid}: held by its CR's owner alone`);
    }
    const total = shares.reduce((n, s) => n + (s.kind === 'buckets' ? s.buckets.size : BUCKETS), 0);
    assert.equal(total, BUCKETS);
  });

  it('is empty for a member not in its own view', () => {
    const share = dependentShare(['b', 'c'], 'a');
    assert.ok(share.kind === 'buckets' && share.buckets.size === 0);
  });
});
