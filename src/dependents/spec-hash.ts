/**
 * A digest of what an object is meant to be — everything but its status and the metadata the
 * server bumps on every write — so a watcher can tell "someone changed it" from "its controller
 * reported progress" without keeping a copy of the previous object.
 */
import { createHash } from 'node:crypto';
import type { KubeObject } from '../kube/types.js';

/** Metadata that changes on writes that do not change what the object is. */
const VOLATILE_METADATA = new Set(['resourceVersion', 'managedFields', 'generation', 'creationTimestamp', 'uid', 'selfLink']);

/** Cached per object: informer caches share object identities between events. */
const cache = new WeakMap<object, string>();

export function specHash(obj: KubeObject): string {
  const hit = cache.get(obj);
  if (hit !== undefined) return hit;
  const { status: _status, metadata, ...rest } = obj;
  const meta: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(metadata)) if (!VOLATILE_METADATA.has(k)) meta[k] = v;
  const hash = createHash('sha256').update(canonical({ ...rest, metadata: meta })).digest('base64url');
  cache.set(obj, hash);
  return hash;
}

/** JSON with sorted keys, so the same content always hashes the same. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (typeof v === 'object' && v !== null) {
    const entries = Object.entries(v as Record<string, unknown>)
      .filter(([, x]) => x !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonical(x)}`).join(',')}}`;
  }
  // JSON has no undefined; an array hole or undefined element serializes as null, as JSON.stringify does.
  return v === undefined ? 'null' : JSON.stringify(v);
}
