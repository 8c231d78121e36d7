/**
 * The watches keys `outputs` and `readyWhen`: CEL expressions over the release's objects and the CR,
 * parsed and type-checked at start (a bad one is one line naming the entry and its line), and
 * compiled into a StatusProgram that evaluates them with a bound on cost and never reads Secret data.
 *
 * The CEL implementation is @marcbachmann/cel-js: it has a type checker and structural limits,
 * which a start-up check needs (see docs/guides/outputs.md for the conformance cases it passes and
 * the ones it does not).
 */
import { Environment } from '@marcbachmann/cel-js';
import type { ASTNode } from '@marcbachmann/cel-js';
import { isMap, isScalar } from 'yaml';
import {
  OUTPUT_TYPES,
  READY_WHEN,
  type OutputDeclaration,
  type OutputType,
  type OutputValue,
  type ReleaseObject,
  type StatusExpressions,
  type StatusInput,
  type StatusProgram,
  type StatusVerdict,
  type Unresolved,
} from '../core/outputs.js';
import { bool, describeNode, fieldsOf, scalarText, type Field, type YamlContext } from './yaml-nodes.js';

/** Enough for any status a user reads; each is evaluated on every pass. */
export const MAX_OUTPUTS = 32;
/** A URL, a host, a name: enough; the CR's status is written on every change. */
export const MAX_OUTPUT_CHARS = 4_096;
/** Kubernetes' own per-expression cost limit for CRD validation rules. */
export const COST_LIMIT = 1_000_000;
/** Comprehensions (all, exists, map, filter, …) inside comprehensions, at most. */
export const MAX_COMPREHENSION_NESTING = 2;
const MAX_EXPRESSION_CHARS = 2_000;
const LIMITS = { maxAstNodes: 400, maxDepth: 32, maxListElements: 64, maxMapEntries: 64, maxCallArguments: 8 };
const OUTPUT_NAME = /^[a-z][A-Za-z0-9]{0,62}$/u;
const COMPREHENSIONS = new Set(['all', 'exists', 'exists_one', 'map', 'filter']);
/**
 * JavaScript's regular expressions backtrack (no bound on time, unlike CEL's RE2); the inputs come
 * from tenants' values, so one crafted string could hang every reconcile.
 */
const REFUSED_FUNCTIONS = new Set(['matches']);
const SECRET_DATA_FIELDS = new Set(['data', 'stringData']);
/** What the checker may say an output's type is, per declared type (dyn: told at run time). */
const CEL_TYPES: Readonly<Record<OutputType, readonly string[]>> = {
  string: ['string'],
  integer: ['int', 'uint'],
  number: ['double', 'int', 'uint'],
  boolean: ['bool'],
};
const EXAMPLE = 'outputs: {url: {expression: \'"http://" + objects.Service["web"].metadata.name\', type: string}}';

/** How the CEL library is set up (the conformance test runs the suite with the same). */
export const CEL_OPTIONS = { limits: LIMITS, enableOptionalTypes: true, homogeneousAggregateLiterals: false } as const;

/** The environment every expression is checked and evaluated in: `self` and `objects`. */
function environment(): Environment {
  return new Environment(CEL_OPTIONS)
    .registerVariable('self', 'map')
    .registerVariable('objects', 'map<string, map<string, map>>');
}

interface Compiled {
  readonly run: (context: Record<string, unknown>) => unknown;
  readonly nodes: number;
  readonly nesting: number;
  /** The checker's type: string, int, bool, dyn, list<…>, … */
  readonly type: string;
}

/** Compiles one expression, or says in one line why it cannot be used. */
export function compileExpression(expression: string): { ok: true; compiled: Compiled } | { ok: false; problem: string } {
  if (expression.trim() === '') return { ok: false, problem: 'is empty' };
  if (expression.length > MAX_EXPRESSION_CHARS) return { ok: false, problem: `is ${String(expression.length)} characters long; at most ${String(MAX_EXPRESSION_CHARS)} are allowed` };
  const env = environment();
  let parsed: ReturnType<Environment['parse']>;
  try {
    parsed = env.parse(expression);
  } catch (err) {
    return { ok: false, problem: celProblem(err, expression) };
  }
  const checked = env.check(expression);
  if (!checked.valid) return { ok: false, problem: celProblem(checked.error, expression) };
  const shape = shapeOf(parsed.ast);
  if (shape.refused !== undefined) return { ok: false, problem: shape.refused };
  if (shape.nesting > MAX_COMPREHENSION_NESTING) return { ok: false, problem: `nests comprehensions ${String(shape.nesting)} deep; at most ${String(MAX_COMPREHENSION_NESTING)} are allowed (each level multiplies the cost)` };
  return { ok: true, compiled: { run: (context) => parsed(context) as unknown, nodes: shape.nodes, nesting: shape.nesting, type: checked.type ?? 'dyn' } };
}

