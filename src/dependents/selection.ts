/**
 * Which dependent objects a replica watches and caches, and what changing that costs: the pure
 * part of the dependent watches (watcher.ts runs it).
 *
 * Without --shards a replica watches every object carrying the owner-uid label, as always. With
 * --shards it watches the objects whose owner-bucket label names a bucket its view of the ring gives
 * it, so its caches hold its share; plus the objects carrying no bucket label at all (deployed
 * before the label existed, or by an older member mid rolling update, or whose label someone
 * removed), which every member watches so that none of them is lost. A bucket label is hostile
 * input (whoever may edit the object may edit it): it only decides which replica's cache holds an
 * object, never which replica acts on its owner, which the owner CR's own shard guard decides.
 */
import type { KubeObject } from '../kube/types.js';
import { BUCKETS } from '../lib/uid-bucket.js';
import { OWNER_BUCKET_LABEL, OWNER_UID_LABEL } from '../engines/helm/names.js';

export type DependentSelection =
  /** Without --shards: every object with the owner-uid label. */
  | { readonly kind: 'all' }
  /** With --shards: the objects of these uid buckets (and those with no bucket label). */
  | { readonly kind: 'buckets'; readonly buckets: ReadonlySet<number> };

export const ALL_DEPENDENTS: DependentSelection = { kind: 'all' };

export function bucketSelection(buckets: Iterable<number>): DependentSelection {
  const set = new Set<number>();
  for (const b of buckets) {
    if (!(Number.isInteger(b) && b >= 0 && b < BUCKETS)) throw new RangeError(`a uid bucket is an integer in [0, ${String(BUCKETS)}), got ${String(b)}`);
    set.add(b);
  }
  return { kind: 'buckets', buckets: set };
}

/** The label selectors of a selection's watches; undefined when that watch is not needed. */
export interface SelectionSelectors {
  /** The objects of the selected owners (by bucket, with --shards). */
  readonly owned: string | undefined;
  /** Objects with no bucket label: with --shards only. */
  readonly unbucketed: string | undefined;
}

export function selectorsOf(selection: DependentSelection): SelectionSelectors {
  if (selection.kind === 'all') return { owned: OWNER_UID_LABEL, unbucketed: undefined };
  const buckets = [...selection.buckets].sort((a, b) => a - b);
  return {
    owned: buckets.length === 0 ? undefined : `${OWNER_UID_LABEL},${OWNER_BUCKET_LABEL} in (${buckets.join(',')})`,
    unbucketed: `${OWNER_UID_LABEL},!${OWNER_BUCKET_LABEL}`,
  };
}

/** How many of the BUCKETS the owned watch selects. */
export function bucketCount(selection: DependentSelection): number {
  return selection.kind === 'all' ? BUCKETS : selection.buckets.size;
}

/** Whether the owned watch of `selection` holds the objects of bucket `bucket`. */
export function selects(selection: DependentSelection, bucket: number): boolean {
  return selection.kind === 'all' || selection.buckets.has(bucket);
}

export function sameSelection(a: DependentSelection, b: DependentSelection): boolean {
  if (a.kind === 'all' || b.kind === 'all') return a.kind === b.kind;
  return a.buckets.size === b.buckets.size && [...a.buckets].every((x) => b.buckets.has(x));
}

/** Whether `to` selects a bucket `from` does not: some owner's objects are not cached yet. */
export function gains(from: DependentSelection, to: DependentSelection): boolean {
  if (to.kind === 'all') return from.kind !== 'all';
  return [...to.buckets].some((b) => !selects(from, b));
}

export interface SwapDelays {
  /** After a change that gives this replica buckets: its new owners' passes wait for the swap. */
  readonly gainMs: number;
  /** After a change that only takes buckets away: only memory waits, and the ring may change back. */
  readonly shrinkMs: number;
}

/**
 * How long after the selection changed to `target` the watches are swapped to it (one LIST per
 * watched kind), or undefined when they already select it. Waiting lets a burst of ring changes
 * (members noticed in one relist, a rolling update) cost one swap instead of one each.
 */
export function swapDelay(active: DependentSelection, target: DependentSelection, delays: SwapDelays): number | undefined {
  if (sameSelection(active, target)) return undefined;
  return gains(active, target) ? delays.gainMs : delays.shrinkMs;
}

/**
 * The bucket an object's label names, or undefined when it has none or not a bucket's number
 * (written by someone else: its owner's pass sets it back).
 */
export function labelledBucket(obj: KubeObject): number | undefined {
  const text = obj.metadata.labels?.[OWNER_BUCKET_LABEL];
  if (text === undefined || !/^(0|[1-9][0-9]{0,3})$/u.test(text)) return undefined;
  const n = Number(text);
  return n < BUCKETS ? n : undefined;
}

/** What a swap tells the owners: a change the old watch may not have delivered before it stopped. */
export type SwapChange =
  | { readonly type: 'added'; readonly obj: KubeObject }
  | { readonly type: 'updated'; readonly old: KubeObject; readonly obj: KubeObject }
  | { readonly type: 'deleted'; readonly obj: KubeObject };

/**
 * When one scope's owned watch is replaced (the old one selected `before`, the new one `after`
 * and has synced), the differences between the two caches in the buckets both select: a change
 * the old watch had not delivered yet when it stopped, and which the new one's first LIST took in
 * silently. Buckets only `after` selects belong to owners that just moved here (their passes wait
 * for the swap, see DependentWatcher.waitForOwner); buckets only `before` selects to owners that
 * moved away. Objects are matched by namespace and name, compared by resourceVersion.
 */
export function swapChanges(before: DependentSelection, after: DependentSelection, old: readonly KubeObject[], next: readonly KubeObject[]): SwapChange[] {
  const retained = (obj: KubeObject): boolean => {
    const bucket = labelledBucket(obj);
    return bucket === undefined ? before.kind === 'all' && after.kind === 'all' : selects(before, bucket) && selects(after, bucket);
  };
  const key = (o: KubeObject): string => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;
  const previous = new Map(old.map((o) => [key(o), o]));
  const out: SwapChange[] = [];
  for (const obj of next) {
    const was = previous.get(key(obj));
    previous.delete(key(obj));
    if (!retained(obj) && (was === undefined || !retained(was))) continue;
    if (was === undefined) out.push({ type: 'added', obj });
    else if (was.metadata.resourceVersion !== obj.metadata.resourceVersion) out.push({ type: 'updated', old: was, obj });
  }
  for (const obj of previous.values()) if (retained(obj)) out.push({ type: 'deleted', obj });
  return out;
}
