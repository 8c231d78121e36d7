import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LeaderElector, microTime, type ElectionLog, type LeaderElectorOptions } from '../../../../src/controller/leader-election/elector.js';
import { FakeClock, settle } from '../../fakes/clock.js';
import { FakeLease, FakeLeaseStore } from '../../fakes/lease-store.js';

class Log implements ElectionLog {
  readonly lines: { level: string; msg: string; obj: object }[] = [];
  info(obj: object, msg: string): void {
    this.lines.push({ level: 'info', msg, obj });
  }
  warn(obj: object, msg: string): void {
    this.lines.push({ level: 'warn', msg, obj });
  }
  error(obj: object, msg: string): void {
    this.lines.push({ level: 'error', msg, obj });
  }
  has(text: string): boolean {
    return this.lines.some((l) => l.msg.includes(text));
  }
}

interface Candidate {
  readonly elector: LeaderElector;
  readonly store: FakeLeaseStore;
  readonly log: Log;
  readonly leadership: boolean[];
  lost: number;
}

function candidate(clock: FakeClock, lease: FakeLease, identity: string, extra: Partial<LeaderElectorOptions> = {}): Candidate {
  const store = new FakeLeaseStore(lease);
  const log = new Log();
  const c: Candidate = {
    store,
    log,
    leadership: [],
    lost: 0,
    elector: new LeaderElector({
      store,
      identity,
      log,
      clock,
      wallClock: { now: () => Date.UTC(2026, 0, 1) + clock.now() },
      random: () => 0,
      onLeadership: (l) => c.leadership.push(l),
      onLost: () => {
        c.lost++;
      },
      ...extra,
    }),
  };
  return c;
}

/** Starts `acquire` without awaiting it, so the test can move time while it waits. */
function acquiring(c: Candidate, signal = new AbortController().signal): { done: boolean; result: boolean | undefined } {
  const state = { done: false, result: undefined as boolean | undefined };
  void c.elector.acquire(signal).then((r) => {
    state.done = true;
    state.result = r;
  });
  return state;
}

