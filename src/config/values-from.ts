/**
 * `valuesFrom`: the references a CR lists in its spec field and a watches entry lists for the
 * platform, checked, and what the objects they name hold turned into values. Pure: reading the
 * objects is controller/referenced-values.ts. No message here carries a referenced value: only
 * kinds, names, keys and positions.
 */
import { describeValue } from '../lib/describe-value.js';
import { createHash } from 'node:crypto';
import { parseDocument } from 'yaml';
import { canonicalJson, getOwn, isPlainMap, type PlainMap } from '../lib/json.js';
import { deepMerge } from '../lib/deep-merge.js';
import { valuesShapeProblem } from '../core/values-shape.js';
import { ValuesFromReasons, type ReferencedValues, type SplitSpec, type ValuesFromSettings, type ValuesReference, type ValuesSourceKind } from '../core/values-from.js';
import { isDnsLabel, isDnsSubdomain } from './labels.js';
import { parseSetPath, setPath } from './overrides.js';

export const DEFAULT_VALUES_KEY = 'values.yaml';
/** Each reference is a read on every reconcile of its CR; more would only slow them down. */
export const MAX_REFERENCES = 32;
export const REFERENCE_EXAMPLE = '{kind: Secret, name: db-credentials, valuesKey: password, targetPath: db.password}';

const REFERENCE_KEYS: readonly string[] = ['kind', 'name', 'namespace', 'valuesKey', 'targetPath', 'optional'];
const KINDS: Readonly<Record<string, ValuesSourceKind>> = { Secret: 'Secret', ConfigMap: 'ConfigMap' };
/** What the API server accepts as a Secret or ConfigMap data key. */
const DATA_KEY = /^[-._a-zA-Z0-9]{1,253}$/u;

export type ParsedReference = { readonly ok: true; readonly ref: ValuesReference } | { readonly ok: false; readonly problem: string };


/**
 * One reference, as data (a CR's JSON, or a watches entry's YAML as JS); `at` names it in
 * problems (`spec.valuesFrom[0]`). `namespaced`: it may name a namespace (a CR's reference).
 */
export function parseReference(raw: unknown, at: string, namespaced: boolean): ParsedReference {
  const bad = (problem: string): ParsedReference => ({ ok: false, problem });
  if (!isPlainMap(raw)) return bad(`${at} is ${describeValue(raw)}; expected a map such as ${REFERENCE_EXAMPLE}`);
  const allowed = namespaced ? REFERENCE_KEYS : REFERENCE_KEYS.filter((k) => k !== 'namespace');
  const stray = Object.keys(raw).find((k) => !allowed.includes(k));
  if (stray !== undefined) {
    return bad(`${at} has the unknown key "${stray.slice(0, 60)}"; a reference has ${allowed.join(', ')}` + (stray === 'namespace' ? " (the platform's references are read in the operator's namespace)" : ''));
  }
  const kindRaw = getOwn(raw, 'kind');
  const kind = typeof kindRaw === 'string' && Object.hasOwn(KINDS, kindRaw) ? KINDS[kindRaw] : undefined;
  if (kind === undefined) return bad(`${at}.kind is ${describeValue(kindRaw)}; expected Secret or ConfigMap`);
  const name = getOwn(raw, 'name');
  if (typeof name !== 'string' || !isDnsSubdomain(name)) return bad(`${at}.name is ${describeValue(name)}; expected the name of a ${kind} (a lower-case DNS name)`);
  const namespace = getOwn(raw, 'namespace');
  if (namespace !== undefined && (typeof namespace !== 'string' || !isDnsLabel(namespace))) return bad(`${at}.namespace is ${describeValue(namespace)}; expected a namespace name, or leave it out for the resource's own`);
  const valuesKey = getOwn(raw, 'valuesKey') ?? DEFAULT_VALUES_KEY;
  if (typeof valuesKey !== 'string' || !DATA_KEY.test(valuesKey)) return bad(`${at}.valuesKey is ${describeValue(valuesKey)}; expected a data key of the ${kind} (letters, digits, '-', '_' and '.'), default ${DEFAULT_VALUES_KEY}`);
  const targetPath = getOwn(raw, 'targetPath');
  if (targetPath !== undefined) {
    if (typeof targetPath !== 'string') return bad(`${at}.targetPath is ${describeValue(targetPath)}; expected a values path such as db.password`);
    const path = parseSetPath(targetPath);
    if (!path.ok) return bad(`${at}.targetPath ${path.reason}`);
  }
  const optional = getOwn(raw, 'optional') ?? false;
  if (typeof optional !== 'boolean') return bad(`${at}.optional is ${describeValue(optional)}; expected true or false`);
  return { ok: true, ref: { kind, name, ...(typeof namespace === 'string' ? { namespace } : {}), valuesKey, ...(targetPath === undefined ? {} : { targetPath }), optional } };
}

