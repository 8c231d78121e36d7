/**
 * A CR spec's structural schema from a role's argument specs (Ansible's
 * `argument_specs: {main: {options: {name: {type, required, default, description, choices,
 * elements, options}}}}`), and the sample spec its defaults make. Property names are the spec keys
 * that ansible-operator turns into the role's variables (camelCase when `snakeCaseParameters`,
 * see config/paramconv.ts). Pure.
 *
 * Defaults are not copied into the schema (as for charts): the role applies its own when a key is
 * left out, and a default the API server stored in every CR would outlive a change of the role's.
 * The CRD says so in each description instead.
 */
import { isPlainObject } from '../lib/json.js';
import { specKeyFor, toSnake } from '../config/paramconv.js';
import type { Schema } from './schema.js';

const PRESERVE = 'x-kubernetes-preserve-unknown-fields';

export interface ArgSpecResult {
  readonly schema: Schema;
  /** Where the CRD checks less than the role's argument specs, one line each. */
  readonly notes: string[];
}

interface Ctx {
  readonly snakeCase: boolean;
  readonly notes: string[];
}

// Checks Ansible runs that a structural schema does not express: the role's own validation still does.
const UNCHECKED_KEYS = ['mutually_exclusive', 'required_together', 'required_one_of', 'required_if', 'required_by'] as const;

/** The open spec schema: any values (a role without argument specs, or a playbook). */
export function openSpecSchema(description: string): Schema {
  return { description, type: 'object', [PRESERVE]: true };
}

/** The schema of `spec` from an entry point's spec (`argument_specs.main`). */
export function argumentSpecSchema(entryPoint: unknown, snakeCaseParameters: boolean): ArgSpecResult {
  const ctx: Ctx = { snakeCase: snakeCaseParameters, notes: [] };
  const ep = isPlainObject(entryPoint) ? entryPoint : {};
  uncheckedRules(ep, 'spec', ctx);
  const object = optionsObject(ep['options'], 'spec', ctx);
  const summary = [text(ep['short_description']), text(ep['description'])].filter((t) => t !== '').join(' ');
  return { schema: { ...(summary === '' ? {} : { description: summary }), ...object }, notes: ctx.notes };
}

function text(v: unknown): string {
  if (typeof v === 'string') return v.trim();
  if (Array.isArray(v)) return v.filter((x): x is string => typeof x === 'string').map((x) => x.trim()).join(' ');
  return '';
}

function uncheckedRules(spec: Record<string, unknown>, path: string, ctx: Ctx): void {
  const present = UNCHECKED_KEYS.filter((k) => spec[k] !== undefined);
  if (present.length > 0) ctx.notes.push(`${path}: ${present.join(', ')} not checked by the CRD (the role's argument validation checks them when it runs)`);
}

/** `options: {...}` → an object schema with properties under their spec keys. */
function optionsObject(options: unknown, path: string, ctx: Ctx): Schema {
  if (!isPlainObject(options) || Object.keys(options).length === 0) return { type: 'object', [PRESERVE]: true };
  const properties: Record<string, Schema> = {};
  const required: string[] = [];
  for (const [name, raw] of Object.entries(options)) {
    const key = specKeyFor(name, ctx.snakeCase);
    if (!key.ok) {
      ctx.notes.push(`${path}.${name}: left out: ${key.why}`);
      continue;
    }
    if (properties[key.key] !== undefined) {
      ctx.notes.push(`${path}.${name}: left out: its spec key ${key.key} is another option's too; rename one of them`);
      continue;
    }
    const opt = isPlainObject(raw) ? raw : {};
    properties[key.key] = optionSchema(opt, `${path}.${key.key}`, ctx);
    if (opt['required'] === true) required.push(key.key);
  }
  return { type: 'object', properties, ...(required.length > 0 ? { required: required.sort() } : {}) };
}

function optionSchema(opt: Record<string, unknown>, path: string, ctx: Ctx): Schema {
  uncheckedRules(opt, path, ctx);
  const type = typeof opt['type'] === 'string' ? opt['type'] : 'str';
  const schema = typedSchema(type, opt, path, ctx);
  const choices = opt['choices'];
  if (Array.isArray(choices) && choices.length > 0) {
    // For a list, Ansible checks every element against the choices.
    const target = type === 'list' ? (isPlainObject(schema['items']) ? schema['items'] : undefined) : schema;
    const values = target === undefined ? undefined : enumValues(choices, target['type']);
    if (target !== undefined && values !== undefined) target['enum'] = values;
    else ctx.notes.push(`${path}: choices ${JSON.stringify(choices)} not checked by the CRD (they do not all fit type ${type})`);
  }
  const aliases = Array.isArray(opt['aliases']) ? opt['aliases'].filter((a): a is string => typeof a === 'string') : [];
  if (aliases.length > 0) ctx.notes.push(`${path}: aliases ${aliases.join(', ')} are not in the CRD (keys it does not know are pruned); use ${path.split('.').at(-1) ?? ''}`);
  const parts = [text(opt['description'])];
  if (opt['default'] !== undefined) parts.push(`Default (the role's): ${JSON.stringify(opt['default'])}.`);
  const description = parts.filter((p) => p !== '').join(' ');
  return description === '' ? schema : { description, ...schema };
}

