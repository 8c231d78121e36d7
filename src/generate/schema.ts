/**
 * A chart's values.schema.json (JSON Schema draft-07, what Helm validates values against) turned
 * into a structural OpenAPI v3 schema, the subset a CRD may carry. Every deviation from the source
 * is either stricter-never (we only ever drop validation, never invent it) or written down in a
 * note, so a user can see what the API server will and will not check.
 *
 * Rules that shape the result (see the Kubernetes "structural schema" documentation):
 * - every node has a `type`, unless it is `x-kubernetes-int-or-string` or preserves unknown fields;
 * - `properties` and `additionalProperties` are mutually exclusive;
 * - inside allOf/anyOf/oneOf/not only value validations may appear, on fields also specified
 *   outside the junctor;
 * - unknown fields are pruned unless a node preserves them.
 *
 * Helm applies values.yaml defaults before it validates, so `required` keys that values.yaml
 * provides are not required in the CR, and schema defaults are never copied (the API server would
 * write them into every CR, while Helm ignores them).
 */
import { isPlainObject } from '../lib/json.js';

export type Schema = Record<string, unknown>;

export interface StructuralResult {
  /** The schema of the CR's `spec`: always `type: object`. */
  readonly schema: Schema;
  /** One line per place where the CRD checks less than values.schema.json does. */
  readonly notes: readonly string[];
}

const PRESERVE = 'x-kubernetes-preserve-unknown-fields';
const INT_OR_STRING = 'x-kubernetes-int-or-string';

/** Thrown where a node has no structural form; the node then accepts anything. */
class Unrepresentable extends Error {}

interface Ctx {
  readonly root: unknown;
  readonly notes: string[];
  /** `$ref`s being expanded right now: meeting one again means the schema is recursive. */
  readonly refStack: string[];
}

/** Keywords that only annotate (or that Helm never applies): dropped without a note. */
const ANNOTATIONS = new Set([
  '$schema', '$id', 'id', '$comment', 'default', 'examples', 'readOnly', 'writeOnly', 'deprecated',
  'contentEncoding', 'contentMediaType', 'definitions', '$defs', 'title', 'description',
]);

/** Keywords this module translates; anything else that validates is reported as dropped. */
const HANDLED = new Set([
  'type', 'enum', 'const', '$ref', 'allOf', 'anyOf', 'oneOf', 'not',
  'properties', 'additionalProperties', 'patternProperties', 'required', 'minProperties', 'maxProperties',
  'items', 'minItems', 'maxItems', 'uniqueItems',
  'minLength', 'maxLength', 'pattern', 'format',
  'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf',
]);

/** Formats whose meaning is the same in JSON Schema and in the API server's validator. */
const STRING_FORMATS = new Set(['date', 'date-time', 'email', 'hostname', 'ipv4', 'ipv6', 'uri', 'uuid']);
const NUMBER_FORMATS: Readonly<Record<string, ReadonlySet<string>>> = {
  integer: new Set(['int32', 'int64']),
  number: new Set(['float', 'double', 'int32', 'int64']),
};

const SCALAR_TYPES = new Set(['string', 'integer', 'number', 'boolean']);
const JSON_TYPES = new Set(['object', 'array', 'string', 'integer', 'number', 'boolean', 'null']);

/**
 * Converts a chart's values schema to the structural schema of a CR's `spec`. `defaults` is the
 * chart's parsed values.yaml (keys it sets are not required in the CR).
 */
export function structuralSpecSchema(source: unknown, defaults: unknown): StructuralResult {
  const ctx: Ctx = { root: source, notes: [], refStack: ['#'] };
  const converted = convert(source, 'spec', defaults, ctx);
  let schema: Schema;
  if (converted === undefined) {
    ctx.notes.push('spec: the schema allows no value at all (false); the CRD accepts any object instead');
    schema = anything();
  } else {
    schema = converted;
  }
  if (schema['type'] !== 'object') {
    if (schema['type'] !== undefined || schema[INT_OR_STRING] === true) {
      ctx.notes.push(`spec: the schema's root is not an object (${describeType(schema)}); Helm values always are, so the CRD accepts any object`);
    }
    schema = { ...pick(schema, ['description']), type: 'object', [PRESERVE]: true };
  }
  return { schema, notes: ctx.notes };
}

function anything(description?: unknown): Schema {
  return typeof description === 'string' ? { description, [PRESERVE]: true } : { [PRESERVE]: true };
}

