/**
 * Leader election's algorithm: client-go's acquire / renew / release over a `LeaseStore`, with
 * controller-runtime's defaults (lease 15 s, renew deadline 10 s, retry 2 s), so one replica acts
 * and the others stand by. Where the lease lives is lease-store.ts's business; which lease, and
 * who this process is, config.ts's.
 *
 * - Expiry is judged on this process's monotonic clock from when it last saw the lease *change*,
 *   never from the timestamps written in it: clocks of two nodes may disagree, the passing of
 *   time does not.
 * - Every write carries the resourceVersion it was based on, so two candidates cannot both win.
 * - The leader gives up (`onLost`) when it could not renew within the renew deadline — before the
 *   lease can expire for anyone else, so two leaders never act at the same time.
 * - `release()` hands the lease back (holder '' and a 1 s duration, as client-go's
 *   ReleaseOnCancel), so a standby takes over at once instead of waiting out the lease, with a
 *   hand-over note the next leader reads (`handOver`).
 */
import { realClock, systemWallClock, type Clock, type TimerHandle, type WallClock } from '../../lib/clock.js';
import { errorMessage } from '../../lib/errors.js';

/** The Lease's spec, as client-go's LeaderElectionRecord. */
export interface LeaseRecord {
  /** '' = nobody (a released lease). */
  readonly holderIdentity: string;
  readonly leaseDurationSeconds: number;
  /** RFC 3339 with microseconds (metav1.MicroTime); informational only. */
  readonly acquireTime: string | undefined;
  readonly renewTime: string | undefined;
  readonly leaseTransitions: number;
  /**
   * What a leader that stopped left for the next one (e.g. which of its helm calls it stopped);
   * kept on every write until a release replaces it. undefined = none.
   */
  readonly handOver?: string | undefined;
}

/** A lease as read (or written): its record and the resourceVersion to write against. */
export interface LeaseSnapshot {
  readonly record: LeaseRecord;
  readonly resourceVersion: string;
}

/** Someone else wrote the lease first (AlreadyExists on create, Conflict on update). */
export class LeaseConflictError extends Error {
  override readonly name = 'LeaseConflictError';
}

/** Where the lease lives: all the algorithm needs of it. `KubeLeaseStore` in production, a fake in tests. */
export interface LeaseStore {
  /** `namespace/name`, for logs. */
  readonly description: string;
  get(): Promise<LeaseSnapshot | undefined>;
  /** Throws LeaseConflictError when the lease exists already. */
  create(record: LeaseRecord): Promise<LeaseSnapshot>;
  /** Throws LeaseConflictError when the lease changed since `base` was read. */
  update(base: LeaseSnapshot, record: LeaseRecord): Promise<LeaseSnapshot>;
}

/** The subset of pino's Logger this module writes to. */
export interface ElectionLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface LeaderElectorOptions {
  readonly store: LeaseStore;
  /** Unique per process; see `newIdentity`. */
  readonly identity: string;
  readonly log: ElectionLog;
  readonly leaseDurationMs?: number;
  readonly renewDeadlineMs?: number;
  readonly retryPeriodMs?: number;
  readonly clock?: Clock;
  /** Wall time for the timestamps written into the lease. */
  readonly wallClock?: WallClock;
  /** [0, 1) for retry jitter. */
  readonly random?: () => number;
  /** Told of every change of this process's leadership (for the leader_election_master_status gauge). */
  readonly onLeadership?: (leader: boolean) => void;
  /**
   * The leader could not renew within the renew deadline (or lost the lease to someone else):
   * it must stop acting now. Called at most once; never after `release()`.
   */
  readonly onLost?: () => void;
}

export const LEASE_DURATION_MS = 15_000;
export const RENEW_DEADLINE_MS = 10_000;
export const RETRY_PERIOD_MS = 2_000;
/** client-go's JitterFactor for the acquire loop: waits are retryPeriod × [1, 1.2). */
const JITTER = 0.2;

interface Timings {
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
}

