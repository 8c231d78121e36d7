/**
 * A keyed work queue with the guarantees a controller needs (those of client-go's workqueue):
 * - adds of a key that is already waiting coalesce into one item;
 * - a key is never processed by two workers at once: an add while it runs marks it dirty, and it
 *   runs once more after the current run finishes;
 * - a failing key is retried with per-key exponential backoff (reset by a success);
 * - `requeueAfterMs` and `addAfter` schedule a later run, and an immediate add always wins over a
 *   scheduled one, so an event never waits for a period or a backoff;
 * - at most `concurrency` handlers run at once, plus up to `followUpWorkers` more that only take
 *   follow-ups; `shutdown` drains.
 *
 * Waiting keys sit in lanes by why they were added (see Lane), and workers take turns between the
 * lanes that have keys: a wave of creates must not make a deletion, or the status refresh that
 * follows a workload becoming available, wait behind the whole wave — and neither may starve it.
 *
 * Within a lane, keys are taken round-robin across their groups (namespaces: tenants), and one
 * group runs on at most all but one of the shared workers (and of the follow-up workers): a
 * tenant's 300 creates do not put another tenant's first create behind them, and a tenant whose
 * reconciles all wait on hung helm calls cannot occupy every worker.
 */
import { realClock, type Clock, type TimerHandle } from './clock.js';
import { backoffDelay } from './backoff.js';
import { FairQueue, shareCap } from './fair-share.js';

export type WorkResult = { requeueAfterMs?: number } | undefined;

/**
 * Why a key waits. `change`: the key itself changed (created, spec, labels), or a requeue or retry
 * came due. `delete`: it is being deleted. `followUp`: something around it changed (a dependent
 * object), which is typically a cheap status refresh.
 */
export type Lane = 'change' | 'delete' | 'followUp';
const LANES: readonly Lane[] = ['change', 'delete', 'followUp'];

/** When a key is added again before it ran, the most consequential reason is kept. */
const LANE_RANK: Readonly<Record<Lane, number>> = { followUp: 0, change: 1, delete: 2 };
const stronger = (a: Lane | undefined, b: Lane): Lane => (a === undefined || LANE_RANK[b] > LANE_RANK[a] ? b : a);

export interface AddOptions {
  /**
   * A hint that something around the key changed (e.g. one of its dependent objects), not the
   * key itself. It never cuts a failing key's backoff short — otherwise the changes a failed
   * attempt itself causes (apply, rollback) would retry it at once, forever.
   */
  respectBackoff?: boolean;
  /** Default: `followUp` for a hint (respectBackoff), `change` otherwise. */
  lane?: Lane;
}

/** Optional hooks, shaped after controller-runtime's workqueue_* metrics. */
export interface WorkQueueMetrics {
  /** A key was newly queued (coalesced adds are not counted). */
  onAdd?(key: string): void;
  /** Number of keys waiting to run, after every change. */
  onDepth?(depth: number): void;
  /** A failed key was scheduled for a retry. */
  onRetry?(key: string): void;
  /** Keys waiting in `lane`, after every change of that lane. */
  onLaneDepth?(lane: Lane, depth: number): void;
  /** Time a key waited from being queued to a worker taking it, and the lane it was taken from. */
  onQueueLatency?(ms: number, lane?: Lane): void;
  /** Time a handler took. */
  onWorkDuration?(ms: number): void;
}

export interface WorkQueueOptions {
  name: string;
  concurrency: number;
  /**
   * Workers beyond `concurrency` that only take keys from the follow-up lane (default 0). A
   * follow-up is typically a short status refresh: it should not wait for, nor hold up, a slot
   * that an install needs.
   */
  followUpWorkers?: number;
  // eslint-disable-next-line @typescript-eslint/no-invalid-void-type -- a handler that never requeues just returns
  handler: (key: string, signal: AbortSignal) => Promise<WorkResult | void>;
  /** Retry backoff per key: baseMs · 2^(failures-1), capped at maxMs; default 500 ms … 5 min. */
  backoff?: { baseMs: number; maxMs: number };
  clock?: Clock;
  metrics?: WorkQueueMetrics;
  /** Told about every handler failure (before the retry is scheduled); `attempt` counts from 1. */
  onError?: (key: string, err: unknown, attempt: number) => void;
  /** [0, 1) source for jitter; replaceable in tests. */
  random?: () => number;
  /** Which group (tenant) a key belongs to, for fair turns; default: its namespace (the part before `/`). */
  groupOf?: (key: string) => string;
}

/** `namespace/name` → namespace; a cluster-scoped key (no `/`) is the group ''. */
export function namespaceOfKey(key: string): string {
  const i = key.indexOf('/');
  return i < 0 ? '' : key.slice(0, i);
}

