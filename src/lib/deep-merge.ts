/**
 * Values merge used to lay watches.yaml overrides over a CR spec: maps merge key by key,
 * anything else (lists, scalars, null) in `override` replaces what `base` had — the same rule as
 * operator-sdk's mergeMaps, so the chart sees the values it would have seen there.
 */
import { clonePlain, getOwn, isPlainMap, setOwn, type PlainMap } from './json.js';

/** Returns a new object; neither input is mutated and the result shares no maps or lists with them. */
export function deepMerge(base: PlainMap, override: PlainMap): PlainMap {
  const out = clonePlain(base) as PlainMap;
  for (const key of Object.keys(override)) {
    const o = override[key];
    const b = getOwn(out, key);
    setOwn(out, key, isPlainMap(o) && isPlainMap(b) ? deepMerge(b, o) : clonePlain(o));
  }
  return out;
}