/** The spec without the entry's reference field, and the references listed there. */
export function splitSpec(spec: unknown, settings: ValuesFromSettings): SplitSpec {
  const field = settings.specField;
  // Not a map: nothing to take out; the values check says what is wrong with it.
  if (field === undefined || !isPlainMap(spec)) return { ok: true, spec, references: [] };
  const raw = getOwn(spec, field);
  const rest: PlainMap = {};
  for (const [k, v] of Object.entries(spec)) if (k !== field) Object.defineProperty(rest, k, { value: v, enumerable: true, writable: true, configurable: true });
  if (raw === undefined || raw === null) return { ok: true, spec: rest, references: [] };
  const invalid = (problem: string): SplitSpec => ({ ok: false, reason: ValuesFromReasons.invalid, problem: `${problem}. Nothing is installed or upgraded until it is fixed; the deployed release is left as it is` });
  if (!Array.isArray(raw)) return invalid(`spec.${field} is ${describeValue(raw)}; expected a list of references such as [${REFERENCE_EXAMPLE}]`);
  if (raw.length > MAX_REFERENCES) return invalid(`spec.${field} lists ${String(raw.length)} references; at most ${String(MAX_REFERENCES)} are read`);
  const references: ValuesReference[] = [];
  for (const [i, item] of (raw as unknown[]).entries()) {
    const parsed = parseReference(item, `spec.${field}[${String(i)}]`, true);
    if (!parsed.ok) return invalid(parsed.problem);
    references.push(parsed.ref);
  }
  return { ok: true, spec: rest, references };
}

/** One object to read for a CR: where, as whom, and which side of the spec it lands on. */
export interface PlannedRead {
  readonly ref: ValuesReference;
  readonly namespace: string;
  /** The CR's references are read as its tenant (when the kind has one); the entry's as the operator. */
  readonly asTenant: boolean;
  readonly side: 'below' | 'above';
  /** How problems name it: `spec.valuesFrom[0]` or `the watches entry's valuesFrom.references[0]`. */
  readonly label: string;
}

export type ReadPlan = { readonly ok: true; readonly reads: readonly PlannedRead[] } | { readonly ok: false; readonly reason: string; readonly problem: string; readonly retry: false };

/** What to read for a CR in `namespace`: the CR's references (under the spec), then the entry's (over it). */
export function planReads(namespace: string, operatorNamespace: string, crReferences: readonly ValuesReference[], settings: ValuesFromSettings): ReadPlan {
  const reads: PlannedRead[] = [];
  for (const [i, ref] of crReferences.entries()) {
    const label = `spec.${settings.specField ?? 'valuesFrom'}[${String(i)}]`;
    const at = ref.namespace ?? namespace;
    if (at !== namespace && !settings.allowCrossNamespace) {
      return {
        ok: false,
        reason: ValuesFromReasons.invalid,
        retry: false,
        problem:
          `${label} names ${ref.kind} ${at}/${ref.name}, in another namespace; this kind's watches entry does not allow references across namespaces ` +
          `(valuesFrom.allowCrossNamespace): reference a ${ref.kind} in namespace ${namespace}. Nothing is installed or upgraded until then; the deployed release is left as it is`,
      };
    }
    // Whatever the entry allows: the operator's own Secrets (its seal key first) are never a CR's to read.
    if (at !== namespace && at === operatorNamespace) {
      return {
        ok: false,
        reason: ValuesFromReasons.invalid,
        retry: false,
        problem:
          `${label} names ${ref.kind} ${at}/${ref.name}, in the operator's own namespace, which no custom resource may read from (it holds the operator's keys): ` +
          `have the platform team add it to the watches entry's valuesFrom.references, or copy what you need into namespace ${namespace}. Nothing is installed or upgraded until then; the deployed release is left as it is`,
      };
    }
    reads.push({ ref, namespace: at, asTenant: true, side: 'below', label });
  }
  for (const [i, ref] of settings.references.entries()) {
    reads.push({ ref, namespace: operatorNamespace, asTenant: false, side: 'above', label: `the watches entry's valuesFrom.references[${String(i)}]` });
  }
  return { ok: true, reads };
}

/** What a read found: no such object, its data (text per key), or (unchanged since it was last read) each key's SHA-256 only. */
export type FetchedObject =
  | { readonly found: false }
  | { readonly found: true; readonly data: Readonly<Record<string, string>> }
  | { readonly found: true; readonly hashes: Readonly<Record<string, string>> };