/** Converts one node; undefined when the node is `false` (no value allowed: the field is pruned). */
function convert(node: unknown, path: string, defaults: unknown, ctx: Ctx): Schema | undefined {
  if (node === true) return anything();
  if (node === false) return undefined;
  if (!isPlainObject(node)) {
    ctx.notes.push(`${path}: not a schema (${JSON.stringify(node)}); any value accepted`);
    return anything();
  }
  try {
    if (typeof node['$ref'] === 'string') return convertRef(node, node['$ref'], path, defaults, ctx);
    return convertObject(flattenAllOf(node, ctx, new Set()), path, defaults, ctx);
  } catch (err) {
    if (!(err instanceof Unrepresentable)) throw err;
    ctx.notes.push(`${path}: ${err.message}; any value accepted`);
    return anything(node['description']);
  }
}

function convertRef(node: Schema, ref: string, path: string, defaults: unknown, ctx: Ctx): Schema | undefined {
  if (ctx.refStack.includes(ref)) throw new Unrepresentable(`$ref "${ref}" is recursive, which a CRD schema cannot express`);
  const target = resolveRef(ctx.root, ref);
  ctx.refStack.push(ref);
  try {
    // draft-07 ignores a $ref's siblings; the description still says something about this use.
    const merged = isPlainObject(target) && typeof node['description'] === 'string' ? { ...target, description: node['description'] } : target;
    return convert(merged, path, defaults, ctx);
  } finally {
    ctx.refStack.pop();
  }
}

/** Resolves a local JSON pointer (`#/definitions/port`); anything else has no place in a CRD. */
function resolveRef(root: unknown, ref: string): unknown {
  if (!ref.startsWith('#')) throw new Unrepresentable(`$ref "${ref}" points outside values.schema.json`);
  let cur: unknown = root;
  const tokens = ref === '#' || ref === '#/' ? [] : ref.slice(2).split('/');
  if (ref !== '#' && !ref.startsWith('#/')) throw new Unrepresentable(`$ref "${ref}" is not a JSON pointer`);
  for (const raw of tokens) {
    const token = decodeURIComponent(raw).replace(/~1/gu, '/').replace(/~0/gu, '~');
    if (Array.isArray(cur) && /^\d+$/u.test(token)) cur = cur[Number(token)];
    else if (isPlainObject(cur) && Object.hasOwn(cur, token)) cur = cur[token];
    else throw new Unrepresentable(`$ref "${ref}" points at nothing`);
  }
  return cur;
}

function deref(node: unknown, ctx: Ctx, seen: Set<string>): unknown {
  let cur = node;
  while (isPlainObject(cur) && typeof cur['$ref'] === 'string') {
    const ref = cur['$ref'];
    if (seen.has(ref) || ctx.refStack.includes(ref)) throw new Unrepresentable(`$ref "${ref}" is recursive, which a CRD schema cannot express`);
    seen.add(ref);
    cur = resolveRef(ctx.root, ref);
  }
  return cur;
}

/** Folds `allOf` into its parent: an object satisfying all branches satisfies their merge. */
function flattenAllOf(node: Schema, ctx: Ctx, seen: Set<string>): Schema {
  const allOf = node['allOf'];
  if (allOf === undefined) return node;
  if (!Array.isArray(allOf)) throw new Unrepresentable('allOf is not a list');
  const { allOf: _drop, ...rest } = node;
  let acc: Schema = rest;
  for (const raw of allOf) {
    const branch = deref(raw, ctx, seen);
    if (branch === true) continue;
    if (branch === false) throw new Unrepresentable('allOf has a branch that allows nothing');
    if (!isPlainObject(branch)) throw new Unrepresentable('allOf has a branch that is not a schema');
    acc = mergeSchemas(acc, flattenAllOf(branch, ctx, seen), ctx);
  }
  return acc;
}

const LOWER_BOUNDS = ['minimum', 'exclusiveMinimum', 'minLength', 'minItems', 'minProperties'];
const UPPER_BOUNDS = ['maximum', 'exclusiveMaximum', 'maxLength', 'maxItems', 'maxProperties'];

