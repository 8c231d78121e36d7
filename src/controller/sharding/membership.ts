/**
 * How the sharder judges each member of a ring from its Lease, and what it does with one CR: the
 * pure core of the shard protocol (timings in, decisions out; no clock, no API).
 *
 * The order that keeps a release from being acted on by two members:
 * - a member acts only while it renews its Lease; it stops (exits) once a renewal has not succeeded
 *   within its renew deadline (leader election's rule, elector.ts), which is shorter than the
 *   lease duration;
 * - the sharder calls a member dead only when its Lease has not changed, as the sharder watched it,
 *   for DEAD_AFTER_LEASES lease durations: by then the member has stopped for at least one lease
 *   duration less its renew deadline, whichever clock is fast;
 * - a CR changes owner only when it has none: the old owner removed its label after its last
 *   reconcile ended (the acknowledgement of a drain, or its hand-over on SIGTERM), or the old
 *   owner is dead.
 */

/** A member's Lease as the sharder saw it. */
export interface MemberObservation {
  readonly member: string;
  /** '' when the member released its Lease (it has stopped). */
  readonly holder: string;
  readonly leaseDurationMs: number;
  /** When (the sharder's monotonic clock) the Lease last changed as the sharder saw it. */
  readonly observedAt: number;
  readonly leaving: boolean;
  readonly version: string;
  readonly settings: string;
}

/**
 * ready: renewing, may get CRs. expired: missed its renewals for a lease duration, gets no new CRs
 * but keeps its own. leaving: stopping, hands its CRs back. dead: its CRs go to others at once.
 */
export type MemberState = 'ready' | 'expired' | 'leaving' | 'dead';

export const DEAD_AFTER_LEASES = 2;

export function memberState(m: MemberObservation, now: number, leaseDurationMs: number): MemberState {
  // The longer of the configured and the written duration: a member never dies early by a short one.
  const duration = Math.max(leaseDurationMs, m.leaseDurationMs);
  if (now >= m.observedAt + DEAD_AFTER_LEASES * duration) return 'dead';
  if (m.holder === '' || m.leaving) return 'leaving';
  return now < m.observedAt + duration ? 'ready' : 'expired';
}

/** A CR as the sharder sees it: who owns it now, and whether it was asked to move. */
export interface ShardedObject {
  /** The shard label's value; undefined (or '') = unassigned. */
  readonly owner: string | undefined;
  readonly draining: boolean;
}

export type ShardDecision =
  | { readonly kind: 'none' }
  /** Write the owner label (and clear any drain label): the CR has no live owner. */
  | { readonly kind: 'assign'; readonly to: string }
  /** Ask the owner to let go: it stops, then removes both labels. */
  | { readonly kind: 'drain' }
  /** A drain label with no owner left: remove it. */
  | { readonly kind: 'clear-drain' };

/**
 * What to do with one CR, given the member the ring wants for it (undefined: no ready member) and
 * the state of its current owner (undefined: a member whose Lease the sharder has not seen, which
 * `stateOf` must report as dead only once it has been missing for as long as a dead one would).
 */
export function decide(obj: ShardedObject, desired: string | undefined, stateOf: (member: string) => MemberState): ShardDecision {
  const owner = obj.owner === '' ? undefined : obj.owner;
  if (owner === undefined) {
    if (desired !== undefined) return { kind: 'assign', to: desired };
    return obj.draining ? { kind: 'clear-drain' } : { kind: 'none' };
  }
  if (stateOf(owner) === 'dead') return desired === undefined ? { kind: 'none' } : { kind: 'assign', to: desired };
  // A live owner keeps the CR until it acknowledges: a drain asked once is waited for.
  if (owner === desired || obj.draining || desired === undefined) return { kind: 'none' };
  return { kind: 'drain' };
}
