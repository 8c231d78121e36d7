/** A chart kind's reading of its conditions into the summary (core/summary.ts): operator-sdk's conditions, worst first. */
import type { Condition } from '../../core/model.js';
import { isTrue, STALLED_READY_REASONS, SummaryStates, summaryOf, verdictFrom as from, type StatusSummary, type StatusVerdict } from '../../core/summary.js';
import { ConditionTypes, Reasons } from './names.js';

/** A chart kind's summary, from the conditions nextStatus wrote. */
export function chartSummary(conditions: readonly Pick<Condition, 'type' | 'status' | 'reason' | 'message'>[]): StatusSummary {
  return summaryOf(chartVerdict(conditions));
}

/** chartSummary with the whole message. */
export function chartVerdict(conditions: readonly Pick<Condition, 'type' | 'status' | 'reason' | 'message'>[]): StatusVerdict {
  const get = (type: string): Pick<Condition, 'type' | 'status' | 'reason' | 'message'> | undefined => conditions.find((c) => c.type === type);
  const deployed = get(ConditionTypes.deployed);
  const ready = get(ConditionTypes.ready);
  const irreconcilable = get(ConditionTypes.irreconcilable);
  const paused = get(ConditionTypes.paused);
  const unavailable = get(ConditionTypes.chartUnavailable);
  const failed = get(ConditionTypes.releaseFailed);
  const drifted = get(ConditionTypes.drifted);
  const held = get(ConditionTypes.chartChangeHeld);

  if (deployed?.status === 'False' && deployed.reason === Reasons.uninstallSuccessful) return from(SummaryStates.uninstalling, deployed);
  if (paused !== undefined && isTrue(paused)) return from(SummaryStates.paused, paused);
  // Irreconcilable is written after (and over) a failed deploy, so it is the newer news.
  if (irreconcilable !== undefined && isTrue(irreconcilable)) {
    return from(irreconcilable.reason === Reasons.foreignReleaseRecord ? SummaryStates.foreign : SummaryStates.stalled, irreconcilable);
  }
  if (unavailable !== undefined && isTrue(unavailable)) return from(SummaryStates.stalled, unavailable);
  // Ready may still be True for the revision a failed upgrade rolled back to: the failure is the news.
  if (failed !== undefined && isTrue(failed)) return from(SummaryStates.failed, failed);
  if (ready?.status === 'False' && STALLED_READY_REASONS.has(ready.reason)) return from(SummaryStates.stalled, ready);
  // Below this CR's own failures: those are about what it runs now, Held about what it does not get.
  if (held !== undefined && isTrue(held)) return from(SummaryStates.held, held);
  if (ready?.status === 'False') return from(SummaryStates.progressing, ready);
  if (drifted !== undefined && isTrue(drifted)) return from(SummaryStates.drifted, drifted);
  if (ready !== undefined && isTrue(ready)) return from(SummaryStates.ready, ready);
  if (deployed !== undefined && isTrue(deployed)) return from(SummaryStates.deployed, ready ?? { reason: deployed.reason, message: 'deployed' });
  return { state: SummaryStates.unknown, reason: '', message: '' };
}
