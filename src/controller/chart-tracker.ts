/**
 * Keeps one kind's chart from a registry current: resolves it at start (falling back to the
 * cached copy when the registry cannot be asked), then again every refresh interval, or sooner
 * with backoff after a failure. What each round means is decided by registry/refresh-plan.ts;
 * this only runs the rounds and tells the manager when the kind's CRs must be re-checked.
 */
import type { Logger } from 'pino';
import type { RemoteChart } from '../config/types.js';
import { realClock, type Clock, type TimerHandle } from '../lib/clock.js';
import { canonicalJson } from '../lib/json.js';
import { errorMessage } from '../lib/errors.js';
import { ChartSourceError } from '../registry/errors.js';
import { decideRefresh, type ChartState, type ResolveOutcome } from '../registry/refresh-plan.js';
import type { ChartResolver } from '../registry/resolver.js';

export interface ChartTrackerOptions {
  readonly remote: RemoteChart;
  /** Only these methods are used (unit tests pass a scripted fake). */
  readonly resolver: Pick<ChartResolver, 'resolve' | 'cached'>;
  /** 0 = resolve once (failures are still retried until it resolves). */
  readonly intervalMs: number;
  readonly log: Logger;
  readonly clock?: Clock;
  /** Every CR of the kind must be re-checked: new content, or the chart became (un)available. */
  readonly onChange: () => void;
}

export class ChartTracker {
  private current: ChartState | undefined;
  private failures = 0;
  private timer: TimerHandle | undefined;
  private stopped = false;
  private round: Promise<void> | undefined;
  private readonly clock: Clock;

  constructor(private readonly opts: ChartTrackerOptions) {
    this.clock = opts.clock ?? realClock;
  }

  /** The state after the first round (call `init` first). */
  get state(): ChartState {
    if (this.current === undefined) throw new Error('ChartTracker.state read before init()');
    return this.current;
  }

  /** Whether this tracker follows exactly `remote` at `intervalMs` (a reload that changes neither keeps it). */
  follows(remote: RemoteChart, intervalMs: number): boolean {
    return canonicalJson(remote) === canonicalJson(this.opts.remote) && intervalMs === this.opts.intervalMs;
  }

  /** The first resolution; schedules the next. */
  async init(): Promise<void> {
    await this.runRound();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    await this.round;
  }

  private runRound(): Promise<void> {
    this.round = this.resolveOnce().finally(() => { this.round = undefined; });
    return this.round;
  }

  private async resolveOnce(): Promise<void> {
    const { remote, resolver, log } = this.opts;
    const previous = this.current;
    let outcome: ResolveOutcome;
    try {
      const chart = await resolver.resolve(remote, previous?.kind === 'ready' ? previous.chart : undefined);
      outcome = { kind: 'resolved', chart };
      this.failures = 0;
    } catch (err) {
      this.failures++;
      outcome =
        err instanceof ChartSourceError
          ? { kind: 'failed', reason: err.reason, message: err.message, transient: err.transient }
          : { kind: 'failed', reason: 'RegistryUnreachable', message: `${remote.reference}: ${errorMessage(err)}`, transient: true };
    }
    if (this.stopped) return;
    const cached = previous === undefined && outcome.kind === 'failed' && outcome.transient ? await resolver.cached(remote).catch(() => undefined) : undefined;
    const decision = decideRefresh({ state: previous, outcome, failures: this.failures, intervalMs: this.opts.intervalMs, cached });
    this.current = decision.next;
    log[decision.log.level]({ chart: remote.reference, ...decision.log.fields }, decision.log.msg);
    if (decision.enqueueAll) this.opts.onChange();
    if (decision.retryInMs !== undefined) {
      // stop() may have come while this round awaited the cache: the callback checks again.
      this.timer = this.clock.setTimeout(() => {
        this.timer = undefined;
        if (!this.stopped) void this.runRound();
      }, decision.retryInMs);
    }
  }
}
