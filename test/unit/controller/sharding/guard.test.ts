/**
 * The member's side of the ring: a CR author can write a CR's shard and drain labels, so a member
 * acts only on what its own view of the ring gives it, once no other member's Lease claims it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { claimsOf } from '../../../../src/controller/sharding/claims.js';
import { guard, pickOf, type GuardInput, type MemberClaims } from '../../../../src/controller/sharding/guard.js';
import { MemberAnnotations } from '../../../../src/controller/sharding/names.js';

/** A uid the view gives to `member` (searched, so the test follows the ring's hash). */
function uidFor(view: readonly string[], member: string, skip = 0): string {
  let found = 0;
  for (let i = 0; i < 100_000; i++) {
    const uid = `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;
    if (pickOf(view, uid) === member && found++ === skip) return uid;
  }
  throw new Error(`no uid for ${member} in ${view.join(',')}`);
}

const AB = ['a', 'b'];

function input(extra: Partial<GuardInput> & Pick<GuardInput, 'uid'>): GuardInput {
  return { member: 'a', owner: 'a', draining: false, view: AB, published: AB, others: [{ member: 'b', view: AB, busy: new Set() }], ...extra };
}

describe('guard', () => {
  const mine = uidFor(AB, 'a');
  const theirs = uidFor(AB, 'b');

  it('acts on a CR the label and the ring both give this member, once no other member claims it', () => {
    assert.deepEqual(guard(input({ uid: mine })), { kind: 'act' });
    // Alone in the ring.
    assert.deepEqual(guard(input({ uid: mine, view: ['a'], published: ['a'], others: [] })), { kind: 'act' });
  });

  it('a forged label naming this member is not acted on when the ring gives the CR to another', () => {
    assert.deepEqual(guard(input({ uid: theirs })), { kind: 'wait', reason: 'not-the-ring' });
    // Nor when this member is not in its own view (it is leaving, or not ready yet).
    assert.deepEqual(guard(input({ uid: mine, view: ['b'], published: ['b'] })), { kind: 'wait', reason: 'not-the-ring' });
  });

  it('a removed label, or one naming another member, is never acted on', () => {
    assert.deepEqual(guard(input({ uid: mine, owner: undefined })), { kind: 'wait', reason: 'not-labelled' });
    assert.deepEqual(guard(input({ uid: mine, owner: '' })), { kind: 'wait', reason: 'not-labelled' });
    assert.deepEqual(guard(input({ uid: mine, owner: 'b' })), { kind: 'wait', reason: 'not-labelled' });
  });

  it('a drain label, forged or not, only makes the member let go, never act', () => {
    assert.deepEqual(guard(input({ uid: mine, draining: true })), { kind: 'let-go' });
    assert.deepEqual(guard(input({ uid: theirs, draining: true })), { kind: 'let-go' });
    // A drain on a CR labelled for another member: not this member's to hand back.
    assert.deepEqual(guard(input({ uid: mine, owner: 'b', draining: true })), { kind: 'wait', reason: 'not-labelled' });
  });

  it('nothing is acted on until this member\'s view is in its Lease and the others were read after that', () => {
    assert.deepEqual(guard(input({ uid: mine, published: undefined })), { kind: 'wait', reason: 'unpublished' });
    assert.deepEqual(guard(input({ uid: mine, published: ['a'] })), { kind: 'wait', reason: 'unpublished' });
    assert.deepEqual(guard(input({ uid: mine, others: undefined })), { kind: 'wait', reason: 'unverified' });
  });

  it('waits while another member claims the CR: its view still gives it the CR, it lists it busy, or its Lease says nothing', () => {
    // The ring was [b]: b's Lease still says so (b has not seen a join yet, or its helm call runs).
    assert.deepEqual(guard(input({ uid: mine, others: [{ member: 'b', view: ['b'], busy: new Set() }] })), { kind: 'wait', reason: 'claimed', by: 'b' });
    assert.deepEqual(guard(input({ uid: mine, others: [{ member: 'b', view: AB, busy: new Set([mine]) }] })), { kind: 'wait', reason: 'claimed', by: 'b' });
    assert.deepEqual(guard(input({ uid: mine, others: [{ member: 'b', view: undefined, busy: new Set() }] })), { kind: 'wait', reason: 'claimed', by: 'b' });
    // Its busy uids of other CRs, and views that give the CR to a third member, do not hold this one up.
    assert.deepEqual(guard(input({ uid: mine, others: [{ member: 'b', view: AB, busy: new Set([theirs]) }] })), { kind: 'act' });
  });

  it('the tenant\'s move during a ring change: the old owner is never joined by the new one while its call runs', () => {
    // The ring grows from [a] to [a, b]; u moves from a to b. a reconciles u (helm runs).
    const u = uidFor(AB, 'b');
    assert.equal(pickOf(['a'], u), 'a');
    // a has not published [a, b] yet: its Lease still gives it u.
    const aBefore: MemberClaims = { member: 'a', view: ['a'], busy: new Set() };
    // a published [a, b] with u busy (its call still runs).
    const aBusy: MemberClaims = { member: 'a', view: AB, busy: new Set([u]) };
    const aDone: MemberClaims = { member: 'a', view: AB, busy: new Set() };
    // The tenant relabels u to b at once (no drain, no acknowledgement).
    const b = (others: MemberClaims[]): GuardInput => ({ member: 'b', uid: u, owner: 'b', draining: false, view: AB, published: AB, others });
    assert.deepEqual(guard(b([aBefore])), { kind: 'wait', reason: 'claimed', by: 'a' });
    assert.deepEqual(guard(b([aBusy])), { kind: 'wait', reason: 'claimed', by: 'a' });
    // a's call ended and its Lease says so: b may act (a starts nothing for u under [a, b]).
    assert.deepEqual(guard(b([aDone])), { kind: 'act' });
    assert.deepEqual(guard({ member: 'a', uid: u, owner: 'a', draining: false, view: AB, published: AB, others: [{ member: 'b', view: AB, busy: new Set() }] }), { kind: 'wait', reason: 'not-the-ring' });
  });

  it('two members never both act on one CR, whatever the labels and however the views differ, when each read the other after writing its own', () => {
    const views = [['a'], ['b'], AB, ['a', 'b', 'c'], ['a', 'c'], ['b', 'c']];
    let checked = 0;
    for (const va of views) {
      for (const vb of views) {
        for (const staleOfB of [[], ...views]) {
          // Whichever wrote its view second read the other's current one; the first may have read a stale one.
          for (const aWroteFirst of [true, false]) {
            const aSeesB: MemberClaims = { member: 'b', view: aWroteFirst ? staleOfB : vb, busy: new Set() };
            const bSeesA: MemberClaims = { member: 'a', view: aWroteFirst ? va : staleOfB, busy: new Set() };
            for (let i = 0; i < 40; i++) {
              const uid = `10000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;
              // The worst forgery: each member finds its own name in the label (the label changed in between).
              const a = guard({ member: 'a', uid, owner: 'a', draining: false, view: va, published: va, others: [aSeesB] });
              const b = guard({ member: 'b', uid, owner: 'b', draining: false, view: vb, published: vb, others: [bSeesA] });
              assert.ok(!(a.kind === 'act' && b.kind === 'act'), `both act on ${uid}: a sees ${va.join(',')}, b sees ${vb.join(',')}`);
              checked++;
            }
          }
        }
      }
    }
    assert.ok(checked > 1000);
  });
});

describe('claimsOf', () => {
  const lease = (member: string, holder: string, annotations: Record<string, string>) => ({
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name: `r-shard-${member}`, annotations: { [MemberAnnotations.member]: member, ...annotations } },
    spec: { holderIdentity: holder },
  });

  it('reads each other member\'s view and busy uids; a released Lease claims nothing; no view claims everything', () => {
    const claims = claimsOf(
      [
        lease('a', 'a_1', { [MemberAnnotations.view]: 'b,a', [MemberAnnotations.busy]: 'u1,u2' }),
        lease('b', 'b_1', {}),
        lease('c', '', { [MemberAnnotations.view]: 'c' }),
        lease('self', 'self_1', { [MemberAnnotations.view]: 'self' }),
      ],
      'self',
    );
    assert.deepEqual(claims, [
      { member: 'a', view: ['a', 'b'], busy: new Set(['u1', 'u2']) },
      { member: 'b', view: undefined, busy: new Set() },
    ]);
  });
});
