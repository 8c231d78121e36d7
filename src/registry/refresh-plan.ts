/**
 * What one resolution of a remote chart means for its kind: the state from now on, whether every
 * CR of the kind must be re-checked, what to log and when to ask again. Pure, so "an unchanged
 * refresh costs no CR work", "a new version upgrades every CR once" and "a failure keeps the chart
 * in use" are decided and tested without a registry.
 */
import { backoffDelay, type Backoff } from '../lib/backoff.js';
import type { ChartSourceReason } from './errors.js';
import type { ResolvedChart } from './resolver.js';

export type ChartState =
  | { readonly kind: 'ready'; readonly chart: ResolvedChart }
  | { readonly kind: 'unavailable'; readonly reason: ChartSourceReason; readonly message: string };

export type ResolveOutcome =
  | { readonly kind: 'resolved'; readonly chart: ResolvedChart }
  | { readonly kind: 'failed'; readonly reason: ChartSourceReason; readonly message: string; readonly transient: boolean };

export interface RefreshDecision {
  readonly next: ChartState;
  /** Every CR of the kind must be reconciled again (new content, or availability changed). */
  readonly enqueueAll: boolean;
  readonly log: { readonly level: 'debug' | 'info' | 'warn' | 'error'; readonly msg: string; readonly fields: Readonly<Record<string, unknown>> };
  /** Ask again after this long; undefined = never (a resolved chart with chartRefreshInterval 0). */
  readonly retryInMs: number | undefined;
}

/** Retries after a failure: 5 s, 10 s, … up to 5 minutes (never longer than the refresh interval). */
export const RETRY_BACKOFF: Backoff = { initialMs: 5_000, maxMs: 300_000, jitter: 0.1 };

export interface RefreshInput {
  /** undefined at start (nothing resolved yet). */
  readonly state: ChartState | undefined;
  readonly outcome: ResolveOutcome;
  /** Failures in a row, this one included (1 for the first). */
  readonly failures: number;
  readonly intervalMs: number;
  /** At start, when the registry could not be asked: the newest cached archive that fits the entry. */
  readonly cached?: ResolvedChart | undefined;
  readonly random?: () => number;
}

export function decideRefresh(input: RefreshInput): RefreshDecision {
  const { state, outcome, intervalMs } = input;
  const retry = Math.min(backoffDelay(input.failures, RETRY_BACKOFF, input.random), intervalMs > 0 ? intervalMs : Infinity);
  const every = intervalMs > 0 ? intervalMs : undefined;
  if (outcome.kind === 'resolved') {
    const chart = outcome.chart;
    const fields = { chart: chart.reference, version: chart.version, digest: chart.digest };
    if (state?.kind === 'ready' && state.chart.digest === chart.digest) {
      return { next: { kind: 'ready', chart }, enqueueAll: false, log: { level: 'debug', msg: 'chart unchanged', fields }, retryInMs: every };
    }
    if (state?.kind === 'ready') {
      return {
        next: { kind: 'ready', chart },
        enqueueAll: true,
        log: { level: 'info', msg: 'new chart content: every resource of this kind will be upgraded', fields: { ...fields, previousVersion: state.chart.version, previousDigest: state.chart.digest } },
        retryInMs: every,
      };
    }
    return {
      next: { kind: 'ready', chart },
      enqueueAll: state !== undefined,
      log: { level: 'info', msg: state === undefined ? 'chart resolved' : 'chart available again', fields },
      retryInMs: every,
    };
  }
  const failure = { reason: outcome.reason, error: outcome.message };
  if (state?.kind === 'ready') {
    // Whatever went wrong, the chart in use stays: nothing deployed is touched.
    return {
      next: state,
      enqueueAll: false,
      log: { level: 'warn', msg: 'chart refresh failed; keeping the chart in use', fields: { ...failure, chart: state.chart.reference, version: state.chart.version } },
      retryInMs: retry,
    };
  }
  if (state === undefined && outcome.transient && input.cached !== undefined) {
    const c = input.cached;
    return {
      next: { kind: 'ready', chart: c },
      enqueueAll: false,
      log: { level: 'warn', msg: 'registry unreachable at start; running with the cached copy', fields: { ...failure, chart: c.reference, version: c.version, digest: c.digest } },
      retryInMs: retry,
    };
  }
  const next: ChartState = { kind: 'unavailable', reason: outcome.reason, message: outcome.message };
  const changed = state === undefined || state.message !== outcome.message;
  return {
    next,
    // At start the controller reconciles every CR anyway; later, only a new message is news.
    enqueueAll: state !== undefined && changed,
    log: { level: changed ? 'error' : 'warn', msg: 'chart unavailable: its resources get ChartUnavailable until it can be pulled', fields: failure },
    retryInMs: retry,
  };
}
