/**
 * Who owns a field of a live object, read from `metadata.managedFields` (server-side apply's
 * fieldsV1 sets: `f:<name>` for a map key, `k:{…}` for a list item by its keys, `v:<json>` for a
 * set member, `i:<n>` for an item by position; an empty `{}` owns everything beneath it).
 */
import { isPlainObject } from '../lib/json.js';
import type { KubeObject } from '../kube/types.js';

export interface FieldOwner {
  readonly manager: string;
  /** `Apply` or `Update`. */
  readonly operation: string;
  /** `scale`, `status`, …; undefined for the object itself. */
  readonly subresource: string | undefined;
}

/** The managers whose field set covers `path`, a field inside it, or a whole value it lies in. */
export function ownersOf(live: KubeObject, path: readonly (string | number)[]): FieldOwner[] {
  const out: FieldOwner[] = [];
  for (const entry of live.metadata.managedFields ?? []) {
    if (!isPlainObject(entry)) continue;
    const { manager, operation, subresource, fieldsV1 } = entry;
    if (typeof manager !== 'string' || !isPlainObject(fieldsV1)) continue;
    if (!covers(fieldsV1, live, path)) continue;
    out.push({ manager, operation: typeof operation === 'string' ? operation : '', subresource: typeof subresource === 'string' && subresource !== '' ? subresource : undefined });
  }
  return out;
}

/** `kube-controller-manager (scale)`: how messages name a manager. */
export function describeOwner(o: FieldOwner): string {
  return o.subresource === undefined ? o.manager : `${o.manager} (${o.subresource})`;
}

function covers(set: Record<string, unknown>, live: unknown, path: readonly (string | number)[]): boolean {
  let node: Record<string, unknown> = set;
  let value: unknown = live;
  for (const seg of path) {
    // An empty set at a field owns the field as a whole (a scalar, or an atomic map or list).
    if (Object.keys(node).length === 0) return true;
    let next: unknown;
    if (Array.isArray(value)) {
      const index = typeof seg === 'number' ? seg : Number(seg);
      const item: unknown = Number.isInteger(index) ? value[index] : undefined;
      next = itemKey(node, item, index);
      value = item;
    } else {
      next = node[`f:${String(seg)}`];
      value = isPlainObject(value) ? value[String(seg)] : undefined;
    }
    if (!isPlainObject(next)) return false;
    node = next;
  }
  return true;
}

/** The set of a list item: by its merge keys, its value, or its position. */
function itemKey(node: Record<string, unknown>, item: unknown, index: number): unknown {
  for (const [key, sub] of Object.entries(node)) {
    if (key.startsWith('k:') && isPlainObject(item)) {
      const keys = parseJson(key.slice(2));
      if (isPlainObject(keys) && Object.entries(keys).every(([k, v]) => sameScalar(item[k], v))) return sub;
    } else if (key.startsWith('v:')) {
      if (sameScalar(item, parseJson(key.slice(2)))) return sub;
    } else if (key === `i:${index}`) return sub;
  }
  return undefined;
}

function sameScalar(a: unknown, b: unknown): boolean {
  return a === b || (a !== undefined && b !== undefined && JSON.stringify(a) === JSON.stringify(b));
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