interface Shape {
  nodes: number;
  nesting: number;
  refused?: string;
}

/** Counts nodes and comprehension nesting, and refuses what the expression must not do. */
function shapeOf(root: ASTNode): Shape {
  const shape: Shape = { nodes: 0, nesting: 0 };
  const visit = (node: ASTNode, depth: number): void => {
    shape.nodes++;
    switch (node.op) {
      case 'call':
      case 'rcall': {
        const name = node.args[0];
        if (REFUSED_FUNCTIONS.has(name)) shape.refused ??= `calls ${name}(), which is not allowed: JavaScript's regular expressions have no time bound; use startsWith, endsWith or contains`;
        const comprehension = node.op === 'rcall' && COMPREHENSIONS.has(name);
        const inner = comprehension ? depth + 1 : depth;
        shape.nesting = Math.max(shape.nesting, inner);
        if (node.op === 'rcall') visit(node.args[1], depth);
        for (const a of node.op === 'rcall' ? node.args[2] : node.args[1]) visit(a, inner);
        return;
      }
      case '.':
      case '.?': {
        const [target, field] = node.args;
        const at = accessPath(target, field);
        if (at !== undefined && readsSecretData(at)) shape.refused ??= 'reads the data of a Secret, which outputs and readyWhen may not (a Secret\'s name is fine)';
        visit(target, depth);
        return;
      }
      case '[]':
      case '[?]': {
        const [target, index] = node.args;
        const key = index.op === 'value' && typeof index.args === 'string' ? index.args : undefined;
        const at = key === undefined ? undefined : accessPath(target, key);
        if (at !== undefined && readsSecretData(at)) shape.refused ??= 'reads the data of a Secret, which outputs and readyWhen may not (a Secret\'s name is fine)';
        visit(target, depth);
        visit(index, depth);
        return;
      }
      case 'value':
      case 'id':
        return;
      case 'list':
        for (const a of node.args) visit(a, depth);
        return;
      case 'map':
        for (const [k, v] of node.args) {
          visit(k, depth);
          visit(v, depth);
        }
        return;
      case '!_':
      case '-_':
        visit(node.args, depth);
        return;
      default:
        for (const a of node.args) visit(a, depth);
    }
  };
  visit(root, 0);
  return shape;
}

/** `objects.Secret.x.data` as ['objects', 'Secret', 'x', 'data'], when the access chain is all literal. */
function accessPath(target: ASTNode, last: string): string[] | undefined {
  const segments: string[] = [last];
  let node: ASTNode = target;
  for (;;) {
    if (node.op === 'id') return [node.args, ...segments];
    if (node.op === '.' || node.op === '.?') {
      segments.unshift(node.args[1]);
      node = node.args[0];
      continue;
    }
    if (node.op === '[]' || node.op === '[?]') {
      const index = node.args[1];
      // A computed name (objects.Secret[x]) still addresses a Secret.
      segments.unshift(index.op === 'value' && typeof index.args === 'string' ? index.args : '*');
      node = node.args[0];
      continue;
    }
    return undefined;
  }
}

function readsSecretData(path: readonly string[]): boolean {
  return path[0] === 'objects' && path[1] === 'Secret' && path.length >= 4 && SECRET_DATA_FIELDS.has(path[3] ?? '');
}

/** One line for a CEL parse or type error: its first line and the column it points at. */
function celProblem(err: unknown, expression: string): string {
  const e = err as { message?: unknown; range?: { start?: number } } | undefined;
  const first = typeof e?.message === 'string' ? (e.message.split('\n')[0] ?? '') : String(err);
  const at = e?.range?.start;
  // cel-js takes has() only over a chain of field selections (a deviation from cel-spec).
  const hint = first.startsWith('has() invalid argument') ? '; after an index write x.?field.hasValue() or "field" in x' : '';
  const column = typeof at === 'number' && !expression.includes('\n') ? ` (at column ${String(at + 1)})` : '';
  return `does not compile: ${first}${column}${hint}`;
}

