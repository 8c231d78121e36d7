/** The values a release gets: the CR's spec, with the operator's overrides on top. */
import { applyOverrides } from '../config/overrides.js';
import { isPlainMap } from '../lib/json.js';

export type MergedValues =
  | { readonly ok: true; readonly values: Record<string, unknown> }
  | { readonly ok: false; readonly problem: string };

function describe(v: unknown): string {
  if (Array.isArray(v)) return 'a list';
  if (v === null) return 'null';
  return `a ${typeof v}`;
}

/**
 * A missing spec means "the chart's defaults"; anything but a map cannot be Helm values.
 * Overrides are applied the way `helm --set` applies them (operator-sdk does the same), so they
 * win over the spec key by key.
 */
export function mergeValues(spec: unknown, overrides: Readonly<Record<string, string>>): MergedValues {
  if (spec === undefined || spec === null) return { ok: true, values: applyOverrides({}, overrides) };
  if (!isPlainMap(spec)) {
    return {
      ok: false,
      problem: `spec must be a map of chart values, but it is ${describe(spec)}; set spec to an object such as {replicaCount: 2}`,
    };
  }
  return { ok: true, values: applyOverrides(spec, overrides) };
}
