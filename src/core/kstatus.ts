/**
 * kstatus's two conditions (sigs.k8s.io/cli-utils pkg/kstatus), for both engines. GitOps tools read
 * a CR's state from them — Flux's `wait: true`, Helm 4's `--wait`, cli-utils' appliers: without
 * them kstatus calls a CR whose release failed "Current" as soon as observedGeneration matches.
 *
 * - `Reconciling=True`: chartpilot is still getting there (an action runs, objects are becoming
 *   ready, a failure is retried within its budget, a deleted CR's objects are going).
 * - `Stalled=True`: it will not get there until someone acts (a bad spec or annotation, a missing
 *   ServiceAccount, an unavailable chart, an object that failed, failures that spent the budget).
 * - Neither: it is where the CR asks (Ready says how the objects are), or someone chose to hold it
 *   (paused, a held chart change).
 *
 * Pure, and read from the summary's verdict (summary.ts, one reading of the engine's conditions),
 * so `kubectl get`, Argo CD's health check and kstatus never disagree.
 */
import { removeCondition, setCondition } from './conditions.js';
import type { Condition } from './model.js';
import { SummaryStates, type StatusVerdict } from './summary.js';

export const KstatusConditionTypes = {
  reconciling: 'Reconciling',
  stalled: 'Stalled',
} as const;

export const KstatusReasons = {
  /** A failed install, upgrade or run is retried with backoff; attempts are left in the budget. */
  retrying: 'RetryingAfterFailure',
  /** Failed attempts in a row spent the budget (--stall-after-failures). */
  retriesExhausted: 'RetriesExhausted',
} as const;

/** The default of --stall-after-failures. */
export const DEFAULT_STALL_AFTER_FAILURES = 5;

/** Where the count lives: `status.chartpilot.failures`. */
export const FAILURES_KEY = 'failures';

/** Failed attempts in a row for the same inputs (a chart kind's desired fingerprint, an Ansible run's inputs). */
export interface FailureCount {
  readonly inputs: string;
  readonly count: number;
}

/** The count a status holds under chartpilot's key, if it holds a readable one. */
export function readFailures(own: unknown): FailureCount | undefined {
  if (typeof own !== 'object' || own === null) return undefined;
  const f = (own as Record<string, unknown>)[FAILURES_KEY];
  if (typeof f !== 'object' || f === null) return undefined;
  const { inputs, count } = f as Record<string, unknown>;
  return typeof inputs === 'string' && typeof count === 'number' && Number.isSafeInteger(count) && count > 0 ? { inputs, count } : undefined;
}

/** One more failed attempt: counted on from the last when its inputs are the same, else the first. */
export function countFailure(previous: FailureCount | undefined, inputs: string): FailureCount {
  return { inputs, count: previous?.inputs === inputs ? previous.count + 1 : 1 };
}

export interface KstatusCondition {
  readonly status: 'True';
  readonly reason: string;
  readonly message: string;
}

/** Each of the two set (True) or absent. */
export interface KstatusVerdict {
  readonly reconciling: KstatusCondition | undefined;
  readonly stalled: KstatusCondition | undefined;
}

/** While an action runs (written before it starts, so a tool that looks mid-action sees it). */
export function running(reason: string, message: string): KstatusVerdict {
  return { reconciling: { status: 'True', reason, message }, stalled: undefined };
}

/** What runs, as Flux and helm-operator-plugins word it: "Running 'upgrade' of release team-a/web (timeout 5m)". */
export function runningMessage(action: string, what: string, timeoutMs: number): string {
  return `Running '${action}' of ${what} (timeout ${durationText(timeoutMs)})`;
}

/**
 * The two conditions after a reconcile ended with `verdict`. `failures`: the count the status now
 * holds (undefined after a success); `stallAfter`: failed attempts in a row that make a failure
 * Stalled (0: never, a failure stays Reconciling while it is retried).
 */
export function kstatusVerdict(verdict: StatusVerdict, failures: FailureCount | undefined, stallAfter: number): KstatusVerdict {
  const none: KstatusVerdict = { reconciling: undefined, stalled: undefined };
  switch (verdict.state) {
    case SummaryStates.stalled:
    case SummaryStates.foreign:
      return { reconciling: undefined, stalled: { status: 'True', reason: verdict.reason, message: verdict.message } };
    case SummaryStates.failed: {
      const count = failures?.count ?? 1;
      if (stallAfter > 0 && count >= stallAfter) {
        return {
          reconciling: undefined,
          stalled: {
            status: 'True',
            reason: KstatusReasons.retriesExhausted,
            message:
              `${String(count)} attempts in a row failed with the same spec and chart (${verdict.reason}): ${verdict.message} — ` +
              'chartpilot keeps retrying with backoff, but only a fix ends this: correct what the message names (the spec, the chart or the cluster), ' +
              'or change the spec; a success clears it',
          },
        };
      }
      const of = stallAfter > 0 ? ` of ${String(stallAfter)}` : '';
      return { reconciling: { status: 'True', reason: KstatusReasons.retrying, message: `attempt ${String(count)}${of} failed, retrying with backoff (${verdict.reason}): ${verdict.message}` }, stalled: undefined };
    }
    case SummaryStates.running:
    case SummaryStates.progressing:
    case SummaryStates.uninstalling:
      return { reconciling: { status: 'True', reason: verdict.reason, message: verdict.message }, stalled: undefined };
    case SummaryStates.paused:
    case SummaryStates.held:
    case SummaryStates.drifted:
    case SummaryStates.ready:
    case SummaryStates.deployed:
    case SummaryStates.succeeded:
    case SummaryStates.unknown:
      return none;
  }
}

/** `conditions` with Reconciling and Stalled as `verdict` says: set (True), or taken off. */
export function withKstatus<C extends Condition>(conditions: readonly C[], verdict: KstatusVerdict, observedGeneration: number | undefined, now: string): C[] {
  let next = [...conditions];
  for (const [type, c] of [
    [KstatusConditionTypes.reconciling, verdict.reconciling],
    [KstatusConditionTypes.stalled, verdict.stalled],
  ] as const) {
    next = c === undefined ? removeCondition(next, type) : setCondition(next, { type, status: c.status, reason: c.reason, message: c.message }, observedGeneration, now);
  }
  return next;
}

/** 300000 → "5m", 90000 → "1m30s", 1500 → "1.5s". */
export function durationText(ms: number): string {
  if (ms < 60_000) return `${String(Number((ms / 1000).toFixed(1)))}s`;
  const totalSeconds = Math.round(ms / 1000);
  const hours = Math.floor(totalSeconds / 3600);
  const minutes = Math.floor((totalSeconds % 3600) / 60);
  const seconds = totalSeconds % 60;
  return `${hours > 0 ? `${String(hours)}h` : ''}${minutes > 0 ? `${String(minutes)}m` : ''}${seconds > 0 ? `${String(seconds)}s` : ''}`;
}