/** The timings with defaults filled in; throws on those under which two leaders could overlap. */
function timingsOf(opts: LeaderElectorOptions): Timings {
  const t: Timings = {
    leaseDurationMs: opts.leaseDurationMs ?? LEASE_DURATION_MS,
    renewDeadlineMs: opts.renewDeadlineMs ?? RENEW_DEADLINE_MS,
    retryPeriodMs: opts.retryPeriodMs ?? RETRY_PERIOD_MS,
  };
  if (!(t.retryPeriodMs > 0 && t.renewDeadlineMs > t.retryPeriodMs * (1 + JITTER))) {
    throw new RangeError('leader election: the renew deadline must be longer than the retry period (with jitter)');
  }
  if (!(t.leaseDurationMs > t.renewDeadlineMs)) {
    // Otherwise a standby could take over before a stuck leader notices it has lost.
    throw new RangeError('leader election: the lease duration must be longer than the renew deadline');
  }
  return t;
}

export class LeaderElector {
  readonly identity: string;
  private readonly store: LeaseStore;
  private readonly log: ElectionLog;
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private readonly clock: Clock;
  private readonly wallClock: WallClock;
  private readonly random: () => number;

  /** The lease as last read or written, and when (monotonic) it last changed as we saw it. */
  private observed: LeaseSnapshot | undefined;
  private observedAt = 0;
  private leader = false;
  private released = false;
  private lostReported = false;
  private renewing: Promise<void> | undefined;
  /** The running acquire(), so release() can wait for a try in flight that might still win. */
  private acquiring: Promise<boolean> | undefined;
  private wake: (() => void) | undefined;
  private lastProblem: string | undefined;
  private lastHolder: string | undefined;
  private inheritedHandOver: string | undefined;

  constructor(private readonly opts: LeaderElectorOptions) {
    const timings = timingsOf(opts);
    this.leaseDurationMs = timings.leaseDurationMs;
    this.renewDeadlineMs = timings.renewDeadlineMs;
    this.retryPeriodMs = timings.retryPeriodMs;
    if (opts.identity === '') throw new RangeError('leader election: identity must not be empty');
    this.identity = opts.identity;
    this.store = opts.store;
    this.log = opts.log;
    this.clock = opts.clock ?? realClock;
    this.wallClock = opts.wallClock ?? systemWallClock;
    this.random = opts.random ?? Math.random;
  }

  get isLeader(): boolean {
    return this.leader;
  }

  /** The note the lease carried when this process took it (what the leader before left), if any. */
  get handOver(): string | undefined {
    return this.inheritedHandOver;
  }

  /**
   * Tries every retry period until this process holds the lease (resolves true; renewal then
   * runs by itself) or `signal` aborts (resolves false). Never rejects: API errors are logged and
   * retried, as a standby must survive API server restarts.
   */
  async acquire(signal: AbortSignal): Promise<boolean> {
    if (this.released) throw new Error('leader election: acquire after release');
    this.acquiring = this.acquireLoop(signal);
    try {
      return await this.acquiring;
    } finally {
      this.acquiring = undefined;
    }
  }

  /** acquire()'s loop; ends (false) when `signal` aborts or release() is called. */
  private async acquireLoop(signal: AbortSignal): Promise<boolean> {
    this.opts.onLeadership?.(false);
    this.log.info({ lease: this.store.description, identity: this.identity }, 'attempting to acquire the leader lease');
    while (!signal.aborted && !this.isReleased()) {
      if (await this.tryAcquireOrRenew()) {
        // Acquired while being stopped: release() hands it straight back.
        if (isAborted(signal) || this.isReleased()) break;
        this.inheritedHandOver = this.observed?.record.handOver;
        this.setLeader(true);
        this.log.info({ lease: this.store.description, identity: this.identity }, 'became leader');
        this.renewing = this.renewLoop();
        return true;
      }
      await this.sleep(this.retryPeriodMs * (1 + JITTER * this.random()), signal);
    }
    return false;
  }