/** SHA-256 of each key's text: what the digest counts of an object. */
export function keyHashes(data: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(data)) Object.defineProperty(out, k, { value: sha256(v), enumerable: true, writable: true, configurable: true });
  return out;
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * Values from what the planned reads found, in order, or the first reference that holds the CR
 * back. An object known by its key hashes only gives the digest, not values (`partial`).
 */
export function composeReferenced(fetched: readonly { readonly read: PlannedRead; readonly object: FetchedObject }[]): ReferencedValues {
  let below: PlainMap = {};
  let above: PlainMap = {};
  let partial = false;
  const digested: unknown[] = [];
  for (const { read, object } of fetched) {
    const { ref } = read;
    const what = `${ref.kind} ${read.namespace}/${ref.name}`;
    const key = ref.valuesKey;
    const present = object.found && ('data' in object ? Object.hasOwn(object.data, key) : Object.hasOwn(object.hashes, key));
    if (!present) {
      if (ref.optional) {
        digested.push([read.label, null]);
        continue;
      }
      const missing = object.found ? `${what} has no key "${ref.valuesKey}"` : `${what} does not exist`;
      return {
        ok: false,
        reason: ValuesFromReasons.notFound,
        retry: false,
        problem: `${missing} (${read.label}): ${object.found ? 'add the key' : `create it`}, or mark the reference optional: true. Nothing is installed or upgraded until then; the deployed release is left as it is`,
      };
    }
    if (!('data' in object)) {
      digested.push([read.label, ref.kind, read.namespace, ref.name, key, object.hashes[key]]);
      partial = true;
      continue;
    }
    const text = object.data[key] ?? '';
    digested.push([read.label, ref.kind, read.namespace, ref.name, key, sha256(text)]);
    let layer: PlainMap;
    if (ref.targetPath !== undefined) {
      const path = parseSetPath(ref.targetPath);
      if (!path.ok) throw new TypeError(`invalid targetPath: ${path.reason}`); // checked when the reference was parsed
      layer = {};
      setPath(layer, path.segments, text);
    } else {
      const parsed = parseValuesText(text, `key "${ref.valuesKey}" of ${what} (${read.label})`);
      if (!parsed.ok) return { ok: false, reason: ValuesFromReasons.invalid, retry: false, problem: `${parsed.problem}. Nothing is installed or upgraded until it is fixed; the deployed release is left as it is` };
      layer = parsed.values;
    }
    if (read.side === 'below') below = deepMerge(below, layer);
    else above = deepMerge(above, layer);
  }
  const digest = sha256(canonicalJson(digested));
  return partial ? { ok: true, below: {}, above: {}, digest, partial } : { ok: true, below, above, digest };
}

/** Drops YAML 1.1's timestamp and binary tags: helm's reader (sigs.k8s.io/yaml into JSON) leaves both as strings. */
const YAML_OPTIONS = {
  version: '1.1',
  customTags: (tags: unknown[]) => tags.filter((t) => !(typeof t === 'object' && t !== null && 'tag' in t && (t.tag === 'tag:yaml.org,2002:timestamp' || t.tag === 'tag:yaml.org,2002:binary'))),
} as const;

/**
 * A key's text as values: YAML (or JSON) whose top level is a map, or empty. Parsed as helm reads
 * a values file (YAML 1.1: `yes` is true); problems give the position, never the text, which may be secret.
 */
export function parseValuesText(text: string, subject: string): { readonly ok: true; readonly values: PlainMap } | { readonly ok: false; readonly problem: string } {
  let value: unknown;
  try {
    const doc = parseDocument(text, YAML_OPTIONS as never);
    const first = doc.errors[0];
    if (first !== undefined) {
      const line = first.linePos?.[0].line;
      return { ok: false, problem: `${subject} is not valid YAML (${first.code}${line === undefined ? '' : ` at line ${String(line)}`}); it must hold values as a YAML map, or use targetPath to take it as one string` };
    }
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    const code = typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : 'too deep or too many aliases';
    return { ok: false, problem: `${subject} cannot be read as YAML (${code}); it must hold values as a YAML map, or use targetPath to take it as one string` };
  }
  if (value === undefined || value === null) return { ok: true, values: {} };
  if (!isPlainMap(value)) return { ok: false, problem: `${subject} holds ${Array.isArray(value) ? 'a list' : `a ${typeof value}`}, not a map of values; use targetPath to take it as one string` };
  const shape = valuesShapeProblem(value, subject);
  if (shape !== undefined) return { ok: false, problem: shape.message };
  return { ok: true, values: value };
}
