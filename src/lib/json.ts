/**
 * Small helpers for JSON-like values (CR specs, Helm values, API objects). In the `PlainMap`
 * helpers keys are read and written as own properties only, so a key such as `__proto__` in a CR
 * spec or an override path is stored as data and can never reach Object.prototype.
 */

/** A JSON object: not null, not an array (what JSON.parse gives for `{…}`). */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** `v` when it is a JSON object, else an empty one: for reading optional nested fields. */
export function asPlainObject(v: unknown): Record<string, unknown> {
  return isPlainObject(v) ? v : {};
}

/** JSON with object keys sorted, so equal values always serialize equally. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (isPlainObject(v)) {
      const sorted: Record<string, unknown> = {};
      for (const k of Object.keys(v).sort()) sorted[k] = v[k];
      return sorted;
    }
    return v;
  });
}

export type PlainMap = Record<string, unknown>;

export function isPlainMap(v: unknown): v is PlainMap {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

export function getOwn(map: PlainMap, key: string): unknown {
  return Object.hasOwn(map, key) ? map[key] : undefined;
}

export function setOwn(map: PlainMap, key: string, value: unknown): void {
  Object.defineProperty(map, key, { value, writable: true, enumerable: true, configurable: true });
}

/** Deep copy of maps and lists; other values are immutable or shared as they are. */
export function clonePlain(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(clonePlain);
  if (isPlainMap(v)) {
    const out: PlainMap = {};
    for (const k of Object.keys(v)) setOwn(out, k, clonePlain(v[k]));
    return out;
  }
  return v;
}
