import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { admission, peerOf, PeerConnections } from '../../../src/observe/peer-admission.js';

const LIMITS = { maxConnections: 6, maxPerPeer: 3 };
const held = (entries: Record<string, number>): Map<string, number> => new Map(Object.entries(entries));

describe('admission', () => {
  it('admits a peer below its share while there is room', () => {
    assert.deepEqual(admission(held({}), 'kubelet', LIMITS), { admit: true });
    assert.deepEqual(admission(held({ tenant: 2, kubelet: 1 }), 'kubelet', LIMITS), { admit: true });
  });

  it('refuses a peer at its share at once, however much room is left', () => {
    assert.deepEqual(admission(held({ tenant: 3 }), 'tenant', LIMITS), { admit: false, why: 'peer-share' });
  });

  it('when full, lets a lighter peer in at the heaviest one\'s expense', () => {
    assert.deepEqual(admission(held({ a: 3, b: 3 }), 'kubelet', LIMITS), { admit: true, evict: 'a' });
    assert.deepEqual(admission(held({ a: 2, b: 3, kubelet: 1 }), 'kubelet', LIMITS), { admit: true, evict: 'b' });
  });

  it('when full, refuses a peer that would only trade places with the heaviest', () => {
    // Six peers with one each: filling the cap took as many addresses as it has slots.
    assert.deepEqual(admission(held({ a: 1, b: 1, c: 1, d: 1, e: 1, f: 1 }), 'kubelet', LIMITS), { admit: false, why: 'full' });
    // b would hold 2 and a 1 afterwards: the same imbalance the other way round.
    assert.deepEqual(admission(held({ a: 2, b: 1, c: 1, d: 1, e: 1 }), 'b', LIMITS), { admit: false, why: 'full' });
  });
});

describe('peerOf', () => {
  it('counts an IPv4 peer of a dual-stack listener as its IPv4 address, and IPv6 peers as they are', () => {
    assert.equal(peerOf('::ffff:10.0.0.7'), '10.0.0.7');
    assert.equal(peerOf('::FFFF:127.0.0.2'), '127.0.0.2');
    assert.equal(peerOf('10.0.0.7'), '10.0.0.7');
    assert.equal(peerOf('fd00::7'), 'fd00::7');
    assert.equal(peerOf('::ffff:abcd'), '::ffff:abcd');
  });

  it('has no peer for a socket that is already gone', () => {
    assert.equal(peerOf(undefined), undefined);
    assert.equal(peerOf(''), undefined);
  });
});

describe('PeerConnections', () => {
  it('holds each peer to its share and frees a slot when a connection closes', () => {
    const table = new PeerConnections<string>(LIMITS);
    assert.deepEqual(['t1', 't2', 't3', 't4'].map((c) => table.offer('tenant', c).admitted), [true, true, true, false]);
    assert.equal(table.held('tenant'), 3);
    assert.equal(table.offer('kubelet', 'k1').admitted, true, 'another peer still gets in');
    table.release('tenant', 't2');
    table.release('tenant', 't2'); // a second close of the same connection changes nothing
    assert.equal(table.held('tenant'), 2);
    assert.equal(table.offer('tenant', 't5').admitted, true);
    assert.equal(table.held(), 4);
  });

  it('evicts the oldest connection of the heaviest peer when full, and forgets it', () => {
    const table = new PeerConnections<string>(LIMITS);
    for (const c of ['a1', 'a2', 'a3']) table.offer('a', c);
    for (const c of ['b1', 'b2', 'b3']) table.offer('b', c);
    assert.deepEqual(table.offer('kubelet', 'k1'), { admitted: true, evicted: 'a1' });
    assert.equal(table.held('a'), 2);
    assert.equal(table.held(), 6, 'still within the cap');
    assert.deepEqual(table.all().sort(), ['a2', 'a3', 'b1', 'b2', 'b3', 'k1']);
    // The evicted connection's own close, when it comes, is not counted twice.
    table.release('a', 'a1');
    assert.equal(table.held(), 6);
    assert.deepEqual(table.offer('kubelet', 'k2'), { admitted: true, evicted: 'b1' });
  });

  it('drops a peer with nothing left, so its share starts afresh', () => {
    const table = new PeerConnections<string>({ maxConnections: 2, maxPerPeer: 2 });
    table.offer('a', 'a1');
    table.offer('a', 'a2');
    table.release('a', 'a1');
    table.release('a', 'a2');
    assert.deepEqual(table.all(), []);
    assert.equal(table.held('a'), 0);
    assert.deepEqual(['b1', 'b2'].map((c) => table.offer('b', c).admitted), [true, true]);
  });
});
