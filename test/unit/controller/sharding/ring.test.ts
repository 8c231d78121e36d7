import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BUCKETS, bucketOf, HashRing } from '../../../../src/controller/sharding/ring.js';

/** Deterministic uids (the test must not depend on chance). */
const uids = Array.from({ length: 20_000 }, (_, i) => `0000${String(i)}-uid-${String((i * 7919) % 10007)}`);

function shares(ring: HashRing): Map<string, number> {
  const out = new Map<string, number>();
  for (const uid of uids) {
    const owner = ring.ownerOfUid(uid) ?? '';
    out.set(owner, (out.get(owner) ?? 0) + 1);
  }
  return out;
}

describe('HashRing', () => {
  it('an empty ring owns nothing; a ring of one owns everything', () => {
    assert.equal(new HashRing([]).ownerOf('x'), undefined);
    const one = new HashRing(['a']);
    assert.ok(uids.slice(0, 100).every((u) => one.ownerOfUid(u) === 'a'));
  });

  it('is the same on every replica: the order members are given in does not matter', () => {
    const x = new HashRing(['pod-a', 'pod-b', 'pod-c']);
    const y = new HashRing(['pod-c', 'pod-a', 'pod-b', 'pod-a']);
    assert.deepEqual(x.members, ['pod-a', 'pod-b', 'pod-c']);
    assert.ok(uids.every((u) => x.ownerOfUid(u) === y.ownerOfUid(u)));
  });

  it('gives each of N members about 1/N', () => {
    for (const members of [['a', 'b'], ['op-7d9f-x1', 'op-7d9f-x2', 'op-7d9f-x3'], ['m1', 'm2', 'm3', 'm4', 'm5']]) {
      const s = shares(new HashRing(members));
      assert.equal(s.size, members.length);
      const ideal = uids.length / members.length;
      for (const [m, n] of s) assert.ok(n > ideal * 0.7 && n < ideal * 1.3, `${m}: ${String(n)} of ${String(uids.length)} (ideal ${String(ideal)})`);
    }
  });

  it('adding a member moves about 1/(N+1), all of it to the new member', () => {
    const before = new HashRing(['a', 'b', 'c']);
    const after = new HashRing(['a', 'b', 'c', 'd']);
    let moved = 0;
    for (const u of uids) {
      const from = before.ownerOfUid(u);
      const to = after.ownerOfUid(u);
      if (from === to) continue;
      moved++;
      assert.equal(to, 'd', 'only to the new member');
    }
    const quarter = uids.length / 4;
    assert.ok(moved > quarter * 0.6 && moved < quarter * 1.4, `moved ${String(moved)}, a quarter is ${String(quarter)}`);
  });

  it('removing a member moves only its keys', () => {
    const before = new HashRing(['a', 'b', 'c', 'd']);
    const after = new HashRing(['a', 'b', 'd']);
    for (const u of uids) {
      const from = before.ownerOfUid(u);
      if (from !== 'c') assert.equal(after.ownerOfUid(u), from);
      else assert.notEqual(after.ownerOfUid(u), 'c');
    }
  });

  it('buckets a uid the same every time, within range', () => {
    for (const u of uids.slice(0, 1000)) {
      const b = bucketOf(u);
      assert.ok(Number.isInteger(b) && b >= 0 && b < BUCKETS);
      assert.equal(bucketOf(u), b);
    }
    assert.throws(() => new HashRing(['a'], 0), RangeError);
  });

  it('lists each member\'s buckets: every bucket once, and a uid\'s owner is its bucket\'s', () => {
    const ring = new HashRing(['a', 'b', 'c']);
    const lists = ['a', 'b', 'c'].map((m) => ring.bucketsOf(m));
    const all = lists.flat().sort((x, y) => x - y);
    assert.deepEqual(all, Array.from({ length: BUCKETS }, (_, i) => i), 'the members\' buckets partition all of them');
    for (const list of lists) assert.deepEqual(list, [...list].sort((x, y) => x - y), 'ascending');
    for (const u of uids.slice(0, 2000)) {
      const owner = ring.ownerOfUid(u);
      assert.ok(owner !== undefined && ring.bucketsOf(owner).includes(bucketOf(u)), `${u}: owned by ${String(owner)}, whose buckets hold its bucket`);
    }
    assert.deepEqual(new HashRing([]).bucketsOf('a'), []);
    assert.deepEqual(ring.bucketsOf('stranger'), []);
  });
});
