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

/**
 * The same JSON as canonicalJson for JSON-like data (sorted keys; undefined skipped in objects,
 * null in lists), without recursion: for objects from outside (any depth) whose walk must not
 * exhaust the stack.
 */
export function canonicalJsonOfAnyDepth(value: unknown): string {
  const out: string[] = [];
  // A string is text to write; an object holds a value still to serialize.
  const stack: (string | { readonly v: unknown })[] = [{ v: value }];
  for (let frame = stack.pop(); frame !== undefined; frame = stack.pop()) {
    if (typeof frame === 'string') {
      out.push(frame);
      continue;
    }
    const v = frame.v;
    const parts: (string | { readonly v: unknown })[] = [];
    if (Array.isArray(v)) {
      parts.push('[');
      (v as unknown[]).forEach((x, i) => {
        if (i > 0) parts.push(',');
        parts.push({ v: x === undefined ? null : x });
      });
      parts.push(']');
    } else if (isPlainObject(v)) {
      parts.push('{');
      Object.keys(v)
        .filter((k) => v[k] !== undefined)
        .sort()
        .forEach((k, i) => {
          parts.push(`${i > 0 ? ',' : ''}${JSON.stringify(k)}:`, { v: v[k] });
        });
      parts.push('}');
    } else {
      // JSON.stringify gives undefined for a function or symbol (typed as string regardless).
      const text: string | undefined = v === undefined ? undefined : JSON.stringify(v);
      out.push(text ?? 'null');
      continue;
    }
    for (let i = parts.length - 1; i >= 0; i--) stack.push(parts[i] as string | { readonly v: unknown });
  }
  return out.join('');
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
