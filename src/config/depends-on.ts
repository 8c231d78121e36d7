/**
 * `dependsOn`: the CRs a CR lists in the entry's spec field, checked; which served kind each names;
 * whether one is Ready; and cycles in what CRs depend on. Pure: the watches are
 * controller/dependency-graph.ts.
 */
import { describeValue } from '../lib/describe-value.js';
import { isMap, isScalar } from 'yaml';
import { getOwn, isPlainMap, type PlainMap } from '../lib/json.js';
import { DependencyReasons, type DependencyRef, type DependsOnSettings, type SplitDependencies } from '../core/dependencies.js';
import { isDnsLabel, isDnsSubdomain } from './labels.js';
import { bool, describeNode, fieldsOf, scalarText, type Field, type YamlContext } from './yaml-nodes.js';

/** Each dependency is judged on every reconcile; more would only be there to slow them down. */
export const MAX_DEPENDENCIES = 32;
const REF_KEYS: readonly string[] = ['apiVersion', 'kind', 'name', 'namespace'];
const KIND = /^[A-Z][A-Za-z0-9]{0,62}$/u;
const API_VERSION = /^(?:[a-z0-9.-]{1,253}\/)?[a-z0-9-]{1,63}$|^[a-z0-9.-]{1,253}$/u;
const SPEC_FIELD = /^[A-Za-z_][A-Za-z0-9_-]{0,62}$/u;
const EXAMPLE = '{kind: Database, name: db}';


/** The spec without the entry's dependsOn field, and the dependencies listed there. */
export function splitDependencies(spec: unknown, settings: DependsOnSettings): SplitDependencies {
  const field = settings.specField;
  if (!isPlainMap(spec)) return { ok: true, spec, dependencies: [] };
  const raw = getOwn(spec, field);
  const rest: PlainMap = {};
  for (const [k, v] of Object.entries(spec)) if (k !== field) Object.defineProperty(rest, k, { value: v, enumerable: true, writable: true, configurable: true });
  if (raw === undefined || raw === null) return { ok: true, spec: rest, dependencies: [] };
  const invalid = (problem: string): SplitDependencies => ({ ok: false, reason: DependencyReasons.invalid, problem: `${problem}. Nothing is installed or upgraded until it is fixed; the deployed release is left as it is` });
  if (!Array.isArray(raw)) return invalid(`spec.${field} is ${describeValue(raw)}; expected a list of the resources this one depends on, such as [${EXAMPLE}]`);
  if (raw.length > MAX_DEPENDENCIES) return invalid(`spec.${field} lists ${String(raw.length)} dependencies; at most ${String(MAX_DEPENDENCIES)} are judged`);
  const dependencies: DependencyRef[] = [];
  for (const [i, item] of (raw as unknown[]).entries()) {
    const at = `spec.${field}[${String(i)}]`;
    if (!isPlainMap(item)) return invalid(`${at} is ${describeValue(item)}; expected a map such as ${EXAMPLE}`);
    const stray = Object.keys(item).find((k) => !REF_KEYS.includes(k));
    if (stray !== undefined) return invalid(`${at} has the unknown key "${stray.slice(0, 60)}"; a dependency has ${REF_KEYS.join(', ')}`);
    const kind = getOwn(item, 'kind');
    if (typeof kind !== 'string' || !KIND.test(kind)) return invalid(`${at}.kind is ${describeValue(kind)}; expected the Kind of a resource this operator serves, e.g. Database`);
    const name = getOwn(item, 'name');
    if (typeof name !== 'string' || !isDnsSubdomain(name)) return invalid(`${at}.name is ${describeValue(name)}; expected the name of a ${kind}`);
    const namespace = getOwn(item, 'namespace');
    if (namespace !== undefined && (typeof namespace !== 'string' || !isDnsLabel(namespace))) return invalid(`${at}.namespace is ${describeValue(namespace)}; expected a namespace name, or leave it out for this resource's own`);
    const apiVersion = getOwn(item, 'apiVersion');
    if (apiVersion !== undefined && (typeof apiVersion !== 'string' || !API_VERSION.test(apiVersion))) return invalid(`${at}.apiVersion is ${describeValue(apiVersion)}; expected group/version, e.g. demo.example.com/v1alpha1`);
    dependencies.push({ kind, name, ...(typeof namespace === 'string' ? { namespace } : {}), ...(typeof apiVersion === 'string' ? { apiVersion } : {}) });
  }
  return { ok: true, spec: rest, dependencies };
}

/** A kind this operator serves, as the graph names it (`Kind.group`, a ReconcileTarget's ownerKind). */
export interface ServedKind {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
}