  /**
   * Stops renewing and, if this process holds the lease, gives it up so a standby need not wait
   * for it to expire. Call only once nothing acts on the leader's behalf any more. Never rejects.
   */
  async release(handOver?: string): Promise<void> {
    if (this.released) return;
    this.released = true;
    this.wake?.();
    // A try in flight may still win the lease; it must be given back too.
    await this.acquiring;
    await this.renewing;
    this.setLeader(false);
    // What this process last wrote (or saw) says it holds the lease, and it has not given up on
    // it: also the case when acquire() won just as it was stopped.
    const base = this.observed;
    if (this.lostReported || base?.record.holderIdentity !== this.identity) return;
    const now = this.microNow();
    try {
      await this.store.update(base, {
        holderIdentity: '',
        leaseDurationSeconds: 1,
        acquireTime: now,
        renewTime: now,
        leaseTransitions: base.record.leaseTransitions,
        handOver: handOver ?? base.record.handOver,
      });
      this.log.info({ lease: this.store.description }, 'released the leader lease');
    } catch (err) {
      // Nothing is lost: the lease simply expires after its duration.
      this.log.warn({ lease: this.store.description, err: errorMessage(err) }, 'could not release the leader lease; it will expire by itself');
    }
  }

  /**
   * Renews at once (e.g. after the store's annotations changed, so others see them now rather than
   * at the next retry period); true when this process still holds the lease afterwards.
   */
  async renewNow(): Promise<boolean> {
    if (!this.leader || this.released) return false;
    return this.tryAcquireOrRenew();
  }

  /** While leader: renew every retry period; give up when a renewal has not succeeded within the renew deadline. */
  private async renewLoop(): Promise<void> {
    while (!this.isReleased()) {
      await this.sleep(this.retryPeriodMs);
      if (this.isReleased()) return;
      const renewed = await this.renewWithinDeadline();
      if (this.isReleased()) return;
      if (!renewed) {
        this.loseLeadership();
        return;
      }
    }
  }

  /** One renewal: tries every retry period until a try succeeds (true) or the renew deadline has passed. */
  private async renewWithinDeadline(): Promise<boolean> {
    const deadline = this.clock.now() + this.renewDeadlineMs;
    for (;;) {
      const left = deadline - this.clock.now();
      if (left <= 0) return false;
      if (await this.withDeadline(this.tryAcquireOrRenew(), left)) return true;
      if (this.isReleased()) return false;
      await this.sleep(Math.min(this.retryPeriodMs, Math.max(0, deadline - this.clock.now())));
      if (this.isReleased()) return false;
    }
  }

  private loseLeadership(): void {
    this.setLeader(false);
    this.log.error(
      { lease: this.store.description, identity: this.identity, renewDeadlineMs: this.renewDeadlineMs, lastError: this.lastProblem },
      'leader election lost: could not renew the lease in time',
    );
    if (!this.lostReported) {
      this.lostReported = true;
      this.opts.onLost?.();
    }
  }

  /** One round of client-go's tryAcquireOrRenew; true when this process holds the lease afterwards. */
  private async tryAcquireOrRenew(): Promise<boolean> {
    const now = this.microNow();
    const fresh: LeaseRecord = {
      holderIdentity: this.identity,
      leaseDurationSeconds: Math.ceil(this.leaseDurationMs / 1000),
      acquireTime: now,
      renewTime: now,
      leaseTransitions: 0,
    };

    // Fast path for the leader: write against what it wrote last, no read needed.
    if (this.leader && this.observed !== undefined && this.observed.record.holderIdentity === this.identity) {
      const base = this.observed;
      try {
        this.observe(
          await this.store.update(base, {
            ...fresh,
            acquireTime: base.record.acquireTime,
            leaseTransitions: base.record.leaseTransitions,
            handOver: base.record.handOver,
          }),
        );
        this.problem(undefined);
        return true;
      } catch (err) {
        if (!(err instanceof LeaseConflictError)) {
          this.problem(`could not renew the lease: ${errorMessage(err)}`);
          return false;
        }
        // Someone wrote it meanwhile: read it and decide as any candidate would.
      }
    }

    let current: LeaseSnapshot | undefined;
    try {
      current = await this.store.get();
    } catch (err) {
      this.problem(`could not read the lease: ${errorMessage(err)}`);
      return false;
    }
    if (current === undefined) return this.write('create', () => this.store.create(fresh));

    if (this.observed === undefined || !sameRecord(current.record, this.observed.record)) this.observe(current);
    const holder = current.record.holderIdentity;
    this.noteHolder(holder);
    const expiresAt = this.observedAt + current.record.leaseDurationSeconds * 1000;
    if (holder !== '' && holder !== this.identity && this.clock.now() < expiresAt) return false;

    const base = current;
    const next: LeaseRecord =
      holder === this.identity
        ? { ...fresh, acquireTime: base.record.acquireTime, leaseTransitions: base.record.leaseTransitions, handOver: base.record.handOver }
        : { ...fresh, leaseTransitions: base.record.leaseTransitions + 1, handOver: base.record.handOver };
    return this.write('update', () => this.store.update(base, next));
  }

