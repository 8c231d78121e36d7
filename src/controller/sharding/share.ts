/**
 * Which owners' objects a ring member's dependent watches hold: the uid buckets its view of the
 * ring gives it, the same buckets by which it is given CRs. A member not in its own view (not
 * ready yet, or renewing late) holds none (the ring has no point of it): it acts on no CR then either.
 */
import { bucketSelection, type DependentSelection, type SwapDelays } from '../../dependents/selection.js';
import { DEAD_AFTER_LEASES } from './membership.js';
import { HashRing } from './ring.js';
import type { ShardTimings } from './timings.js';

export function dependentShare(view: readonly string[], member: string): DependentSelection {
  return bucketSelection(new HashRing(view).bucketsOf(member));
}

/**
 * When the dependent watches follow a view change. A gain at the pace of the ring's own retries
 * (its CRs' passes wait for it); a loss only after a member gone missing would have been judged
 * dead: one that renewed late and comes back within that time costs no LIST of its buckets twice.
 */
export function dependentSwapDelays(timings: ShardTimings): SwapDelays {
  return { gainMs: timings.retryPeriodMs, shrinkMs: DEAD_AFTER_LEASES * timings.leaseDurationMs };
}
