/** The values a release gets: the CR's spec, with the operator's overrides on top. */
import { isPlainMap, type PlainMap } from '../lib/json.js';

export type MergedValues =
  | { readonly ok: true; readonly values: Record<string, unknown> }
  | { readonly ok: false; readonly problem: string };

export type ApplyOverrides = (spec: PlainMap, overrides: Readonly<Record<string, string>>) => PlainMap;

function describe(v: unknown): string {
  if (Array.isArray(v)) return 'a list';
  if (v === null) return 'null';
  return `a ${typeof v}`;
}

/**
 * A missing spec means "the chart's defaults"; anything but a map cannot be Helm values.
 * Overrides are applied the way `helm --set` applies them (operator-sdk does the same), so they
 * win over the spec key by key; `apply` carries those semantics in from config/.
 */
export function mergeValues(spec: unknown, overrides: Readonly<Record<string, string>>, apply: ApplyOverrides): MergedValues {
  if (spec === undefined || spec === null) return { ok: true, values: apply({}, overrides) };
  if (!isPlainMap(spec)) {
    return {
      ok: false,
      problem: `spec must be a map of chart values, but it is ${describe(spec)}; set spec to an object such as {replicaCount: 2}`,
    };
  }
  return { ok: true, values: apply(spec, overrides) };
}