/**
 * The watches keys `outputs` and `readyWhen`; undefined when both are absent or either is bad
 * (problems added, one line each naming the key and its line).
 */
export function readStatusExpressions(
  ctx: YamlContext,
  fields: { readonly outputs?: Field | undefined; readonly readyWhen?: Field | undefined },
  where: (line: number | undefined) => string,
  problems: string[],
): StatusExpressions | undefined {
  const before = problems.length;
  const outputs: OutputDeclaration[] = [];
  const field = fields.outputs;
  if (field !== undefined && field.value !== null) {
    if (!isMap(field.value)) problems.push(`${where(field.line)}: outputs is ${describeNode(field.value)}; expected a map of names to CEL expressions, e.g. ${EXAMPLE}`);
    else {
      const listed = fieldsOf(ctx, field.value);
      if (listed.length > MAX_OUTPUTS) problems.push(`${where(field.line)}: outputs has ${String(listed.length)} entries; at most ${String(MAX_OUTPUTS)} are allowed`);
      for (const f of listed) {
        const output = readOutput(ctx, f, where, problems);
        if (output !== undefined) outputs.push(output);
      }
    }
  }
  let readyWhen: string | undefined;
  const ready = fields.readyWhen;
  if (ready !== undefined && ready.value !== null) {
    const text = isScalar(ready.value) && typeof ready.value.value === 'string' ? scalarText(ready.value) : undefined;
    if (text === undefined) problems.push(`${where(ready.line)}: readyWhen is ${describeNode(ready.value)}; expected a CEL expression that is true when the release is ready, e.g. readyWhen: 'objects.Job["migrate"].status.?succeeded.orValue(0) > 0'`);
    else {
      const compiled = compileExpression(text);
      if (!compiled.ok) problems.push(`${where(ready.line)}: readyWhen ${compiled.problem}`);
      else if (compiled.compiled.type !== 'bool' && compiled.compiled.type !== 'dyn') problems.push(`${where(ready.line)}: readyWhen is of type ${compiled.compiled.type}; it must be true or false (bool)`);
      else readyWhen = text;
    }
  }
  if (problems.length > before || (outputs.length === 0 && readyWhen === undefined)) return undefined;
  return { outputs, ...(readyWhen === undefined ? {} : { readyWhen }) };
}

function readOutput(ctx: YamlContext, f: Field, where: (line: number | undefined) => string, problems: string[]): OutputDeclaration | undefined {
  const at = `${where(f.line)}: outputs.${f.key}`;
  if (!OUTPUT_NAME.test(f.key)) {
    problems.push(`${where(f.line)}: output name "${f.key.slice(0, 64)}" is not usable; use a camelCase name such as url (it becomes status.outputs.<name>)`);
    return undefined;
  }
  let expression: string | undefined;
  let declared: OutputType | undefined;
  let column = false;
  if (f.value !== null && isScalar(f.value) && typeof f.value.value === 'string') expression = scalarText(f.value);
  else if (f.value !== null && isMap(f.value)) {
    for (const g of fieldsOf(ctx, f.value)) {
      const text = g.value !== null && isScalar(g.value) && typeof g.value.value === 'string' ? scalarText(g.value) : undefined;
      if (g.key === 'expression') {
        if (text === undefined) problems.push(`${at}.expression is ${describeNode(g.value)}; expected a CEL expression`);
        else expression = text;
      } else if (g.key === 'type') {
        if (text === undefined || !(OUTPUT_TYPES as readonly string[]).includes(text)) problems.push(`${at}.type is ${describeNode(g.value)}; expected one of ${OUTPUT_TYPES.join(', ')}`);
        else declared = text as OutputType;
      } else if (g.key === 'column') {
        column = bool(g, false, (_h, line) => where(line ?? g.line), problems);
      } else problems.push(`${at} has the unknown key "${g.key.slice(0, 60)}"; known keys are expression, type, column`);
    }
    if (expression === undefined) {
      problems.push(`${at} has no expression; e.g. ${EXAMPLE}`);
      return undefined;
    }
  } else {
    problems.push(`${at} is ${describeNode(f.value)}; expected a CEL expression, or a map {expression, type, column}`);
    return undefined;
  }
  const compiled = compileExpression(expression);
  if (!compiled.ok) {
    problems.push(`${at}: the expression ${compiled.problem}`);
    return undefined;
  }
  const type = declared ?? inferredType(compiled.compiled.type);
  if (type === undefined) {
    problems.push(`${at}: the expression is of type ${compiled.compiled.type}; declare what it gives with type: ${OUTPUT_TYPES.join(' | ')} (it becomes the output's type in the CRD)`);
    return undefined;
  }
  if (compiled.compiled.type !== 'dyn' && !CEL_TYPES[type].includes(compiled.compiled.type)) {
    problems.push(`${at}: the expression is of type ${compiled.compiled.type}, not ${type}`);
    return undefined;
  }
  return { name: f.key, expression, type, column };
}

