/** The values a release gets: the CR's spec, with values from references around it and the operator's overrides on top. */
import { isPlainMap, type PlainMap } from '../../lib/json.js';
import { valuesShapeProblem } from '../../core/values-shape.js';
import { deepMerge } from '../../lib/deep-merge.js';

export { MAX_VALUES_BYTES, MAX_VALUES_DEPTH, ValuesReasons, valuesShapeProblem, valuesTooLarge } from '../../core/values-shape.js';

export type MergedValues =
  | { readonly ok: true; readonly values: Record<string, unknown> }
  /** `reason`: a condition reason of its own (ValuesTooDeep, ValuesTooLarge); else the default one. */
  | { readonly ok: false; readonly problem: string; readonly reason?: string };

export type ApplyOverrides = (spec: PlainMap, overrides: Readonly<Record<string, string>>) => PlainMap;

function describe(v: unknown): string {
  if (Array.isArray(v)) return 'a list';
  if (v === null) return 'null';
  return `a ${typeof v}`;
}

/** Values read from Secrets and ConfigMaps: under the spec (the CR's references) and over it (the entry's). */
export interface ValuesLayers {
  readonly below: PlainMap;
  readonly above: PlainMap;
}

/**
 * A missing spec means "the chart's defaults"; anything but a map cannot be Helm values.
 * Overrides are applied the way `helm --set` applies them (operator-sdk does the same), so they
 * win over the spec key by key; `apply` carries those semantics in from config/. Values from
 * references merge under the spec (`below`) and over it (`above`), under the overrides.
 */
export function mergeValues(spec: unknown, overrides: Readonly<Record<string, string>>, apply: ApplyOverrides, layers?: ValuesLayers): MergedValues {
  const layered = (values: PlainMap): PlainMap => (layers === undefined ? values : deepMerge(deepMerge(layers.below, values), layers.above));
  if (spec === undefined || spec === null) return { ok: true, values: apply(layered({}), overrides) };
  // Before anything walks the spec: every walk after this one may recurse.
  const shape = valuesShapeProblem(spec);
  if (shape !== undefined) return { ok: false, problem: shape.message, reason: shape.reason };
  if (!isPlainMap(spec)) {
    return {
      ok: false,
      problem: `spec must be a map of chart values, but it is ${describe(spec)}; set spec to an object such as {replicaCount: 2}`,
    };
  }
  return { ok: true, values: apply(layered(spec), overrides) };
}
