/**
 * Whether a member may act on one of its CRs: the pure core of the member's side of the ring.
 *
 * The shard label is written by the sharder, but also by anyone who may update the CR (its
 * author): a forged label must never make two members act on one release. So a member does not
 * trust the label alone. It acts on a CR only when
 * - the label names it and no drain is asked (a drain, forged or not, only makes it let go);
 * - the ring as it sees it (its view: the ready members) gives it the CR's uid bucket, so a label
 *   the ring did not make is not acted on (the sharder, seeing an owner that is not the ring's
 *   pick, drains it and writes the right one);
 * - it has written that view to its own Lease (which CR authors cannot write), and then read every
 *   other member's Lease afresh from the API server: none claims the CR. A member claims a CR when
 *   its published view gives it the CR's bucket, or when it lists the uid as busy — it writes a
 *   new view together with the uids it still reconciles that the new view gives to others, and
 *   starts nothing for a CR until its current view is written.
 * Two members acting on one CR would each have written its view and then read the other's Lease;
 * whichever wrote second reads the other's claim (writes and reads of one etcd are linearizable), so
 * at most one acts, whatever the label says and however stale either member's watch is.
 */
import { HashRing } from './ring.js';

/** What another member wrote in its Lease, as read afresh after this member published its view. */
export interface MemberClaims {
  readonly member: string;
  /** Its view of the ring; undefined when its Lease has none (fail closed: it may claim anything). */
  readonly view: readonly string[] | undefined;
  readonly busy: ReadonlySet<string>;
}

export interface GuardInput {
  readonly member: string;
  readonly uid: string;
  /** The CR's shard label. */
  readonly owner: string | undefined;
  readonly draining: boolean;
  /** The ring as this member sees it now. */
  readonly view: readonly string[];
  /** The view this member's Lease holds (undefined: none written yet). */
  readonly published: readonly string[] | undefined;
  /** The other members' Leases, read after `published` was written; undefined: not read yet. */
  readonly others: readonly MemberClaims[] | undefined;
}

export type WaitReason =
  /** The label names another member (or none): never acted on here. */
  | 'not-labelled'
  /** The label names this member, the ring does not: forged, or the ring just changed (the sharder drains it). */
  | 'not-the-ring'
  /** This member's current view is not in its Lease yet. */
  | 'unpublished'
  /** The other members' Leases have not been read since. */
  | 'unverified'
  /** Another member claims the CR (its view gives it the CR, or it still reconciles it). */
  | 'claimed';

export type GuardDecision = { readonly kind: 'act' } | { readonly kind: 'let-go' } | { readonly kind: 'wait'; readonly reason: WaitReason; readonly by?: string };

export function sameView(a: readonly string[] | undefined, b: readonly string[] | undefined): boolean {
  return a !== undefined && b !== undefined && a.length === b.length && a.every((m, i) => m === b[i]);
}

/** A view as written in a Lease: sorted member names, comma-separated. */
export function formatView(view: readonly string[]): string {
  return [...view].sort().join(',');
}

export function parseView(text: string | undefined): string[] | undefined {
  if (text === undefined) return undefined;
  return text === '' ? [] : text.split(',').sort();
}

const rings = new Map<string, HashRing>();
const MAX_RINGS = 16;

/** The member a view gives the CR with this uid (rings memoized: views change rarely). */
export function pickOf(view: readonly string[], uid: string): string | undefined {
  const key = formatView(view);
  let ring = rings.get(key);
  if (ring === undefined) {
    if (rings.size >= MAX_RINGS) rings.clear();
    ring = new HashRing(view);
    rings.set(key, ring);
  }
  return ring.ownerOfUid(uid);
}

export function guard(input: GuardInput): GuardDecision {
  const { member, uid } = input;
  if (input.owner !== member) return { kind: 'wait', reason: 'not-labelled' };
  if (input.draining) return { kind: 'let-go' };
  if (pickOf(input.view, uid) !== member) return { kind: 'wait', reason: 'not-the-ring' };
  if (!sameView(input.published, input.view)) return { kind: 'wait', reason: 'unpublished' };
  if (input.others === undefined) return { kind: 'wait', reason: 'unverified' };
  for (const other of input.others) {
    if (other.member === member) continue;
    if (other.busy.has(uid) || other.view === undefined || pickOf(other.view, uid) === other.member) return { kind: 'wait', reason: 'claimed', by: other.member };
  }
  return { kind: 'act' };
}