function inferredType(celType: string): OutputType | undefined {
  if (celType === 'string') return 'string';
  if (celType === 'int' || celType === 'uint') return 'integer';
  if (celType === 'double') return 'number';
  if (celType === 'bool') return 'boolean';
  return undefined;
}

const programs = new Map<string, StatusProgram>();

/**
 * The program of checked declarations (readStatusExpressions made them); one per distinct set, so a
 * kind's CRs share it. Throws only if a declaration was never checked.
 */
export function statusProgram(declarations: StatusExpressions): StatusProgram {
  const key = JSON.stringify(declarations);
  const known = programs.get(key);
  if (known !== undefined) return known;
  const compile = (expression: string): Compiled => {
    const c = compileExpression(expression);
    if (!c.ok) throw new Error(`an unchecked expression reached the status program: ${c.problem}`);
    return c.compiled;
  };
  const outputs = declarations.outputs.map((d) => ({ declaration: d, compiled: compile(d.expression) }));
  const readyWhen = declarations.readyWhen === undefined ? undefined : compile(declarations.readyWhen);
  const program: StatusProgram = {
    declarations,
    evaluate: (input) => evaluateAll(input, outputs, readyWhen),
  };
  programs.set(key, program);
  return program;
}

function evaluateAll(input: StatusInput, outputs: readonly { declaration: OutputDeclaration; compiled: Compiled }[], readyWhen: Compiled | undefined): StatusVerdict {
  const converted = celInput(input);
  const values: Record<string, OutputValue> = {};
  const unresolved: Unresolved[] = [];
  for (const { declaration, compiled } of outputs) {
    const got = evaluateOne(compiled, converted);
    if (!got.ok) {
      unresolved.push({ name: declaration.name, problem: got.problem });
      continue;
    }
    const value = asOutput(got.value, declaration.type);
    if (typeof value === 'object') unresolved.push({ name: declaration.name, problem: value.problem });
    else Object.defineProperty(values, declaration.name, { value, enumerable: true, writable: true, configurable: true });
  }
  if (readyWhen === undefined) return { outputs: values, unresolved };
  const got = evaluateOne(readyWhen, converted);
  let verdict: { met: boolean; message: string };
  if (!got.ok) verdict = { met: false, message: `readyWhen cannot be told yet: ${got.problem}` };
  else if (typeof got.value !== 'boolean') verdict = { met: false, message: `readyWhen gave ${celKind(got.value)}, not true or false` };
  else verdict = { met: got.value, message: got.value ? 'readyWhen holds' : 'readyWhen is false' };
  if (!got.ok) unresolved.push({ name: READY_WHEN, problem: got.problem });
  return { outputs: values, unresolved, readyWhen: verdict };
}

interface CelInput {
  readonly context: Record<string, unknown>;
  /** The longest list or map in the input: what one comprehension can iterate over. */
  readonly widest: number;
}

function evaluateOne(compiled: Compiled, input: CelInput): { ok: true; value: unknown } | { ok: false; problem: string } {
  const cost = compiled.nodes * Math.max(1, input.widest) ** compiled.nesting;
  if (cost > COST_LIMIT) return { ok: false, problem: `its estimated cost ${String(cost)} is over the limit ${String(COST_LIMIT)} (its comprehensions iterate over ${String(input.widest)} items)` };
  try {
    return { ok: true, value: compiled.run(input.context) };
  } catch (err) {
    return { ok: false, problem: runtimeProblem(err) };
  }
}

