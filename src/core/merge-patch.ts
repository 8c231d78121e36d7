/** JSON merge patches (RFC 7386) between two versions of a status. */
import type { CrStatus } from './model.js';

/** The merge patch that turns `previous` into `next`: null for each key (at any depth) `next` no longer has. */
export function statusMergePatch(previous: CrStatus | undefined, next: CrStatus): Record<string, unknown> {
  return mergePatchFrom(previous ?? {}, next);
}

/** `next`, with null for each key `previous` has and `next` lacks; objects in both diffed alike (arrays are replaced whole). */
function mergePatchFrom(previous: Readonly<Record<string, unknown>>, next: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const patch: Record<string, unknown> = { ...next };
  for (const [key, was] of Object.entries(previous)) {
    if (!(key in next)) patch[key] = null;
    else if (isPlainObject(was) && isPlainObject(next[key])) patch[key] = mergePatchFrom(was, next[key]);
  }
  return patch;
}

function isPlainObject(v: unknown): v is Readonly<Record<string, unknown>> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