/** The schema both `a` and `b` describe (their intersection), as far as draft-07 lets us say. */
function mergeSchemas(a: Schema, b: Schema, ctx: Ctx): Schema {
  const out: Schema = { ...a };
  for (const [key, bv] of Object.entries(b)) {
    const av = out[key];
    if (av === undefined) {
      out[key] = bv;
      continue;
    }
    if (key === 'type') {
      const types = intersectTypes(typeList(av), typeList(bv));
      if (types.length === 0) throw new Unrepresentable(`allOf branches require different types (${JSON.stringify(av)} and ${JSON.stringify(bv)})`);
      out[key] = types.length === 1 ? types[0] : types;
    } else if (key === 'properties' && isPlainObject(av) && isPlainObject(bv)) {
      const props: Schema = { ...av };
      for (const [p, ps] of Object.entries(bv)) props[p] = props[p] === undefined ? ps : { allOf: [props[p], ps] };
      out[key] = props;
    } else if (key === 'required' && Array.isArray(av) && Array.isArray(bv)) {
      out[key] = [...new Set<unknown>([...(av as unknown[]), ...(bv as unknown[])])];
    } else if (key === 'enum' && Array.isArray(av) && Array.isArray(bv)) {
      const keep = new Set(bv.map((v) => JSON.stringify(v)));
      out[key] = av.filter((v) => keep.has(JSON.stringify(v)));
    } else if (LOWER_BOUNDS.includes(key) && typeof av === 'number' && typeof bv === 'number') {
      out[key] = Math.max(av, bv);
    } else if (UPPER_BOUNDS.includes(key) && typeof av === 'number' && typeof bv === 'number') {
      out[key] = Math.min(av, bv);
    } else if (key === 'additionalProperties' || key === 'items') {
      if (av === false || bv === false) out[key] = false;
      else if (av === true) out[key] = bv;
      else if (bv !== true) out[key] = { allOf: [av, bv] };
    } else if (ANNOTATIONS.has(key)) {
      // first one wins: descriptions of the parent come before those of its parts
    } else if (JSON.stringify(av) !== JSON.stringify(bv)) {
      ctx.notes.push(`allOf: two branches both set "${key}"; only the first is checked`);
    }
  }
  return out;
}

function typeList(v: unknown): string[] {
  if (typeof v === 'string') return [v];
  if (Array.isArray(v)) return v.filter((t): t is string => typeof t === 'string');
  return [];
}

function intersectTypes(a: readonly string[], b: readonly string[]): string[] {
  const out = new Set<string>();
  for (const t of a) {
    if (b.includes(t)) out.add(t);
    // every integer is a number
    else if (t === 'integer' && b.includes('number')) out.add('integer');
    else if (t === 'number' && b.includes('integer')) out.add('integer');
  }
  return [...out];
}

type NodeType = 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean' | 'int-or-string' | 'any';

