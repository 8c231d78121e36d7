/**
 * Reading a parsed YAML document node by node instead of through `toJS()`, so that problems can
 * name the line they come from, map keys keep the text the user wrote (YAML 1.1 would turn a key
 * `on` into `true`), and scalars bound for Helm `--set` keep their source text (`1.10` stays
 * "1.10" instead of becoming the number 1.1).
 */
import { isAlias, isMap, isScalar, isSeq, type Document, type LineCounter, type Node, type Scalar, type YAMLMap } from 'yaml';

export interface YamlContext {
  readonly doc: Document;
  readonly lines: LineCounter;
}

export interface Field {
  /** The key as written. */
  readonly key: string;
  /** The value node with aliases followed; null for no value (`key:`, `key: ~`, `key: null`). */
  readonly value: Node | null;
  /** 1-based line of the key, when known. */
  readonly line: number | undefined;
}

// Aliases may point at aliases; a bound stops a malicious chain from looping.
const MAX_ALIAS_HOPS = 100;

/** Follows aliases; returns null for a missing node or a null scalar. */
export function deref(ctx: YamlContext, node: unknown): Node | null {
  let current: unknown = node;
  for (let hops = 0; isAlias(current); hops++) {
    if (hops >= MAX_ALIAS_HOPS) return null;
    current = current.resolve(ctx.doc);
  }
  // `key:`, `key: ~` and `key: null` all mean "no value", as they do for go-yaml.
  if (isScalar(current)) return current.value === null ? null : current;
  if (isMap(current) || isSeq(current)) return current;
  return null;
}

export function lineOf(ctx: YamlContext, node: unknown): number | undefined {
  if (node === null || typeof node !== 'object' || !('range' in node)) return undefined;
  const range = (node as { range?: readonly number[] | null }).range;
  const start = range?.[0];
  return start === undefined ? undefined : ctx.lines.linePos(start).line;
}

/** The text of a scalar as the user wrote it (unquoted), for keys and `--set` values. */
export function scalarText(node: Scalar): string {
  const v = node.value;
  if (typeof v === 'string') return v;
  if (v === null || v === undefined) return node.source ?? '';
  if (node.source !== undefined && node.source !== '') return node.source;
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  return '';
}

function isMergeKey(key: unknown): boolean {
  return isScalar(key) && typeof key.value === 'symbol';
}

/**
 * The fields of a map in source order, YAML 1.1 merge keys (`<<: *defaults`) expanded the way
 * go-yaml does (explicit keys win over merged ones; earlier merge sources win over later ones).
 */
export function fieldsOf(ctx: YamlContext, map: YAMLMap, merging: ReadonlySet<YAMLMap> = new Set()): Field[] {
  const own: Field[] = [];
  const merged: Field[] = [];
  const chain = new Set(merging).add(map);
  for (const pair of map.items) {
    if (isMergeKey(pair.key)) {
      const source = deref(ctx, pair.value);
      const sources = isSeq(source) ? source.items.map((it) => deref(ctx, it)) : [source];
      // A map merging itself (`&a {<<: *a}`) would recurse forever; its own keys are all it has.
      for (const s of sources) if (isMap(s) && !chain.has(s)) merged.push(...fieldsOf(ctx, s, chain));
      continue;
    }
    const keyNode = deref(ctx, pair.key);
    const key = isScalar(keyNode) ? scalarText(keyNode) : String(pair.key);
    own.push({ key, value: deref(ctx, pair.value), line: lineOf(ctx, pair.key) });
  }
  const seen = new Set(own.map((f) => f.key));
  for (const f of merged) {
    if (!seen.has(f.key)) {
      seen.add(f.key);
      own.push(f);
    }
  }
  return own;
}

/** "a map", "a list", "a number (3)", … for messages that say what was found. */
export function describeNode(node: Node | null): string {
  if (node === null) return 'empty';
  if (isMap(node)) return 'a map';
  if (isSeq(node)) return 'a list';
  if (isScalar(node)) {
    const v = node.value;
    if (v === null || v === undefined) return 'empty';
    if (typeof v === 'string') return `a string (${JSON.stringify(v)})`;
    if (typeof v === 'boolean') return `a boolean (${scalarText(node)})`;
    if (typeof v === 'number' || typeof v === 'bigint') return `a number (${scalarText(node)})`;
  }
  return 'an unsupported YAML value';
}

/** Prefix for a problem: the entry label and the line of `line`, else of field `f`, else of the entry. */
export type Where = (f: Field | undefined, line?: number) => string;

export function bool(f: Field | undefined, fallback: boolean, where: Where, problems: string[]): boolean {
  if (f === undefined || f.value === null) return fallback;
  if (isScalar(f.value) && typeof f.value.value === 'boolean') return f.value.value;
  const quoted = isScalar(f.value) && typeof f.value.value === 'string' && /^(true|false)$/iu.test(f.value.value);
  problems.push(
    `${where(f)}: ${f.key} is ${describeNode(f.value)}; expected true or false` + (quoted ? ' without quotes' : ''),
  );
  return fallback;
}