  /** One write of the lease; true when it went through. A lost race is no problem worth logging. */
  private async write(what: 'create' | 'update', op: () => Promise<LeaseSnapshot>): Promise<boolean> {
    try {
      this.observe(await op());
      this.problem(undefined);
      return true;
    } catch (err) {
      if (!(err instanceof LeaseConflictError)) this.problem(`could not ${what} the lease: ${errorMessage(err)}`);
      return false;
    }
  }

  private microNow(): string {
    return microTime(new Date(this.wallClock.now()));
  }

  /** A method, not the field: it changes while this object awaits, which narrowing cannot see. */
  private isReleased(): boolean {
    return this.released;
  }

  private observe(snapshot: LeaseSnapshot): void {
    this.observed = snapshot;
    this.observedAt = this.clock.now();
  }

  private setLeader(leader: boolean): void {
    if (this.leader === leader) return;
    this.leader = leader;
    this.opts.onLeadership?.(leader);
  }

  /** Logs who leads when that changes, so a standby's log says why it waits. */
  private noteHolder(holder: string): void {
    if (holder === this.lastHolder || holder === this.identity) return;
    this.lastHolder = holder;
    if (holder !== '') this.log.info({ lease: this.store.description, leader: holder }, 'another replica is the leader; standing by');
  }

  /** Logs an API problem once per distinct message (retries every 2 s would flood the log). */
  private problem(text: string | undefined): void {
    if (text !== undefined && text !== this.lastProblem) this.log.warn({ lease: this.store.description }, `leader election: ${text}`);
    this.lastProblem = text;
  }

  /** `p`'s result, or false if it has not settled within `ms` (a hung request must not stretch the deadline). */
  private async withDeadline(p: Promise<boolean>, ms: number): Promise<boolean> {
    let timer: TimerHandle | undefined;
    const timeout = new Promise<boolean>((resolve) => {
      timer = this.clock.setTimeout(() => {
        this.problem(`renewal did not finish within the renew deadline`);
        resolve(false);
      }, ms);
    });
    try {
      return await Promise.race([p, timeout]);
    } finally {
      if (timer !== undefined) this.clock.clearTimeout(timer);
    }
  }

  /** Waits `ms`, or less if `release()` is called or `signal` aborts. */
  private sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      if (this.released || signal?.aborted === true) {
        resolve();
        return;
      }
      const done = (): void => {
        this.clock.clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        if (this.wake === done) this.wake = undefined;
        resolve();
      };
      const timer = this.clock.setTimeout(done, ms);
      signal?.addEventListener('abort', done, { once: true });
      this.wake = done;
    });
  }
}

/** A function, so the check after an await is not narrowed away by the one before it. */
function isAborted(signal: AbortSignal): boolean {
  return signal.aborted;
}

function sameRecord(a: LeaseRecord, b: LeaseRecord): boolean {
  return (
    a.holderIdentity === b.holderIdentity &&
    a.leaseDurationSeconds === b.leaseDurationSeconds &&
    a.acquireTime === b.acquireTime &&
    a.renewTime === b.renewTime &&
    a.leaseTransitions === b.leaseTransitions
  );
}

/** metav1.MicroTime: RFC 3339 with exactly six fractional digits. */
export function microTime(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/u, '.$1000Z');
}