/** Which served kind `ref` names: one, or why none can be chosen. */
export function resolveKind(ref: DependencyRef, served: readonly ServedKind[]): { readonly ok: true; readonly kind: ServedKind } | { readonly ok: false; readonly problem: string } {
  const [groupPart, versionPart] = ref.apiVersion === undefined ? [undefined, undefined] : ref.apiVersion.includes('/') ? ref.apiVersion.split('/') : [ref.apiVersion, undefined];
  const matching = served.filter((s) => s.kind === ref.kind && (groupPart === undefined || s.group === groupPart) && (versionPart === undefined || s.version === versionPart));
  // Several versions of one kind are one kind here: any of them tells its CRs' status.
  const kinds = [...new Map(matching.map((m) => [`${m.kind}.${m.group}`, m])).values()];
  const [only] = kinds;
  if (only !== undefined && kinds.length === 1) return { ok: true, kind: only };
  if (kinds.length === 0) {
    const names = [...new Set(served.map((s) => s.kind))].sort().join(', ');
    return { ok: false, problem: `${ref.kind}${ref.apiVersion === undefined ? '' : ` (${ref.apiVersion})`} is not a kind this operator serves (it serves ${names}); a resource can depend only on those` };
  }
  return { ok: false, problem: `${ref.kind} is served in several groups (${kinds.map((k) => k.group).join(', ')}); say which with apiVersion: <group>/<version>` };
}

/** What the graph keeps of a depended-on CR: enough to tell whether it is Ready. */
export interface DependencyState {
  readonly generation?: number | undefined;
  readonly observedGeneration?: number | undefined;
  readonly ready?: { readonly status: string; readonly observedGeneration?: number | undefined; readonly message?: string | undefined } | undefined;
  readonly deleting: boolean;
}

/** Why a dependency is not Ready yet, or undefined when it is: Ready=True for the generation it has now. */
export function notReadyBecause(state: DependencyState | undefined, what: string): string | undefined {
  if (state === undefined) return `${what} does not exist`;
  if (state.deleting) return `${what} is being deleted`;
  const ready = state.ready;
  if (ready?.status !== 'True') return `${what} is not Ready${ready === undefined ? ' (no Ready condition yet)' : ready.message === undefined || ready.message === '' ? '' : ` (${ready.message.slice(0, 200)})`}`;
  const seen = ready.observedGeneration ?? state.observedGeneration;
  if (state.generation !== undefined && seen !== undefined && seen < state.generation) return `${what} is Ready for generation ${String(seen)}, not yet for its current spec (generation ${String(state.generation)})`;
  return undefined;
}

/** A path from `start` back to itself along `edges`, or undefined; iterative, visits each node once. */
export function findCycle(start: string, edges: (id: string) => Iterable<string>): string[] | undefined {
  const parent = new Map<string, string>();
  const seen = new Set<string>([start]);
  const stack: string[] = [start];
  for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
    for (const next of edges(node)) {
      if (next === start) {
        const path = [start];
        for (let at: string | undefined = node; at !== undefined && at !== start; at = parent.get(at)) path.splice(1, 0, at);
        path.push(start);
        return path;
      }
      if (seen.has(next)) continue;
      seen.add(next);
      parent.set(next, node);
      stack.push(next);
    }
  }
  return undefined;
}

/** The watches.yaml key `dependsOn: {specField, allowCrossNamespace}`; undefined when absent or bad (problems added). */
export function readDependsOn(ctx: YamlContext, field: Field, where: (line: number | undefined) => string, problems: string[]): DependsOnSettings | undefined {
  if (field.value === null) return undefined;
  if (!isMap(field.value)) {
    problems.push(`${where(field.line)}: dependsOn is ${describeNode(field.value)}; expected a map such as dependsOn: {specField: dependsOn}`);
    return undefined;
  }
  const before = problems.length;
  let specField: string | undefined;
  let allowCrossNamespace = false;
  for (const f of fieldsOf(ctx, field.value)) {
    if (f.key === 'specField') {
      const text = f.value !== null && isScalar(f.value) && typeof f.value.value === 'string' ? scalarText(f.value) : undefined;
      if (text === undefined || !SPEC_FIELD.test(text)) problems.push(`${where(f.line)}: dependsOn.specField is ${describeNode(f.value)}; expected the name of a top-level spec field, e.g. dependsOn — CRs list what they depend on there and it is not passed to the chart`);
      else specField = text;
    } else if (f.key === 'allowCrossNamespace') {
      allowCrossNamespace = bool(f, false, (_g, line) => where(line ?? f.line), problems);
    } else {
      problems.push(`${where(f.line)}: dependsOn has the unknown key "${f.key}"; known keys are specField, allowCrossNamespace`);
    }
  }
  if (problems.length > before) return undefined;
  if (specField === undefined) {
    problems.push(`${where(field.line)}: dependsOn.specField is missing; name the spec field in which CRs list what they depend on, e.g. dependsOn: {specField: dependsOn}`);
    return undefined;
  }
  return { specField, allowCrossNamespace };
}
