/**
 * `status.chartpilot.summary`: one state word, a reason and a one-line message, as a pure function
 * of the conditions. `kubectl get` can only print a JSONPath of the object, and no JSONPath over
 * conditions can say "a failed upgrade beats a Ready that still holds for the last revision"; so
 * the operator writes the verdict and the CRD's printer columns show it. The conditions stay
 * exactly operator-sdk's (and ansible-operator's): the summary only reads them.
 */
import type { Condition } from './model.js';

/** The states, worst first as the summary picks them. */
export const SummaryStates = {
  /** Being deleted: the release is uninstalled and its objects are still going (uninstall-wait). */
  uninstalling: 'Uninstalling',
  paused: 'Paused',
  /** Release records chartpilot did not write for this CR: nothing is done to the release. */
  foreign: 'Foreign',
  /** Nothing will change until someone acts: a bad spec, name or annotation, a missing ServiceAccount, an unavailable chart, an object that failed. */
  stalled: 'Stalled',
  /** The last install, upgrade or uninstall (or Ansible run) failed; what was deployed before stays. */
  failed: 'Failed',
  /** The kind's chart changed and the change failed on its first CR; this CR keeps the last good chart. */
  held: 'Held',
  /** An Ansible run is in progress. */
  running: 'Running',
  /** Deployed; objects are still becoming ready. */
  progressing: 'Progressing',
  /** Objects differ from the chart and are left so (driftDetection warn, or given up to another manager). */
  drifted: 'Drifted',
  ready: 'Ready',
  /** Deployed (or run) and readiness is not tracked. */
  deployed: 'Deployed',
  succeeded: 'Succeeded',
  unknown: 'Unknown',
} as const;

export type SummaryState = (typeof SummaryStates)[keyof typeof SummaryStates];

export interface StatusSummary {
  readonly state: SummaryState;
  readonly reason: string;
  readonly message: string;
}

/** Where the summary lives: chartpilot's own key of the status (operator-sdk's keys stay as they are). */
export const CHARTPILOT_STATUS_KEY = 'chartpilot';

/**
 * Ready's reasons for an object that failed in a way waiting will not fix (dependents/readiness.ts
 * gives these with `failed: true`): the summary calls such a CR Stalled, not Progressing.
 */
export const STALLED_READY_REASONS: ReadonlySet<string> = new Set(['ProgressDeadlineExceeded', 'JobFailed', 'PodFailed']);

/** kubectl prints a cell up to its first line break; a wide table needs less than a condition may hold. */
const MAX_SUMMARY_MESSAGE = 200;

/** The first line of `message`, clipped for a table cell (the condition keeps it whole). */
export function summaryMessage(message: string): string {
  const first = (message.split(/[\r\n\f]/u)[0] ?? '').trim();
  return first.length <= MAX_SUMMARY_MESSAGE ? first : `${first.slice(0, MAX_SUMMARY_MESSAGE - 1)}…`;
}

export function isTrue(c: Pick<Condition, 'status'> | undefined): boolean {
  return c?.status === 'True';
}

/** A summary with the whole message of the condition it was read from (what kstatus.ts words its conditions with). */
export interface StatusVerdict {
  readonly state: SummaryState;
  readonly reason: string;
  readonly message: string;
}

export const verdictFrom = (state: SummaryState, c: Pick<Condition, 'reason' | 'message'>): StatusVerdict => ({ state, reason: c.reason, message: c.message });

/** The verdict as `kubectl get` prints it: the message's first line, clipped. */
export function summaryOf(verdict: StatusVerdict): StatusSummary {
  return { state: verdict.state, reason: verdict.reason, message: summaryMessage(verdict.message) };
}

/** `status` with `summary` under chartpilot's key, beside whatever else chartpilot keeps there. */
export function withSummary<S extends Readonly<Record<string, unknown>>>(status: S, summary: StatusSummary): S & Record<string, unknown> {
  const own = status[CHARTPILOT_STATUS_KEY];
  const kept = typeof own === 'object' && own !== null && !Array.isArray(own) ? (own as Record<string, unknown>) : {};
  return { ...status, [CHARTPILOT_STATUS_KEY]: { ...kept, summary } };
}