describe('LeaderElector', () => {
  it('creates a missing lease and leads with controller-runtime defaults', async () => {
    const clock = new FakeClock();
    const lease = new FakeLease();
    const a = candidate(clock, lease, 'a');
    const s = acquiring(a);
    await settle();
    assert.deepEqual(s, { done: true, result: true });
    assert.equal(a.elector.isLeader, true);
    assert.deepEqual(a.leadership, [false, true]);
    const r = lease.snapshot?.record;
    assert.equal(r?.holderIdentity, 'a');
    assert.equal(r.leaseDurationSeconds, 15);
    assert.equal(r.leaseTransitions, 0);
    assert.match(r.renewTime ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    assert.ok(a.log.has('became leader'));
    await a.elector.release();
  });

  it('renews every retry period while leading, keeping acquireTime and transitions', async () => {
    const clock = new FakeClock();
    const lease = new FakeLease();
    const a = candidate(clock, lease, 'a');
    acquiring(a);
    await settle();
    const first = lease.snapshot?.record;
    await clock.advance(2_000);
    const second = lease.snapshot?.record;
    assert.notEqual(second?.renewTime, first?.renewTime);
    assert.equal(second?.acquireTime, first?.acquireTime);
    assert.equal(second?.leaseTransitions, 0);
    const writes = lease.writes;
    await clock.advance(10_000);
    assert.equal(lease.writes - writes, 5, 'one renewal per 2 s');
    assert.equal(a.lost, 0);
    await a.elector.release();
  });

  it('keeps a standby waiting while the leader renews, and lets exactly one lead', async () => {
    const clock = new FakeClock();
    const lease = new FakeLease();
    const a = candidate(clock, lease, 'a');
    const b = candidate(clock, lease, 'b');
    acquiring(a);
    await settle();
    const sb = acquiring(b);
    await clock.advance(60_000);
    assert.equal(sb.done, false, 'b stands by as long as a renews');
    assert.equal(b.elector.isLeader, false);
    assert.equal(lease.snapshot?.record.holderIdentity, 'a');
    assert.ok(b.log.lines.some((l) => l.msg.includes('standing by') && (l.obj as { leader?: string }).leader === 'a'));
    await a.elector.release();
    await b.elector.release();
  });

  it('takes over a lease whose holder stopped renewing, only after the lease duration', async () => {
    const clock = new FakeClock();
    const lease = new FakeLease();
    // A holder that vanished (e.g. SIGKILL): the lease stays as last written.
    lease.put({ holderIdentity: 'gone', leaseDurationSeconds: 15, acquireTime: undefined, renewTime: undefined, leaseTransitions: 3 });
    const b = candidate(clock, lease, 'b');
    const sb = acquiring(b);
    await settle();
    await clock.advance(14_000);
    assert.equal(sb.done, false, 'not before 15 s since b first saw the lease unchanged');
    await clock.advance(3_000);
    assert.deepEqual(sb, { done: true, result: true });
    assert.equal(lease.snapshot?.record.holderIdentity, 'b');
    assert.equal(lease.snapshot.record.leaseTransitions, 4);
    await b.elector.release();
  });

  it('takes over a released lease at the next retry, and release keeps the transition count', async () => {
    const clock = new FakeClock();
    const lease = new FakeLease();
    const a = candidate(clock, lease, 'a');
    const b = candidate(clock, lease, 'b');
    acquiring(a);
    await settle();
    const sb = acquiring(b);
    await clock.advance(4_000);
    await a.elector.release();
    assert.equal(lease.snapshot?.record.holderIdentity, '');
    assert.equal(lease.snapshot.record.leaseDurationSeconds, 1);
    assert.equal(lease.snapshot.record.leaseTransitions, 0);
    assert.deepEqual(a.leadership, [false, true, false]);
    assert.ok(a.log.has('released the leader lease'));
    await clock.advance(2_000);
    assert.deepEqual(sb, { done: true, result: true });
    assert.equal(lease.snapshot.record.holderIdentity, 'b');
    assert.equal(lease.snapshot.record.leaseTransitions, 1);
    assert.equal(a.lost, 0, 'a release is not a loss');
    await b.elector.release();
  });

  it('reports the loss when renewals fail for the renew deadline, before the lease could expire for others', async () => {
    const clock = new FakeClock();
    const lease = new FakeLease();
    const a = candidate(clock, lease, 'a');
    acquiring(a);
    await settle();
    const lastRenewAt = clock.now();
    a.store.failWith = new Error('connection refused');
    await clock.advance(11_000);
    assert.equal(a.lost, 0, 'retries until the renew deadline');
    assert.equal(a.elector.isLeader, true);
    await clock.advance(1_000);
    assert.equal(a.lost, 1);
    assert.equal(a.elector.isLeader, false);
    assert.ok(clock.now() - lastRenewAt < 15_000, 'gave up before the lease duration');
    assert.ok(a.log.lines.some((l) => l.level === 'error' && l.msg.includes('leader election lost')));
    const warnings = a.log.lines.filter((l) => l.level === 'warn');
    assert.equal(warnings.length, 1, `the same error is logged once: ${JSON.stringify(warnings)}`);
    assert.match(warnings[0]?.msg ?? '', /connection refused/);
    await clock.advance(30_000);
    assert.equal(a.lost, 1, 'reported once');
    await a.elector.release();
    assert.equal(lease.snapshot?.record.holderIdentity, 'a', 'a lost leader does not write the lease');
  });

  it('survives a failed renewal that recovers within the deadline', async () => {
    const clock = new FakeClock();
    const lease = new FakeLease();
    const a = candidate(clock, lease, 'a');
    acquiring(a);
    await settle();
    a.store.failWith = new Error('etcdserver: leader changed');
    await clock.advance(6_000);
    a.store.failWith = undefined;
    await clock.advance(30_000);
    assert.equal(a.lost, 0);
    assert.equal(a.elector.isLeader, true);
    await a.elector.release();
  });

  it('gives up when a renewal hangs past the deadline', async () => {
    const clock = new FakeClock();
    const lease = new FakeLease();
    const a = candidate(clock, lease, 'a');
    acquiring(a);
    await settle();
    a.store.hang = true;
    await clock.advance(12_500);
    assert.equal(a.lost, 1);
    assert.equal(a.elector.isLeader, false);
  });

  it('steps down when another identity has taken the lease', async () => {
    const clock = new FakeClock();
    const lease = new FakeLease();
    const a = candidate(clock, lease, 'a');
    acquiring(a);
    await settle();
    lease.put({ holderIdentity: 'intruder', leaseDurationSeconds: 15, acquireTime: undefined, renewTime: undefined, leaseTransitions: 1 });
    await clock.advance(12_500);
    assert.equal(a.lost, 1);
    assert.equal(lease.snapshot?.record.holderIdentity, 'intruder', 'never overwrites a valid lease of someone else');
  });

  it('loses a create race without error and keeps trying', async () => {
    const clock = new FakeClock();
    const lease = new FakeLease();
    const a = candidate(clock, lease, 'a');
    const b = candidate(clock, lease, 'b');
    const sa = acquiring(a);
    const sb = acquiring(b);
    await settle();
    assert.equal([sa.result, sb.result].filter((r) => r === true).length, 1, 'exactly one wins');
    const loser = sa.result === true ? b : a;
    assert.equal(loser.log.lines.filter((l) => l.level === 'warn').length, 0, 'a lost race is not a problem');
    await a.elector.release();
    await b.elector.release();
  });

  it('returns false from acquire when stopped while standing by, without writing', async () => {
    const clock = new FakeClock();
    const lease = new FakeLease();
    lease.put({ holderIdentity: 'other', leaseDurationSeconds: 15, acquireTime: undefined, renewTime: undefined, leaseTransitions: 0 });
    const b = candidate(clock, lease, 'b');
    const stop = new AbortController();
    const sb = acquiring(b, stop.signal);
    await clock.advance(4_000);
    stop.abort();
    await settle();
    assert.deepEqual(sb, { done: true, result: false });
    const writes = lease.writes;
    await b.elector.release();
    assert.equal(lease.writes, writes);
    assert.equal(lease.snapshot?.record.holderIdentity, 'other');
  });

  it('ends a waiting acquire when released without an abort, and stops asking the API server', async () => {
    const clock = new FakeClock();
    const lease = new FakeLease();
    lease.put({ holderIdentity: 'other', leaseDurationSeconds: 15, acquireTime: undefined, renewTime: undefined, leaseTransitions: 0 });
    const b = candidate(clock, lease, 'b');
    // Each read takes a turn of the event loop, as a real request does, so a loop would show.
    const read = b.store.get.bind(b.store);
    b.store.get = async () => {
      await new Promise((resolve) => setImmediate(resolve));
      return read();
    };
    const sb = acquiring(b);
    await clock.advance(4_000);
    await b.elector.release();
    await settle(20);
    assert.deepEqual(sb, { done: true, result: false });
    const calls = b.store.calls;
    await settle(20);
    assert.equal(b.store.calls, calls, 'no more requests after release');
    assert.equal(lease.snapshot?.record.holderIdentity, 'other');
  });

  it('gives back a lease that a try in flight won after release() was called', async () => {
    const clock = new FakeClock();
    const lease = new FakeLease();
    const a = candidate(clock, lease, 'a');
    const sa = acquiring(a);
    // The first create is in flight: release() must wait for it and hand the lease back.
    await a.elector.release();
    assert.deepEqual(sa, { done: true, result: false });
    assert.equal(lease.snapshot?.record.holderIdentity, '');
    assert.deepEqual(a.leadership, [false], 'never reported as leader');
  });

  it('gives back a lease it won just as it was stopped', async () => {
    const clock = new FakeClock();
    const lease = new FakeLease();
    const a = candidate(clock, lease, 'a');
    const stop = new AbortController();
    const sa = acquiring(a, stop.signal);
    stop.abort(); // while the first create is in flight
    await settle();
    assert.deepEqual(sa, { done: true, result: false });
    assert.equal(lease.snapshot?.record.holderIdentity, 'a');
    await a.elector.release();
    assert.equal(lease.snapshot.record.holderIdentity, '');
    assert.deepEqual(a.leadership, [false], 'never reported as leader');
  });

  it('logs API errors of a standby once per distinct message', async () => {
    const clock = new FakeClock();
    const lease = new FakeLease();
    const b = candidate(clock, lease, 'b');
    b.store.failWith = new Error('leases.coordination.k8s.io "lock" is forbidden');
    const sb = acquiring(b);
    await clock.advance(20_000);
    assert.equal(sb.done, false);
    assert.equal(b.log.lines.filter((l) => l.level === 'warn').length, 1);
    b.store.failWith = undefined;
    await clock.advance(2_500);
    assert.equal(sb.result, true);
    await b.elector.release();
  });

  it('rejects timings under which two leaders could overlap', () => {
    const store = new FakeLeaseStore(new FakeLease());
    const log = new Log();
    assert.throws(() => new LeaderElector({ store, identity: 'a', log, leaseDurationMs: 10_000, renewDeadlineMs: 10_000 }), /lease duration/);
    assert.throws(() => new LeaderElector({ store, identity: 'a', log, renewDeadlineMs: 2_000, retryPeriodMs: 2_000 }), /renew deadline/);
    assert.throws(() => new LeaderElector({ store, identity: '', log }), /identity/);
  });
});

describe('LeaderElector timing and edge cases', () => {
  const held = (holderIdentity: string, at?: string) => ({
    holderIdentity,
    leaseDurationSeconds: 15,
    acquireTime: at,
    renewTime: at,
    leaseTransitions: 0,
  });

  it('waits the retry period plus up to 20 % jitter between tries while standing by, and none while renewing', async () => {
    const clock = new FakeClock();
    const lease = new FakeLease();
    lease.put(held('other'));
    const b = candidate(clock, lease, 'b', { random: () => 0.5 });
    const stopB = new AbortController();
    acquiring(b, stopB.signal);
    await settle();
    assert.deepEqual(clock.pendingDelays(), [2_200]);

    const a = candidate(clock, new FakeLease(), 'a', { random: () => 0.5 });
    acquiring(a);
    await settle();
    assert.ok(a.elector.isLeader);
    assert.deepEqual(clock.pendingDelays(), [2_000, 2_200], 'the leader renews every 2 s exactly');
    await a.elector.release();
    stopB.abort();
    await b.elector.release();
  });

  it('judges expiry by its own clock, never by the timestamps in the lease', async () => {
    const clock = new FakeClock();
    const lease = new FakeLease();
    // Written long ago by the holder's clock: still valid for 15 s from when b first sees it.
    lease.put(held('other', '2000-01-01T00:00:00.000000Z'));
    const b = candidate(clock, lease, 'b');
    const sb = acquiring(b);
    await clock.advance(14_000);
    assert.equal(sb.done, false);
    await clock.advance(3_000);
    assert.deepEqual(sb, { done: true, result: true });
    await b.elector.release();
  });

  it('restarts the expiry wait whenever the lease changes', async () => {
    const clock = new FakeClock();
    const lease = new FakeLease();
    lease.put(held('other', 't0'));
    const b = candidate(clock, lease, 'b');
    const sb = acquiring(b);
    await clock.advance(10_000);
    lease.put(held('other', 't1')); // the holder renewed
    await clock.advance(12_000);
    assert.equal(sb.done, false, '22 s after b first saw the lease, but only 10 s after it saw it change');
    await clock.advance(7_000);
    assert.deepEqual(sb, { done: true, result: true });
    await b.elector.release();
  });

  it('writes its own lease duration, renews at its own period and gives up at its own deadline', async () => {
    const clock = new FakeClock();
    const lease = new FakeLease();
    const a = candidate(clock, lease, 'a', { leaseDurationMs: 20_500, renewDeadlineMs: 8_000, retryPeriodMs: 1_000 });
    acquiring(a);
    await settle();
    assert.equal(lease.snapshot?.record.leaseDurationSeconds, 21, 'whole seconds, rounded up');
    const writes = lease.writes;
    await clock.advance(5_000);
    assert.equal(lease.writes - writes, 5, 'one renewal per second');
    a.store.failWith = new Error('connection refused');
    await clock.advance(8_900);
    assert.equal(a.lost, 0);
    await clock.advance(200);
    assert.equal(a.lost, 1, 'lost one retry period plus the renew deadline after the last renewal');
  });

  it('keeps leading when someone else wrote its lease without taking it (e.g. added a label)', async () => {
    const clock = new FakeClock();
    const lease = new FakeLease();
    const a = candidate(clock, lease, 'a');
    acquiring(a);
    await settle();
    const first = lease.snapshot?.record;
    assert.ok(first);
    lease.put(first); // a new resourceVersion, the same holder
    await clock.advance(2_000);
    assert.equal(a.elector.isLeader, true);
    assert.equal(a.lost, 0);
    assert.equal(lease.snapshot?.record.holderIdentity, 'a');
    assert.equal(lease.snapshot.record.acquireTime, first.acquireTime);
    assert.equal(lease.snapshot.record.leaseTransitions, 0);
    assert.notEqual(lease.snapshot.record.renewTime, first.renewTime);
    assert.equal(a.log.lines.filter((l) => l.level === 'warn').length, 0, 'the conflict is no problem');
    await a.elector.release();
  });

  it('logs a failed release and leaves the lease to expire', async () => {
    const clock = new FakeClock();
    const lease = new FakeLease();
    const a = candidate(clock, lease, 'a');
    acquiring(a);
    await settle();
    a.store.failWith = new Error('connection refused');
    await a.elector.release();
    assert.equal(lease.snapshot?.record.holderIdentity, 'a');
    assert.ok(a.log.lines.some((l) => l.level === 'warn' && l.msg.includes('could not release the leader lease')));
    assert.deepEqual(a.leadership, [false, true, false]);
  });

  it('cannot acquire again after release', async () => {
    const a = candidate(new FakeClock(), new FakeLease(), 'a');
    await a.elector.release();
    await assert.rejects(a.elector.acquire(new AbortController().signal), /acquire after release/);
  });
});

describe('microTime', () => {
  it('writes MicroTime with six fractional digits', () => {
    assert.equal(microTime(new Date(Date.UTC(2026, 1, 3, 4, 5, 6, 789))), '2026-02-03T04:05:06.789000Z');
  });
});