function convertObject(node: Schema, path: string, defaults: unknown, ctx: Ctx): Schema {
  let nullable = false;
  let types: string[] | undefined;
  if (node['type'] !== undefined) {
    types = typeList(node['type']);
    const unknown = types.filter((t) => !JSON_TYPES.has(t));
    if (unknown.length > 0 || types.length === 0) throw new Unrepresentable(`unknown type ${JSON.stringify(node['type'])}`);
  }
  let enumValues = Array.isArray(node['enum']) ? [...(node['enum'] as unknown[])] : undefined;
  if (node['const'] !== undefined) enumValues = enumValues === undefined ? [node['const']] : enumValues.filter((v) => JSON.stringify(v) === JSON.stringify(node['const']));
  if (types?.includes('null') === true) {
    nullable = true;
    types = types.filter((t) => t !== 'null');
    if (types.length === 0) throw new Unrepresentable('type "null" alone has no structural form');
  }
  if (enumValues?.includes(null) === true) nullable = true;

  // anyOf/oneOf: recognise the shapes with a structural meaning before giving up on them.
  const junctors: { key: 'anyOf' | 'oneOf'; branches: unknown[] }[] = [];
  let extra: Schema | undefined;
  for (const key of ['anyOf', 'oneOf'] as const) {
    const raw = node[key];
    if (raw === undefined) continue;
    if (!Array.isArray(raw)) throw new Unrepresentable(`${key} is not a list`);
    let branches = raw.map((b) => deref(b, ctx, new Set()));
    if (branches.some((b) => b === true)) continue; // one branch allows everything: no constraint
    const isNull = (b: unknown): boolean => isPlainObject(b) && b['type'] === 'null' && Object.keys(b).every((k) => k === 'type' || ANNOTATIONS.has(k));
    if (branches.some(isNull)) {
      nullable = true;
      branches = branches.filter((b) => !isNull(b));
    }
    const branchTypes = branches.map((b) => (isPlainObject(b) && typeof b['type'] === 'string' ? b['type'] : undefined));
    const typeSet = new Set(branchTypes);
    if (branches.length === 0) continue;
    if (typeSet.size === 2 && typeSet.has('integer') && typeSet.has('string') && (types === undefined || sameSet(types, ['integer', 'string']))) {
      types = ['integer', 'string'];
      if (branches.some((b) => isPlainObject(b) && Object.keys(b).some((k) => k !== 'type' && !ANNOTATIONS.has(k)))) {
        ctx.notes.push(`${path}: the integer/string alternatives carry more checks than "integer or string"; only that is checked`);
      }
      continue;
    }
    if (branches.length === 1 && isPlainObject(branches[0])) {
      // A single remaining alternative (typically "X or null") is simply X.
      extra = extra === undefined ? branches[0] : mergeSchemas(extra, branches[0], ctx);
      continue;
    }
    junctors.push({ key, branches });
  }
  if (extra !== undefined) {
    const { anyOf: _a, oneOf: _o, ...rest } = node;
    const merged = mergeSchemas(rest, flattenAllOf(extra, ctx, new Set()), ctx);
    for (const j of junctors) merged[j.key] = j.branches;
    if (types !== undefined && merged['type'] === undefined) merged['type'] = types;
    return withNullable(convertObject(merged, path, defaults, ctx), nullable);
  }

  const kind = nodeType(node, types, enumValues, junctors, ctx, path);
  if (kind === 'any') {
    return anything(node['description']);
  }
  const out: Schema = {};
  if (typeof node['description'] === 'string') out['description'] = node['description'];
  if (kind === 'int-or-string') out[INT_OR_STRING] = true;
  else out['type'] = kind;
  if (nullable) out['nullable'] = true;
  if (enumValues !== undefined) out['enum'] = enumValues;

  switch (kind) {
    case 'object':
      convertObjectFields(node, out, path, defaults, ctx);
      break;
    case 'array':
      convertArrayFields(node, out, path, ctx);
      break;
    case 'string':
      convertStringFields(node, out, path, ctx);
      break;
    case 'integer':
    case 'number':
      convertNumberFields(node, out, kind, path, ctx);
      break;
    default:
      break;
  }

  // Keep alternatives made only of value checks on fields this node already specifies.
  for (const j of junctors) {
    const kept = j.branches.map((b) => pureBranch(b, out, defaults, ctx));
    if (kept.every((b) => b !== undefined)) out[j.key] = kept;
    else ctx.notes.push(`${path}: ${j.key} alternatives that change the shape of the value cannot be checked by a CRD; dropped`);
  }
  if (node['not'] !== undefined) {
    // No defaults for `not`: a default that satisfies a required key would make it stricter.
    const not = pureBranch(deref(node['not'], ctx, new Set()), out, undefined, ctx);
    if (not !== undefined) out['not'] = not;
    else ctx.notes.push(`${path}: "not" with more than value checks cannot be checked by a CRD; dropped`);
  }

  const dropped = Object.keys(node).filter((k) => !HANDLED.has(k) && !ANNOTATIONS.has(k) && !k.startsWith('x-'));
  if (dropped.length > 0) ctx.notes.push(`${path}: ${dropped.sort().join(', ')} not supported by CRD schemas; not checked`);
  return out;
}

function withNullable(s: Schema, nullable: boolean): Schema {
  return nullable && s[PRESERVE] !== true ? { ...s, nullable: true } : s;
}

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x) => b.includes(x));
}

function describeType(s: Schema): string {
  return s[INT_OR_STRING] === true ? 'integer or string' : String(s['type']);
}