/** The choices as enum values of the schema's type; undefined when one does not fit. */
function enumValues(choices: readonly unknown[], type: unknown): unknown[] | undefined {
  switch (type) {
    case 'string':
      // Ansible compares the converted value: a choice of 1 for a str option is "1".
      return choices.every((c) => ['string', 'number', 'boolean'].includes(typeof c)) ? choices.map((c) => String(c)) : undefined;
    case 'integer':
      return choices.every((c) => Number.isSafeInteger(c)) ? [...choices] : undefined;
    case 'number':
      return choices.every((c) => typeof c === 'number') ? [...choices] : undefined;
    case 'boolean':
      return choices.every((c) => typeof c === 'boolean') ? [...choices] : undefined;
    default:
      return undefined;
  }
}

function typedSchema(type: string, opt: Record<string, unknown>, path: string, ctx: Ctx): Schema {
  switch (type) {
    case 'str':
    case 'path':
      return { type: 'string' };
    case 'int':
      return { type: 'integer' };
    case 'float':
      return { type: 'number' };
    case 'bool':
      return { type: 'boolean' };
    case 'bytes':
    case 'bits':
      // A size such as 1048576 or "1M".
      return { 'x-kubernetes-int-or-string': true };
    case 'list': {
      const elements = typeof opt['elements'] === 'string' ? opt['elements'] : undefined;
      const items = elements === undefined ? { [PRESERVE]: true } : typedSchema(elements, opt, `${path}[]`, ctx);
      return { type: 'array', items };
    }
    case 'dict': {
      if (isPlainObject(opt['options']) && Object.keys(opt['options']).length > 0) return optionsObject(opt['options'], path, ctx);
      if (ctx.snakeCase) ctx.notes.push(`${path}: a free-form map: ansible-operator passes its keys snake_cased too (fooBar arrives as foo_bar)`);
      return { type: 'object', [PRESERVE]: true };
    }
    case 'raw':
    case 'json':
    case 'jsonarg':
      return { [PRESERVE]: true };
    default:
      ctx.notes.push(`${path}: type ${type} is not one chartpilot knows; any value is accepted`);
      return { [PRESERVE]: true };
  }
}

/**
 * The sample spec: every option with a default, under its spec key (nested options too). Options
 * without a default stay out; required ones are named in `missing` for the sample's comment.
 */
export function argumentSpecSample(entryPoint: unknown, snakeCaseParameters: boolean): { spec: Record<string, unknown>; missing: string[] } {
  const missing: string[] = [];
  const ep = isPlainObject(entryPoint) ? entryPoint : {};
  return { spec: sampleOf(ep['options'], '', snakeCaseParameters, missing), missing };
}

function sampleOf(options: unknown, prefix: string, snakeCase: boolean, missing: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!isPlainObject(options)) return out;
  for (const [name, raw] of Object.entries(options)) {
    const key = specKeyFor(name, snakeCase);
    if (!key.ok || !isPlainObject(raw)) continue;
    if (raw['default'] !== undefined) out[key.key] = snakeCase ? camelKeys(raw['default']) : raw['default'];
    else if (raw['type'] === 'dict' && isPlainObject(raw['options'])) {
      const inner: string[] = [];
      const nested = sampleOf(raw['options'], `${prefix}${key.key}.`, snakeCase, inner);
      // An optional map is shown only when its defaults make it valid on their own.
      if (raw['required'] === true) {
        if (Object.keys(nested).length > 0) out[key.key] = nested;
        missing.push(...(inner.length > 0 || Object.keys(nested).length > 0 ? inner : [`${prefix}${key.key}`]));
      } else if (inner.length === 0 && Object.keys(nested).length > 0) out[key.key] = nested;
    } else if (raw['required'] === true) missing.push(`${prefix}${key.key}`);
  }
  return out;
}

/**
 * A default value as a CR would hold it: keys inside are passed through ToSnake too, so keys that
 * ToSnake leaves alone stay; others (e.g. `fooBar`) cannot round-trip and are kept as written.
 */
function camelKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(camelKeys);
  if (!isPlainObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    const key = specKeyFor(k, true);
    out[key.ok && toSnake(key.key) === k ? key.key : k] = camelKeys(v);
  }
  return out;
}