const DEFAULT_BACKOFF = { baseMs: 500, maxMs: 5 * 60_000 };
/** Retry delays are spread by up to this fraction so keys failing together do not retry in lockstep. */
const JITTER = 0.1;

interface Scheduled {
  at: number;
  timer: TimerHandle;
}

export class WorkQueue {
  private readonly handler: WorkQueueOptions['handler'];
  private readonly concurrency: number;
  private readonly followUpWorkers: number;
  private readonly backoff: { baseMs: number; maxMs: number };
  private readonly clock: Clock;
  private readonly metrics: WorkQueueMetrics;
  private readonly random: () => number;
  private readonly groupOf: (key: string) => string;

  /** Keys waiting for a worker, per lane in fair order across groups; each also in `queuedAt`. */
  private readonly ready: Record<Lane, FairQueue<string>> = { change: new FairQueue(), delete: new FairQueue(), followUp: new FairQueue() };
  /** Running keys per group on the shared workers, and on the follow-up workers. */
  private readonly sharedByGroup = new Map<string, number>();
  private readonly followUpByGroup = new Map<string, number>();
  private readonly queuedAt = new Map<string, number>();
  /** The lane the next worker looks at first (round robin over LANES). */
  private turn = 0;
  /** Keys currently in a handler. */
  private readonly running = new Map<string, AbortController>();
  /** The running keys that a follow-up worker took (a subset of `running`). */
  private readonly onFollowUpWorker = new Set<string>();
  /** Keys added while running, with the lane they go back to when their run ends. */
  private readonly dirty = new Map<string, Lane>();
  /** Soft adds (respectBackoff) that came in while the key ran: rerun after success only. */
  private readonly softDirty = new Set<string>();
  /** Soft delayed adds that came in while the key ran: after success, look again this much later. */
  private readonly softLater = new Map<string, number>();
  /** Keys due later (requeue, backoff, addAfter); at most one timer per key, the earliest. */
  private readonly scheduled = new Map<string, Scheduled>();
  /** Consecutive failures per key. */
  private readonly failures = new Map<string, number>();
  private readonly inFlight = new Set<Promise<void>>();

  private started = false;
  private stopping = false;

  constructor(private readonly opts: WorkQueueOptions) {
    if (!(Number.isInteger(opts.concurrency) && opts.concurrency >= 1)) {
      throw new RangeError(`work queue ${opts.name}: concurrency must be an integer >= 1, got ${opts.concurrency}`);
    }
    const followUpWorkers = opts.followUpWorkers ?? 0;
    if (!(Number.isInteger(followUpWorkers) && followUpWorkers >= 0)) {
      throw new RangeError(`work queue ${opts.name}: followUpWorkers must be an integer >= 0, got ${followUpWorkers}`);
    }
    this.followUpWorkers = followUpWorkers;
    this.backoff = opts.backoff ?? DEFAULT_BACKOFF;
    if (!(this.backoff.baseMs > 0 && this.backoff.maxMs >= this.backoff.baseMs)) {
      throw new RangeError(`work queue ${opts.name}: backoff needs 0 < baseMs <= maxMs`);
    }
    this.handler = opts.handler;
    this.concurrency = opts.concurrency;
    this.clock = opts.clock ?? realClock;
    this.metrics = opts.metrics ?? {};
    this.random = opts.random ?? Math.random;
    this.groupOf = opts.groupOf ?? namespaceOfKey;
  }

  /** Keys waiting for a worker (not counting running or scheduled ones). */
  get length(): number {
    return this.queuedAt.size;
  }

  /** Handlers running now. */
  get active(): number {
    return this.running.size;
  }

  /** Keys with a pending delayed run. */
  get scheduledCount(): number {
    return this.scheduled.size;
  }

  /**
   * Queues `key` to run as soon as a worker is free (and it is not already running). A key that
   * already waits keeps its place, except that a follow-up or a deletion takes it out of the
   * change lane (its run is the same whichever lane it waits in, so it runs at the earlier turn).
   */
  add(key: string, opts: AddOptions = {}): void {
    if (this.stopping) return;
    const lane = opts.lane ?? (opts.respectBackoff === true ? 'followUp' : 'change');
    if (opts.respectBackoff === true) {
      if (this.running.has(key)) {
        this.softDirty.add(key);
        return;
      }
      if ((this.failures.get(key) ?? 0) > 0 && (this.scheduled.has(key) || this.queuedAt.has(key))) return;
    }
    // An immediate run supersedes any later one: it sees the latest state and schedules its own follow-up.
    this.unschedule(key);
    if (this.running.has(key)) {
      this.dirty.set(key, stronger(this.dirty.get(key), lane));
      return;
    }
    if (this.queuedAt.has(key)) {
      if (lane !== 'change') this.promote(key, lane);
      return;
    }
    this.enqueue(key, lane);
    this.pump();
  }