/** The structural type of a node, inferring it from the keywords when `type` is absent. */
function nodeType(
  node: Schema,
  types: string[] | undefined,
  enumValues: unknown[] | undefined,
  junctors: readonly { branches: unknown[] }[],
  ctx: Ctx,
  path: string,
): NodeType {
  if (types !== undefined) {
    const set = new Set(types.map((t) => (t === 'integer' && types.includes('number') ? 'number' : t)));
    if (set.size === 1) return [...set][0] as NodeType;
    if (set.size === 2 && set.has('integer') && set.has('string')) return 'int-or-string';
    ctx.notes.push(`${path}: a value of type ${types.join(' or ')} has no CRD equivalent; any value accepted`);
    return 'any';
  }
  if (['properties', 'additionalProperties', 'patternProperties', 'required', 'minProperties', 'maxProperties'].some((k) => node[k] !== undefined)) return 'object';
  if (['items', 'minItems', 'maxItems', 'uniqueItems'].some((k) => node[k] !== undefined)) return 'array';
  if (enumValues !== undefined && enumValues.length > 0) {
    const kinds = new Set(enumValues.filter((v) => v !== null).map(jsonType));
    if (kinds.size === 1) return [...kinds][0] as NodeType;
  }
  // Same-typed alternatives without a type of their own: the type is theirs.
  if (junctors.length > 0) {
    const branchTypes = new Set(junctors.flatMap((j) => j.branches.map((b) => (isPlainObject(b) ? b['type'] : undefined))));
    if (branchTypes.size === 1) {
      const t = [...branchTypes][0];
      if (typeof t === 'string' && SCALAR_TYPES.has(t)) return t as NodeType;
    }
  }
  if (junctors.length > 0) {
    ctx.notes.push(`${path}: alternatives (anyOf/oneOf) of different types have no CRD equivalent; any value accepted`);
    return 'any';
  }
  // String or number checks without a type only apply to values of that type (draft-07): the
  // node accepts anything else too, which only "any value" expresses.
  const checks = Object.keys(node).filter((k) => HANDLED.has(k) && k !== 'type' && k !== 'not' && k !== '$ref');
  if (checks.length > 0) ctx.notes.push(`${path}: ${checks.sort().join(', ')} without a type; any value accepted`);
  return 'any';
}

function jsonType(v: unknown): string {
  if (typeof v === 'string') return 'string';
  if (typeof v === 'boolean') return 'boolean';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  if (Array.isArray(v)) return 'array';
  return 'object';
}

function convertObjectFields(node: Schema, out: Schema, path: string, defaults: unknown, ctx: Ctx): void {
  const props = node['properties'];
  const defaultsObj = isPlainObject(defaults) ? defaults : undefined;
  let hasProps = false;
  if (isPlainObject(props)) {
    const converted: Schema = {};
    for (const [name, sub] of Object.entries(props)) {
      const c = convert(sub, `${path}.${name}`, defaultsObj?.[name], ctx);
      // `false`: the key must be absent; without a schema for it, pruning removes it.
      if (c !== undefined) converted[name] = c;
    }
    if (Object.keys(converted).length > 0) {
      out['properties'] = converted;
      hasProps = true;
    }
  }

  const ap = node['additionalProperties'];
  const pattern = node['patternProperties'];
  if (pattern !== undefined) {
    ctx.notes.push(`${path}: patternProperties cannot be checked by a CRD; keys not listed in properties are kept unchecked`);
    out[PRESERVE] = true;
  } else if (ap === false) {
    // Unknown keys are pruned by the API server (and rejected by `kubectl apply`, whose field
    // validation is strict): the closest a structural schema gets to "no other keys".
  } else if (ap === undefined || ap === true || (isPlainObject(ap) && Object.keys(ap).length === 0)) {
    // JSON Schema allows keys it does not list, and Helm passes them to the templates.
    out[PRESERVE] = true;
  } else if (hasProps) {
    ctx.notes.push(`${path}: keys beyond the listed properties are kept but not checked (a CRD schema cannot have both properties and additionalProperties)`);
    out[PRESERVE] = true;
  } else {
    const c = convert(ap, `${path}.*`, undefined, ctx);
    if (c !== undefined) out['additionalProperties'] = c;
  }

  const required = node['required'];
  if (Array.isArray(required)) {
    // Helm checks `required` after merging values.yaml: keys it provides need not be in the CR.
    const keep = required.filter((k): k is string => typeof k === 'string' && !hasValue(defaultsObj, k));
    if (keep.length > 0) out['required'] = keep;
  }
  if (typeof node['minProperties'] === 'number' && (defaultsObj === undefined || Object.keys(defaultsObj).length === 0)) {
    out['minProperties'] = node['minProperties'];
  }
  if (typeof node['maxProperties'] === 'number') out['maxProperties'] = node['maxProperties'];
}

