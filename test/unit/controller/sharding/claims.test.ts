/**
 * A member's claims as it keeps them: nothing is acted on before its view is in its Lease and the
 * others' Leases were read after that; a view change stops new work at once and writes the running
 * CRs the new view gives to others as busy; the end of such a run takes the uid out of the Lease.
 */
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import pino from 'pino';
import { ShardClaims } from '../../../../src/controller/sharding/claims.js';
import { pickOf } from '../../../../src/controller/sharding/guard.js';
import { MemberAnnotations, shardLabel } from '../../../../src/controller/sharding/names.js';
import type { RingMember } from '../../../../src/controller/sharding/ring-view.js';
import type { KubeClient } from '../../../../src/kube/rest.js';
import type { KubeObject } from '../../../../src/kube/types.js';
import { until } from '../../fakes/clock.js';

const RING = 'r';

function member(name: string): RingMember {
  return { member: name, holder: `${name}_1`, leaseDurationMs: 15_000, observedAt: 0, leaving: false, version: 'v', settings: 's', lease: `r-shard-${name}`, resourceVersion: '1', instance: name, handOver: undefined };
}

function uidFor(view: readonly string[], owner: string): string {
  for (let i = 0; ; i++) {
    const uid = `20000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;
    if (pickOf(view, uid) === owner) return uid;
  }
}

function cr(uid: string, owner = 'a'): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: uid.slice(-4), namespace: 'ns', uid, labels: { [shardLabel(RING)]: owner } } };
}

/** Member a, with the ring's Leases as `leases` says and its own writes recorded. */
function setup(t: TestContext, retryPeriodMs = 60_000) {
  let members = [member('a')];
  const writes: Record<string, string>[] = [];
  const views: string[] = [];
  let others: KubeObject[] = [];
  let reads = 0;
  const client = {
    pathFor: () => '/apis/coordination.k8s.io/v1/namespaces/ns/leases',
    request: () => {
      reads++;
      return Promise.resolve({ items: others });
    },
  } as unknown as KubeClient;
  const claims: ShardClaims = new ShardClaims({
    client,
    namespace: 'ns',
    ring: RING,
    member: 'a',
    version: 'v',
    settings: 's',
    view: { states: () => members.map((m) => ({ member: m, state: 'ready' })) },
    retryPeriodMs,
    log: pino({ level: 'silent' }),
    onViewChanged: (view) => views.push(view.join(',')),
    publish: () => {
      const annotations = claims.annotations();
      writes.push(annotations);
      claims.written(annotations);
      return Promise.resolve(true);
    },
  });
  t.after(() => {
    claims.stop();
  });
  /** Admits `obj` and, when admitted, ends the run at once: what would this member do now. */
  const decide = (obj: KubeObject) => {
    const { decision, end } = claims.admit(obj);
    end?.();
    return decision;
  };
  return {
    claims,
    decide,
    writes,
    views,
    reads: () => reads,
    setMembers: (names: string[]) => {
      members = names.map(member);
    },
    setOthers: (leases: { member: string; view: string; busy?: string }[]) => {
      others = leases.map((l) => ({
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: `r-shard-${l.member}`, annotations: { [MemberAnnotations.member]: l.member, [MemberAnnotations.view]: l.view, [MemberAnnotations.busy]: l.busy ?? '' } },
        spec: { holderIdentity: `${l.member}_1` },
      }));
    },
  };
}

describe('ShardClaims', () => {
  it('acts only once its view is written and the others read after; a view change stops new work and writes running CRs as busy until they end', async (t) => {
    const s = setup(t);
    const u = uidFor(['a', 'b'], 'b');
    const mine = uidFor(['a', 'b'], 'a');
    assert.equal(s.claims.admit(cr(u)).decision.kind, 'wait', 'nothing before start');
    s.claims.start();
    await until('view written and others read', () => s.writes.length === 1 && s.reads() === 1);
    assert.deepEqual(s.writes[0], { [MemberAnnotations.view]: 'a', [MemberAnnotations.busy]: '' });
    await until('verified', () => s.decide(cr(mine)).kind === 'act');
    const run = s.claims.admit(cr(u));
    assert.equal(run.decision.kind, 'act', 'alone in the ring, a takes everything');

    // b joins: its Lease already gives it u. a starts nothing more until it wrote the new view...
    s.setOthers([{ member: 'b', view: 'a,b' }]);
    s.setMembers(['a', 'b']);
    s.claims.refresh();
    // ...which it writes at once, with u busy (its run goes on).
    assert.deepEqual(s.writes.at(-1), { [MemberAnnotations.view]: 'a,b', [MemberAnnotations.busy]: u });
    assert.deepEqual(s.decide(cr(mine)), { kind: 'wait', reason: 'unverified' }, 'not before the others were read again');
    await until('others read again', () => s.decide(cr(mine)).kind === 'act');
    assert.equal(s.reads(), 2);
    assert.deepEqual(s.claims.admit(cr(u)).decision, { kind: 'wait', reason: 'not-the-ring' });
    // The run on u ends: the Lease no longer lists it, so b may take it.
    run.end?.();
    await until('busy cleared', () => s.writes.at(-1)?.[MemberAnnotations.busy] === '');
    assert.equal(s.writes.at(-1)?.[MemberAnnotations.view], 'a,b');
  });

  it('tells each change of its view, once (the dependent watches follow it)', (t) => {
    const s = setup(t);
    s.claims.start();
    assert.deepEqual(s.views, ['a']);
    s.claims.refresh();
    assert.deepEqual(s.views, ['a'], 'no change, nothing told');
    s.setMembers(['b', 'a']);
    s.claims.refresh();
    assert.deepEqual(s.views, ['a', 'a,b']);
    assert.deepEqual(s.claims.currentView(), ['a', 'b']);
  });

  it('waits while another member\'s Lease claims the CR, and reads again until it does not', async (t) => {
    const s = setup(t, 20);
    const mine = uidFor(['a', 'b'], 'a');
    s.setMembers(['a', 'b']);
    // b has not seen the ring with a yet: its Lease still gives it everything.
    s.setOthers([{ member: 'b', view: 'b' }]);
    s.claims.start();
    await until('others read', () => s.reads() >= 1 && (s.decide(cr(mine)) as { reason?: string }).reason !== 'unverified');
    assert.deepEqual(s.decide(cr(mine)), { kind: 'wait', reason: 'claimed', by: 'b' });
    s.setOthers([{ member: 'b', view: 'a,b' }]);
    // A tick (retry period) reads again, as the wait asked.
    for (let i = 0; i < 200 && s.decide(cr(mine)).kind !== 'act'; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.equal(s.decide(cr(mine)).kind, 'act', 'admitted once b\'s Lease no longer claims it');
  });
});