  /**
   * Queues `key` after `delayMs`; if a run is already scheduled sooner (or queued now), that one
   * stands. `respectBackoff`: a hint never moves a failing key's retry; one that comes while the
   * key runs looks again that long after a successful run (unless dropSoftAdds drops it).
   */
  addAfter(key: string, delayMs: number, opts: AddOptions = {}): void {
    if (this.stopping) return;
    if (opts.respectBackoff === true) {
      if ((this.failures.get(key) ?? 0) > 0) return;
      if (this.running.has(key)) {
        // The run may have read the state before this change: look once more after it.
        this.softLater.set(key, Math.min(this.softLater.get(key) ?? delayMs, delayMs));
        return;
      }
    }
    if (!(delayMs > 0)) {
      this.add(key, opts);
      return;
    }
    if (this.queuedAt.has(key)) return;
    const lane = opts.lane ?? (opts.respectBackoff === true ? 'followUp' : 'change');
    const at = this.clock.now() + delayMs;
    const existing = this.scheduled.get(key);
    if (existing && existing.at <= at) return;
    if (existing) this.clock.clearTimeout(existing.timer);
    const timer = this.clock.setTimeout(() => {
      this.scheduled.delete(key);
      this.add(key, { lane });
    }, delayMs);
    this.scheduled.set(key, { at, timer });
  }

  /**
   * Forgets the hints (respectBackoff adds, delayed or not) that came in while `key` runs: its run
   * is about to see what they were about. Only a running key has any.
   */
  dropSoftAdds(key: string): void {
    if (!this.running.has(key)) return;
    this.softDirty.delete(key);
    this.softLater.delete(key);
  }

  /** Begins handing keys to workers (keys added before `start` wait until then). */
  start(): void {
    if (this.started || this.stopping) return;
    this.started = true;
    this.pump();
  }

  /**
   * Stops taking work (queued and scheduled keys are dropped), waits for running handlers, and
   * aborts their signals once `drainTimeoutMs` has passed (if given). Resolves when all have returned.
   */
  async shutdown(opts: { drainTimeoutMs?: number } = {}): Promise<void> {
    this.stopping = true;
    for (const s of this.scheduled.values()) this.clock.clearTimeout(s.timer);
    this.scheduled.clear();
    for (const lane of LANES) this.ready[lane].drain();
    this.queuedAt.clear();
    for (const lane of LANES) this.metrics.onLaneDepth?.(lane, 0);
    this.dirty.clear();
    this.softDirty.clear();
    this.softLater.clear();
    this.metrics.onDepth?.(0);
    if (this.inFlight.size === 0) return;
    let drainTimer: TimerHandle | undefined;
    if (opts.drainTimeoutMs !== undefined) {
      drainTimer = this.clock.setTimeout(() => {
        for (const c of this.running.values()) c.abort(new Error(`work queue ${this.opts.name} shutting down`));
      }, opts.drainTimeoutMs);
    }
    while (this.inFlight.size > 0) await Promise.all(this.inFlight);
    if (drainTimer !== undefined) this.clock.clearTimeout(drainTimer);
  }

  private enqueue(key: string, lane: Lane): void {
    this.ready[lane].push(this.groupOf(key), key);
    this.queuedAt.set(key, this.clock.now());
    this.metrics.onAdd?.(key);
    this.metrics.onDepth?.(this.queuedAt.size);
    this.metrics.onLaneDepth?.(lane, this.ready[lane].size);
  }

  /** Moves a key waiting in the change lane to `lane`, where its turn comes sooner. */
  private promote(key: string, lane: Lane): void {
    const group = this.groupOf(key);
    if (!this.ready.change.remove(group, key)) return;
    this.ready[lane].push(group, key);
    this.metrics.onLaneDepth?.('change', this.ready.change.size);
    this.metrics.onLaneDepth?.(lane, this.ready[lane].size);
  }

  /**
   * The next waiting key for a shared worker: from the first lane, from the current turn on, that
   * has a key of a group below its share of the shared workers; the turn then moves past it.
   */
  private takeNext(): { key: string; lane: Lane } | undefined {
    const cap = shareCap(this.concurrency);
    const mayTake = (group: string): boolean => (this.sharedByGroup.get(group) ?? 0) < cap;
    for (let i = 0; i < LANES.length; i++) {
      const index = (this.turn + i) % LANES.length;
      const lane = LANES[index] as Lane;
      const next = this.ready[lane].take(mayTake);
      if (next === undefined) continue;
      this.turn = (index + 1) % LANES.length;
      return { key: next.item, lane };
    }
    return undefined;
  }

  private unschedule(key: string): void {
    const s = this.scheduled.get(key);
    if (!s) return;
    this.clock.clearTimeout(s.timer);
    this.scheduled.delete(key);
  }