function hasValue(obj: Record<string, unknown> | undefined, key: string): boolean {
  return obj !== undefined && obj[key] !== undefined && obj[key] !== null;
}

function convertArrayFields(node: Schema, out: Schema, path: string, ctx: Ctx): void {
  const items = node['items'];
  let converted: Schema | undefined;
  if (Array.isArray(items)) {
    ctx.notes.push(`${path}: per-position items (tuples) cannot be checked by a CRD; items accept any value`);
  } else if (items !== undefined) {
    converted = convert(items, `${path}[]`, undefined, ctx);
    if (converted === undefined) ctx.notes.push(`${path}: items allow nothing (false); items accept any value instead`);
  }
  // A structural array must say what its items are.
  out['items'] = converted ?? anything();
  if (typeof node['minItems'] === 'number') out['minItems'] = node['minItems'];
  if (typeof node['maxItems'] === 'number') out['maxItems'] = node['maxItems'];
  if (node['uniqueItems'] === true) {
    // The API server forbids uniqueItems (quadratic); a set list type checks the same for scalars.
    const t = converted?.['type'];
    if (typeof t === 'string' && SCALAR_TYPES.has(t) && converted?.['nullable'] !== true) out['x-kubernetes-list-type'] = 'set';
    else ctx.notes.push(`${path}: uniqueItems on non-scalar items cannot be checked by a CRD; not checked`);
  }
}

function convertStringFields(node: Schema, out: Schema, path: string, ctx: Ctx): void {
  if (typeof node['minLength'] === 'number') out['minLength'] = node['minLength'];
  if (typeof node['maxLength'] === 'number') out['maxLength'] = node['maxLength'];
  if (typeof node['pattern'] === 'string') {
    const p = toRe2(node['pattern']);
    if (p === undefined) ctx.notes.push(`${path}: pattern ${JSON.stringify(node['pattern'])} uses regular expression features the API server lacks (RE2); not checked`);
    else out['pattern'] = p;
  }
  const format = node['format'];
  if (typeof format === 'string') {
    if (STRING_FORMATS.has(format)) out['format'] = format;
    else ctx.notes.push(`${path}: format "${format}" means something else (or nothing) to the API server; not checked`);
  }
}

function convertNumberFields(node: Schema, out: Schema, kind: 'integer' | 'number', path: string, ctx: Ctx): void {
  if (typeof node['minimum'] === 'number') out['minimum'] = node['minimum'];
  if (typeof node['maximum'] === 'number') out['maximum'] = node['maximum'];
  // draft-07's exclusive bounds are numbers; OpenAPI v3.0's are flags on minimum/maximum.
  const exMin = node['exclusiveMinimum'];
  if (typeof exMin === 'number' && (typeof out['minimum'] !== 'number' || exMin >= out['minimum'])) {
    out['minimum'] = exMin;
    out['exclusiveMinimum'] = true;
  } else if (exMin === true && typeof out['minimum'] === 'number') {
    out['exclusiveMinimum'] = true;
  }
  const exMax = node['exclusiveMaximum'];
  if (typeof exMax === 'number' && (typeof out['maximum'] !== 'number' || exMax <= out['maximum'])) {
    out['maximum'] = exMax;
    out['exclusiveMaximum'] = true;
  } else if (exMax === true && typeof out['maximum'] === 'number') {
    out['exclusiveMaximum'] = true;
  }
  if (typeof node['multipleOf'] === 'number' && node['multipleOf'] > 0) out['multipleOf'] = node['multipleOf'];
  const format = node['format'];
  if (typeof format === 'string') {
    if (NUMBER_FORMATS[kind]?.has(format) === true) out['format'] = format;
    else ctx.notes.push(`${path}: format "${format}" is not a ${kind} format the API server knows; not checked`);
  }
}

/** Value checks a junctor branch may hold (no types, descriptions, defaults or new fields). */
const PURE_KEYS = new Set([
  'required', 'enum', 'const', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf',
  'minLength', 'maxLength', 'pattern', 'format', 'minItems', 'maxItems', 'minProperties', 'maxProperties',
  'properties', 'items', 'not', 'anyOf', 'oneOf', 'allOf',
]);

/**
 * A junctor branch in structural form, or undefined when it would need more than value checks on
 * fields `parent` already specifies (structural rule: junctors may not introduce fields or types).
 */