/**
 * A runtime error in words that carry no value: messages such as "No such key: <key>" may quote
 * data (a key computed from a value), so only the error's code is told.
 */
function runtimeProblem(err: unknown): string {
  const code = (err as { code?: unknown } | undefined)?.code;
  if (code === 'no_such_key' || code === 'index_out_of_bounds') return 'a field or item it reads is not there (yet)';
  if (typeof code === 'string' && /^[a-z_]{1,60}$/u.test(code)) return code.replaceAll('_', ' ');
  return 'the expression failed';
}

function asOutput(value: unknown, type: OutputType): OutputValue | { problem: string } {
  switch (type) {
    case 'string':
      if (typeof value !== 'string') return { problem: `gave ${celKind(value)}, not a string` };
      return value.length <= MAX_OUTPUT_CHARS ? value : { problem: `gave a string of ${String(value.length)} characters; an output holds at most ${String(MAX_OUTPUT_CHARS)}` };
    case 'boolean':
      return typeof value === 'boolean' ? value : { problem: `gave ${celKind(value)}, not true or false` };
    case 'integer': {
      const n = typeof value === 'bigint' ? value : typeof value === 'number' && Number.isInteger(value) ? BigInt(value) : undefined;
      if (n === undefined) return { problem: `gave ${celKind(value)}, not an integer` };
      if (n > BigInt(Number.MAX_SAFE_INTEGER) || n < BigInt(Number.MIN_SAFE_INTEGER)) return { problem: 'gave an integer too large for JSON' };
      return Number(n);
    }
    case 'number': {
      const n = typeof value === 'bigint' ? Number(value) : typeof value === 'number' ? value : undefined;
      if (n === undefined || !Number.isFinite(n)) return { problem: `gave ${celKind(value)}, not a finite number` };
      return n;
    }
  }
}

function celKind(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'bigint') return 'an integer';
  if (typeof value === 'object') return 'a map';
  return `a ${typeof value}`;
}

/**
 * The variables: `self` (the CR's identity) and `objects` (kind → name → object, live where the
 * caches have it, else as rendered). JSON integers become CEL ints (as Kubernetes' CEL has them),
 * a Secret keeps no data, and the widest collection is measured for the cost bound.
 */
function celInput(input: StatusInput): CelInput {
  let widest = 0;
  const convert = (v: unknown, depth: number): unknown => {
    if (depth > 64) return null;
    if (typeof v === 'number') return Number.isInteger(v) ? BigInt(v) : v;
    if (Array.isArray(v)) {
      widest = Math.max(widest, v.length);
      return v.map((x) => convert(x, depth + 1));
    }
    if (v !== null && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      const entries = Object.entries(v);
      widest = Math.max(widest, entries.length);
      for (const [k, x] of entries) Object.defineProperty(out, k, { value: convert(x, depth + 1), enumerable: true, writable: true, configurable: true });
      return out;
    }
    return v;
  };
  const byKind = new Map<string, Map<string, unknown>>();
  const ambiguous = new Set<string>();
  for (const o of input.objects) {
    const names = byKind.get(o.kind) ?? new Map<string, unknown>();
    byKind.set(o.kind, names);
    // Two objects of one kind and name (other groups or namespaces): neither is addressable.
    if (names.has(o.name)) ambiguous.add(`${o.kind}/${o.name}`);
    names.set(o.name, convert(withoutSecretData(o), 0));
  }
  const objects: Record<string, unknown> = {};
  for (const [kind, names] of byKind) {
    const named: Record<string, unknown> = {};
    for (const [name, object] of names) if (!ambiguous.has(`${kind}/${name}`)) Object.defineProperty(named, name, { value: object, enumerable: true, writable: true, configurable: true });
    widest = Math.max(widest, names.size);
    Object.defineProperty(objects, kind, { value: named, enumerable: true, writable: true, configurable: true });
  }
  widest = Math.max(widest, byKind.size);
  return { context: { self: convert(input.self, 0), objects }, widest };
}

function withoutSecretData(o: ReleaseObject): unknown {
  const object = o.live ?? o.rendered;
  if (o.kind !== 'Secret' || !(o.apiVersion === 'v1')) return object;
  const { data: _data, stringData: _stringData, ...rest } = object;
  return rest;
}
