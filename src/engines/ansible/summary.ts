/**
 * An Ansible kind's `status.chartpilot.summary` (see core/summary.ts), from ansible-operator's
 * conditions and chartpilot's Ready: pure, so `kubectl get` tells a failed, stalled, running or
 * progressing CR from a healthy one with the same columns as a chart kind.
 */
import { STALLED_READY_REASONS, SummaryStates, summaryOf, verdictFrom as from, type StatusSummary, type StatusVerdict } from '../../core/summary.js';
import { AnsibleConditions, AnsibleReasons, type AnsibleCondition } from './conditions.js';

/** Failure reasons that no new run fixes: the CR or its namespace must change first. */
const STALLED_FAILURES: ReadonlySet<string> = new Set([AnsibleReasons.invalid, AnsibleReasons.serviceAccountNotFound]);

export function ansibleSummary(conditions: readonly Pick<AnsibleCondition, 'type' | 'status' | 'reason' | 'message'>[]): StatusSummary {
  return summaryOf(ansibleVerdict(conditions));
}

/** ansibleSummary with the whole message. */
export function ansibleVerdict(conditions: readonly Pick<AnsibleCondition, 'type' | 'status' | 'reason' | 'message'>[]): StatusVerdict {
  const get = (type: string): Pick<AnsibleCondition, 'type' | 'status' | 'reason' | 'message'> | undefined => conditions.find((c) => c.type === type);
  const running = get(AnsibleConditions.running);
  const failure = get(AnsibleConditions.failure);
  const successful = get(AnsibleConditions.successful);
  const ready = get(AnsibleConditions.ready);

  // A failing role is retried with backoff, each retry a run: the failure stays the news until a
  // run succeeds (Failure turns False), or a table glanced at mid-retry would show it Running.
  if (failure?.status === 'True') return from(STALLED_FAILURES.has(failure.reason) ? SummaryStates.stalled : SummaryStates.failed, failure);
  if (running?.status === 'True' && running.reason === AnsibleReasons.running) return from(SummaryStates.running, running);
  if (ready?.status === 'False') return from(STALLED_READY_REASONS.has(ready.reason) ? SummaryStates.stalled : SummaryStates.progressing, ready);
  if (ready?.status === 'True') return from(SummaryStates.ready, ready);
  if (successful?.status === 'True') return from(SummaryStates.succeeded, successful);
  return { state: SummaryStates.unknown, reason: '', message: '' };
}