function pureBranch(branch: unknown, parent: Schema, defaults: unknown, ctx: Ctx): Schema | undefined {
  if (!isPlainObject(branch)) return undefined;
  const out: Schema = {};
  const defaultsObj = isPlainObject(defaults) ? defaults : undefined;
  for (const [key, value] of Object.entries(branch)) {
    if (ANNOTATIONS.has(key)) continue;
    // Restating the parent's type changes nothing, and structural junctors may not carry one.
    if (key === 'type' && value === parent['type']) continue;
    if (!PURE_KEYS.has(key)) return undefined;
    switch (key) {
      case 'required': {
        if (!Array.isArray(value)) return undefined;
        // As outside junctors: Helm checks after merging values.yaml.
        const keep = value.filter((k): k is string => typeof k === 'string' && !hasValue(defaultsObj, k));
        if (keep.length > 0) out[key] = keep;
        break;
      }
      case 'const':
        out['enum'] = [value];
        break;
      case 'exclusiveMinimum':
      case 'exclusiveMaximum': {
        if (typeof value !== 'number') return undefined;
        const bound = key === 'exclusiveMinimum' ? 'minimum' : 'maximum';
        if (branch[bound] !== undefined) return undefined;
        out[bound] = value;
        out[key] = true;
        break;
      }
      case 'pattern': {
        const p = typeof value === 'string' ? toRe2(value) : undefined;
        if (p === undefined) return undefined;
        out[key] = p;
        break;
      }
      case 'format':
        if (typeof value !== 'string' || !(STRING_FORMATS.has(value) || parent['format'] === value)) return undefined;
        out[key] = value;
        break;
      case 'properties': {
        const parentProps = parent['properties'];
        if (!isPlainObject(value) || !isPlainObject(parentProps)) return undefined;
        const props: Schema = {};
        for (const [name, sub] of Object.entries(value)) {
          const parentSub = parentProps[name];
          if (!isPlainObject(parentSub)) return undefined;
          const p = pureBranch(deref(sub, ctx, new Set()), parentSub, defaultsObj?.[name], ctx);
          if (p === undefined) return undefined;
          props[name] = p;
        }
        out[key] = props;
        break;
      }
      case 'items': {
        const parentItems = parent['items'];
        if (!isPlainObject(parentItems)) return undefined;
        const p = pureBranch(deref(value, ctx, new Set()), parentItems, undefined, ctx);
        if (p === undefined) return undefined;
        out[key] = p;
        break;
      }
      case 'not': {
        const p = pureBranch(deref(value, ctx, new Set()), parent, undefined, ctx);
        if (p === undefined) return undefined;
        out[key] = p;
        break;
      }
      case 'anyOf':
      case 'oneOf':
      case 'allOf': {
        if (!Array.isArray(value)) return undefined;
        const list = value.map((b) => pureBranch(deref(b, ctx, new Set()), parent, defaults, ctx));
        if (list.some((b) => b === undefined)) return undefined;
        out[key] = list;
        break;
      }
      default:
        out[key] = value;
    }
  }
  return out;
}

/**
 * The pattern in the RE2 syntax the API server compiles, or undefined when it uses ECMA-262
 * features RE2 lacks (lookaround, backreferences); `\uXXXX` is rewritten to RE2's `\x{XXXX}`.
 */
export function toRe2(pattern: string): string | undefined {
  if (/\(\?[=!]|\(\?<[=!]|\(\?>/u.test(pattern)) return undefined; // lookaround, atomic groups
  if (/(^|[^\\])(\\\\)*\\([1-9]|k<|c[A-Za-z])/u.test(pattern)) return undefined; // backreferences, control escapes
  try {
    // Must at least be a valid ECMA regex: JSON Schema says so, and Helm would have failed on it.
    new RegExp(pattern, 'u');
  } catch {
    try {
      new RegExp(pattern);
    } catch {
      return undefined;
    }
  }
  return pattern.replace(/(^|[^\\])((?:\\\\)*)\\u(?:\{([0-9A-Fa-f]{1,6})\}|([0-9A-Fa-f]{4}))/gu, (_m, pre: string, slashes: string, braced: string | undefined, plain: string | undefined) => `${pre}${slashes}\\x{${braced ?? plain ?? ''}}`);
}

function pick(s: Schema, keys: readonly string[]): Schema {
  const out: Schema = {};
  for (const k of keys) if (s[k] !== undefined) out[k] = s[k];
  return out;
}
