/**
 * The shard protocol's pure core: how the sharder judges members, what it does with one CR, and
 * the order that keeps two members from acting on one release — a member that cannot renew its
 * Lease stops (the leader election algorithm's renew deadline) before the sharder calls it dead.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LeaderElector } from '../../../../src/controller/leader-election/elector.js';
import { decide, memberState, type MemberObservation, type MemberState } from '../../../../src/controller/sharding/membership.js';
import { shardTimings } from '../../../../src/controller/sharding/timings.js';
import { FakeClock, settle } from '../../fakes/clock.js';
import { FakeLease, FakeLeaseStore } from '../../fakes/lease-store.js';

const LEASE_MS = 15_000;

function seen(at: number, extra: Partial<MemberObservation> = {}): MemberObservation {
  return { member: 'a', holder: 'a_1', leaseDurationMs: LEASE_MS, observedAt: at, leaving: false, version: 'v', settings: 's', ...extra };
}

const states = (m: Record<string, MemberState>) => (name: string): MemberState => m[name] ?? 'dead';

describe('memberState', () => {
  it('ready while renewed within a lease duration, expired until two, then dead', () => {
    assert.equal(memberState(seen(0), 0, LEASE_MS), 'ready');
    assert.equal(memberState(seen(0), LEASE_MS - 1, LEASE_MS), 'ready');
    assert.equal(memberState(seen(0), LEASE_MS, LEASE_MS), 'expired');
    assert.equal(memberState(seen(0), 2 * LEASE_MS - 1, LEASE_MS), 'expired');
    assert.equal(memberState(seen(0), 2 * LEASE_MS, LEASE_MS), 'dead');
  });

  it('a leaving or released member gets nothing new but is not dead before two lease durations', () => {
    assert.equal(memberState(seen(0, { leaving: true }), 1, LEASE_MS), 'leaving');
    // A released Lease says 1 s; the configured duration is what counts.
    assert.equal(memberState(seen(0, { holder: '', leaseDurationMs: 1000 }), 5000, LEASE_MS), 'leaving');
    assert.equal(memberState(seen(0, { holder: '', leaseDurationMs: 1000 }), 2 * LEASE_MS, LEASE_MS), 'dead');
  });

  it('a longer duration written by the member wins over the configured one', () => {
    assert.equal(memberState(seen(0, { leaseDurationMs: 60_000 }), 2 * LEASE_MS, LEASE_MS), 'ready');
  });
});

describe('decide', () => {
  it('assigns an unassigned CR to the ring\'s pick, and nothing when the ring is empty', () => {
    assert.deepEqual(decide({ owner: undefined, draining: false }, 'b', states({})), { kind: 'assign', to: 'b' });
    assert.deepEqual(decide({ owner: '', draining: false }, 'b', states({})), { kind: 'assign', to: 'b' });
    assert.deepEqual(decide({ owner: undefined, draining: false }, undefined, states({})), { kind: 'none' });
    assert.deepEqual(decide({ owner: undefined, draining: true }, undefined, states({})), { kind: 'clear-drain' });
  });

  it('never moves a CR from a live owner without its acknowledgement: it asks to drain, then waits', () => {
    for (const state of ['ready', 'expired', 'leaving'] as const) {
      assert.deepEqual(decide({ owner: 'a', draining: false }, 'b', states({ a: state })), { kind: 'drain' }, state);
      assert.deepEqual(decide({ owner: 'a', draining: true }, 'b', states({ a: state })), { kind: 'none' }, state);
      assert.deepEqual(decide({ owner: 'a', draining: false }, undefined, states({ a: state })), { kind: 'none' }, state);
    }
    assert.deepEqual(decide({ owner: 'a', draining: false }, 'a', states({ a: 'ready' })), { kind: 'none' });
    // Asked to drain, then the ring picked it again: the drain is still waited for.
    assert.deepEqual(decide({ owner: 'a', draining: true }, 'a', states({ a: 'ready' })), { kind: 'none' });
  });

  it('reassigns a dead owner\'s CR at once, drain label or not', () => {
    assert.deepEqual(decide({ owner: 'a', draining: false }, 'b', states({ a: 'dead' })), { kind: 'assign', to: 'b' });
    assert.deepEqual(decide({ owner: 'a', draining: true }, 'b', states({ a: 'dead' })), { kind: 'assign', to: 'b' });
    assert.deepEqual(decide({ owner: 'a', draining: false }, undefined, states({ a: 'dead' })), { kind: 'none' });
  });
});

describe('a member that cannot renew stops before the sharder calls it dead', () => {
  for (const leaseSeconds of [3, 15]) {
    it(`lease ${String(leaseSeconds)} s`, async () => {
      const t = shardTimings(leaseSeconds * 1000);
      const clock = new FakeClock(0);
      const lease = new FakeLease();
      const store = new FakeLeaseStore(lease);
      const stopped: { at?: number } = {};
      const member = new LeaderElector({
        store,
        identity: 'a_1',
        log: { info: () => undefined, warn: () => undefined, error: () => undefined },
        clock,
        wallClock: { now: () => clock.now() },
        random: () => 0,
        leaseDurationMs: t.leaseDurationMs,
        renewDeadlineMs: t.renewDeadlineMs,
        retryPeriodMs: t.retryPeriodMs,
        onLost: () => {
          stopped.at = clock.now();
        },
      });
      void member.acquire(new AbortController().signal);
      await settle();
      // The sharder watches the Lease: it sees every write the moment it lands (the best case for it).
      let observedAt = clock.now();
      let lastVersion = lease.snapshot?.resourceVersion;
      const watch = (): void => {
        if (lease.snapshot?.resourceVersion !== lastVersion) {
          lastVersion = lease.snapshot?.resourceVersion;
          observedAt = clock.now();
        }
      };
      // Renewing for a while, then the API server becomes unreachable for this member.
      for (let i = 0; i < 20; i++) {
        await clock.advance(t.retryPeriodMs / 2);
        watch();
      }
      assert.equal(stopped.at, undefined);
      store.failWith = new Error('connection refused');
      let deadAt: number | undefined;
      for (let ms = 0; ms < 4 * t.leaseDurationMs && deadAt === undefined; ms += 50) {
        await clock.advance(50);
        watch();
        const state = memberState({ member: 'a', holder: 'a_1', leaseDurationMs: t.leaseDurationMs, observedAt, leaving: false, version: 'v', settings: 's' }, clock.now(), t.leaseDurationMs);
        if (state === 'dead') deadAt = clock.now();
        // Until it is dead, its CRs stay its own; the member must have stopped by then.
      }
      // Read through a function: the assertion above narrowed the field to undefined.
      const stoppedAt = ((): number | undefined => stopped.at)();
      assert.ok(stoppedAt !== undefined && deadAt !== undefined, `stopped ${String(stoppedAt)}, dead ${String(deadAt)}`);
      assert.ok(stoppedAt < deadAt, `the member stopped at ${String(stoppedAt)} ms, the sharder called it dead at ${String(deadAt)} ms`);
      // By at least a lease duration less the renew deadline, whatever the clocks do.
      assert.ok(deadAt - stoppedAt >= t.leaseDurationMs * 2 - t.renewDeadlineMs - t.retryPeriodMs, `margin ${String(deadAt - stoppedAt)} ms`);
    });
  }

  it('timings keep the order for every allowed lease duration', () => {
    for (const s of [2, 3, 5, 15, 60]) {
      const t = shardTimings(s * 1000);
      assert.ok(t.retryPeriodMs * 1.2 < t.renewDeadlineMs && t.renewDeadlineMs < t.leaseDurationMs);
    }
    assert.throws(() => shardTimings(1500), RangeError);
  });
});