  private pump(): void {
    if (!this.started || this.stopping) return;
    // Follow-ups go to their own workers first, so the shared ones stay free for changes and deletions.
    const followUpCap = shareCap(this.followUpWorkers);
    while (this.onFollowUpWorker.size < this.followUpWorkers) {
      const next = this.ready.followUp.take((group) => (this.followUpByGroup.get(group) ?? 0) < followUpCap);
      if (next === undefined) break;
      this.launch(next.item, 'followUp', true);
    }
    while (this.running.size - this.onFollowUpWorker.size < this.concurrency) {
      const next = this.takeNext();
      if (next === undefined) break;
      this.launch(next.key, next.lane, false);
    }
  }

  private launch(key: string, lane: Lane, followUpWorker: boolean): void {
    const queued = this.queuedAt.get(key) ?? this.clock.now();
    this.queuedAt.delete(key);
    if (followUpWorker) this.onFollowUpWorker.add(key);
    count(followUpWorker ? this.followUpByGroup : this.sharedByGroup, this.groupOf(key), 1);
    this.metrics.onDepth?.(this.queuedAt.size);
    this.metrics.onLaneDepth?.(lane, this.ready[lane].size);
    this.metrics.onQueueLatency?.(this.clock.now() - queued, lane);
    const done = this.process(key)
      .catch((err: unknown) => {
        // Only a throwing metrics hook gets here; the key's own failure was handled in process().
        this.report(key, err, 0);
      })
      .finally(() => this.inFlight.delete(done));
    this.inFlight.add(done);
  }

  /** Runs one key; never rejects. */
  private async process(key: string): Promise<void> {
    const controller = new AbortController();
    this.running.set(key, controller);
    const started = this.clock.now();
    let result: WorkResult;
    let failed = false;
    let error: unknown;
    try {
      result = (await this.handler(key, controller.signal)) ?? undefined;
    } catch (err) {
      failed = true;
      error = err;
    }
    this.metrics.onWorkDuration?.(this.clock.now() - started);
    this.running.delete(key);
    count(this.onFollowUpWorker.delete(key) ? this.followUpByGroup : this.sharedByGroup, this.groupOf(key), -1);
    if (this.stopping) return;

    // After a failure the backoff decides when to look again; after a success a soft add reruns now.
    const soft = this.softDirty.delete(key);
    const later = this.softLater.get(key);
    this.softLater.delete(key);
    // A hint with a change (say the CR's own finalizer write echoed before its response, and its
    // Deployment became available meanwhile): one rerun serves both, at the follow-ups' turn, as
    // add() promotes a waiting change — not at the back of a wave of creates in the change lane,
    // where a 1000-CR wave kept such CRs from Ready for ~400 s.
    if (!failed && soft && (this.dirty.get(key) ?? 'change') === 'change') this.dirty.set(key, 'followUp');
    if (failed) {
      const attempt = (this.failures.get(key) ?? 0) + 1;
      this.failures.set(key, attempt);
      this.report(key, error, attempt);
      this.metrics.onRetry?.(key);
      // A retry may well run helm again: it takes its turn with the changes.
      this.scheduleAfterRun(key, this.retryDelay(attempt), 'change');
    } else {
      this.failures.delete(key);
      const after = result?.requeueAfterMs;
      // A requeue the handler asked for (its period, a paced status) is a follow-up look.
      this.scheduleAfterRun(key, after === undefined ? undefined : Math.max(0, after), 'followUp');
      if (later !== undefined) this.addAfter(key, later, { lane: 'followUp' });
    }
    this.pump();
  }

  /** After a run: an add that came in meanwhile runs now; otherwise the requested delay, if any. */
  private scheduleAfterRun(key: string, delayMs: number | undefined, delayedLane: Lane): void {
    const lane = this.dirty.get(key);
    if (lane !== undefined) {
      this.dirty.delete(key);
      // Fresh information arrived while it ran (e.g. the user fixed the spec): do not make it wait.
      if (!this.queuedAt.has(key)) this.enqueue(key, lane);
      return;
    }
    if (delayMs !== undefined) this.addAfter(key, delayMs, { lane: delayedLane });
  }

  private report(key: string, err: unknown, attempt: number): void {
    try {
      this.opts.onError?.(key, err, attempt);
    } catch {
      // a broken error reporter must not stop retries
    }
  }

  private retryDelay(attempt: number): number {
    return backoffDelay(attempt, { initialMs: this.backoff.baseMs, maxMs: this.backoff.maxMs, jitter: JITTER }, this.random);
  }
}

function count(counts: Map<string, number>, group: string, by: 1 | -1): void {
  const n = (counts.get(group) ?? 0) + by;
  if (n > 0) counts.set(group, n);
  else counts.delete(group);
}
