/**
 * What changed between the cache and a fresh LIST. After a watch gap (410 Gone) this is how handlers
 * learn about everything they missed, deletions included: an object absent from the new list was
 * deleted while nobody was watching.
 */
import { keyOf, type KubeObject } from './types.js';

export interface RelistDiff<T extends KubeObject> {
  /** The new cache contents, keyed like `keyOf`. */
  readonly cache: Map<string, T>;
  readonly added: T[];
  /** Objects whose resourceVersion changed: [cached, listed]. */
  readonly updated: [T, T][];
  /** Cached objects absent from the list, as last seen. */
  readonly deleted: T[];
}

export function diffRelist<T extends KubeObject>(cached: ReadonlyMap<string, T>, listed: readonly T[]): RelistDiff<T> {
  const cache = new Map<string, T>();
  const added: T[] = [];
  const updated: [T, T][] = [];
  const deleted: T[] = [];
  for (const obj of listed) {
    const key = keyOf(obj);
    cache.set(key, obj);
    const old = cached.get(key);
    if (!old) added.push(obj);
    else if (old.metadata.uid && obj.metadata.uid && old.metadata.uid !== obj.metadata.uid) {
      // Deleted and recreated under the same name while away: two objects, not one changed.
      deleted.push(old);
      added.push(obj);
    } else if (old.metadata.resourceVersion !== obj.metadata.resourceVersion) updated.push([old, obj]);
  }
  for (const [key, old] of cached) {
    if (!cache.has(key)) deleted.push(old);
  }
  return { cache, added, updated, deleted };
}
