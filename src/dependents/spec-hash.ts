/**
 * A digest of what an object is meant to be — everything but its status and the metadata the
 * server bumps on every write — so a watcher can tell "someone changed it" from "its controller
 * reported progress" without keeping a copy of the previous object. Any object a watch delivers is
 * hashed, so the walk is iterative: an object nested thousands of levels cannot exhaust the stack.
 */
import { createHash } from 'node:crypto';
import type { KubeObject } from '../kube/types.js';
import { canonicalJsonOfAnyDepth } from '../lib/json.js';

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
  const hash = createHash('sha256').update(canonicalJsonOfAnyDepth({ ...rest, metadata: meta })).digest('base64url');
  cache.set(obj, hash);
  return hash;
}
