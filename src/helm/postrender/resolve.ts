/**
 * A rendered manifest stream turned into the objects the API server will receive, decided the way
 * helm's own decoding decides them, so that the post-renderer checks those objects and nothing
 * else:
 *
 * - Scalars resolve like go-yaml v2 (sigs.k8s.io/yaml, which helm and client-go decode with):
 *   YAML 1.1 booleans (`yes`, `on`, …), `~`/`null`, Go-style integers (`0x1F`, `0o17`, `017`,
 *   `0b101`, underscores), floats; a plain timestamp stays a string. Quoted and block scalars are
 *   strings.
 * - Tags: `!!str`, `!!int`, `!!float`, `!!bool`, `!!null`, `!!timestamp`, `!!map`, `!!seq`, `!`,
 *   and `!!binary` (decoded, as go-yaml does) are honoured; any other tag is refused.
 * - Aliases are expanded (each a deep copy, within a budget); merge keys (`<<`) are applied, and
 *   refused when a merged key would disagree with another.
 * - A document whose object has an `items` key is a list to Kubernetes' decoder whatever its kind:
 *   its items are the objects (an item without `kind` and `apiVersion` takes the list's, as the
 *   decoder does); an item that is itself a list is refused.
 *
 * The post-renderer then emits exactly these objects as JSON (see emit.ts), so what was checked is
 * what helm parses: no tag, alias, merge key or list survives to be read differently later.
 */
import { Buffer } from 'node:buffer';
import { isAlias, isMap, isPair, isScalar, isSeq, parseAllDocuments, type Document, type Node, type Scalar } from 'yaml';

import { HELM_POSTRENDER_FILENAME_ANNOTATION } from '../seal.js';

export type JsonValue = null | boolean | number | bigint | string | JsonValue[] | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue;
}

/** The manifest cannot be turned into objects safely; nothing may be applied. */
export class ManifestResolveError extends Error {
  override readonly name = 'ManifestResolveError';
}

/** Deeper nesting than any real manifest; refused instead of risking the stack. */
export const MAX_DEPTH = 200;
/** Values produced per document, aliases expanded ("billion laughs" stops here). */
export const MAX_NODES_PER_DOCUMENT = 1_000_000;

const YAML_TAG = 'tag:yaml.org,2002:';
const TAG = {
  str: `${YAML_TAG}str`,
  int: `${YAML_TAG}int`,
  float: `${YAML_TAG}float`,
  bool: `${YAML_TAG}bool`,
  null: `${YAML_TAG}null`,
  binary: `${YAML_TAG}binary`,
  timestamp: `${YAML_TAG}timestamp`,
  map: `${YAML_TAG}map`,
  seq: `${YAML_TAG}seq`,
  merge: `${YAML_TAG}merge`,
} as const;

/** The failsafe schema leaves every scalar a string: resolution is ours (go-yaml's rules). */
const PARSE_OPTIONS = { version: '1.1', schema: 'failsafe', merge: false, uniqueKeys: true, keepSourceTokens: false } as const;

/** Every object of a manifest stream, lists flattened, in order. */
export function resolveManifestObjects(manifest: string): JsonObject[] {
  return resolveManifest(manifest).map((d) => d.object);
}

export interface ResolvedObject {
  readonly object: JsonObject;
  /** 1-based number of the document it came from, for messages. */
  readonly document: number;
}

export function resolveManifest(manifest: string): ResolvedObject[] {
  let docs: ReturnType<typeof parseAllDocuments>;
  try {
    docs = parseAllDocuments(manifest, PARSE_OPTIONS);
  } catch (err) {
    throw new ManifestResolveError(`manifest is not valid YAML: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!Array.isArray(docs)) return []; // an EmptyStream: no documents at all
  const out: ResolvedObject[] = [];
  docs.forEach((doc, i) => {
    const n = i + 1;
    const firstError = doc.errors[0];
    if (firstError !== undefined) throw new ManifestResolveError(`manifest document ${n} is not valid YAML: ${firstError.message}`);
    let value: JsonValue;
    try {
      value = new Resolver(doc, n).value(doc.contents, 0);
    } catch (err) {
      if (err instanceof ManifestResolveError) throw err;
      // The parser or a walk ran out of stack on hostile nesting: refuse, never crash.
      if (err instanceof RangeError) throw new ManifestResolveError(`manifest document ${n} is nested too deeply`);
      throw err;
    }
    if (value === null) return; // an empty document: helm skips it too
    if (!isObject(value)) throw new ManifestResolveError(`manifest document ${n} is not an object (a ${describe(value)})`);
    for (const object of flattenList(value, n)) out.push({ object, document: n });
  });
  return out;
}

/** Kubernetes' unstructured decoder treats any object with an `items` key as a list. */
function flattenList(value: JsonObject, n: number): JsonObject[] {
  if (!Object.hasOwn(value, 'items')) return [value];
  const items = value['items'];
  if (items === null) return [];
  if (!Array.isArray(items)) throw new ManifestResolveError(`manifest document ${n} has an "items" field that is not a list; Kubernetes decodes any object with "items" as a list, so it is refused`);
  const listKind = typeof value['kind'] === 'string' ? value['kind'] : '';
  const listApiVersion = typeof value['apiVersion'] === 'string' ? value['apiVersion'] : '';
  const listFile = fileAnnotation(value);
  return items.map((item, i) => {
    if (!isObject(item)) throw new ManifestResolveError(`manifest document ${n}: item ${i} of its "items" list is not an object`);
    if (Object.hasOwn(item, 'items')) throw new ManifestResolveError(`manifest document ${n}: item ${i} of its "items" list has "items" itself; nested lists are refused`);
    const copy: JsonObject = { ...item };
    if (copy['kind'] === undefined && copy['apiVersion'] === undefined) {
      copy['kind'] = listKind.endsWith('List') ? listKind.slice(0, -'List'.length) : listKind;
      copy['apiVersion'] = listApiVersion;
    }
    // Keep helm's file-name annotation so the item stays with its template file (helm drops it after).
    if (listFile !== undefined && fileAnnotation(copy) === undefined) setFileAnnotation(copy, listFile);
    return copy;
  });
}

function fileAnnotation(o: JsonObject): string | undefined {
  const m = o['metadata'];
  const a = isObject(m) ? m['annotations'] : undefined;
  const f = isObject(a) ? a[HELM_POSTRENDER_FILENAME_ANNOTATION] : undefined;
  return typeof f === 'string' ? f : undefined;
}

function setFileAnnotation(o: JsonObject, file: string): void {
  const metadata: JsonObject = isObject(o['metadata']) ? { ...o['metadata'] } : {};
  const annotations: JsonObject = isObject(metadata['annotations']) ? { ...metadata['annotations'] } : {};
  annotations[HELM_POSTRENDER_FILENAME_ANNOTATION] = file;
  metadata['annotations'] = annotations;
  o['metadata'] = metadata;
}

class Resolver {
  private produced = 0;

  constructor(
    private readonly doc: Document,
    private readonly n: number,
  ) {}

  value(node: unknown, depth: number): JsonValue {
    if (depth > MAX_DEPTH) this.fail(`is nested deeper than ${MAX_DEPTH} levels`);
    if (++this.produced > MAX_NODES_PER_DOCUMENT) this.fail(`expands to more than ${MAX_NODES_PER_DOCUMENT} values (aliases)`);
    if (node === null || node === undefined) return null;
    if (isAlias(node)) {
      const target = node.resolve(this.doc);
      if (target === undefined) this.fail(`uses an unknown alias *${node.source}`);
      // A fresh copy per use: objects built from one anchor must not share state.
      return this.value(target, depth + 1);
    }
    if (isScalar(node)) return this.scalar(node);
    if (isMap(node)) {
      this.expectCollectionTag(node, TAG.map);
      return this.map(node.items, depth);
    }
    if (isSeq(node)) {
      this.expectCollectionTag(node, TAG.seq);
      return node.items.map((item) => this.value(item, depth + 1));
    }
    return this.fail('holds a YAML node of an unsupported type');
  }

  private map(pairs: readonly unknown[], depth: number): JsonObject {
    const own = new Map<string, JsonValue>();
    const merged: JsonObject[] = [];
    for (const pair of pairs) {
      if (!isPair(pair)) this.fail('holds a malformed mapping');
      if (this.isMergeKey(pair.key)) {
        merged.push(...this.mergeSources(pair.value, depth));
        continue;
      }
      const key = this.key(pair.key);
      if (own.has(key)) this.fail(`has the key "${key}" twice (after YAML 1.1 resolution)`);
      own.set(key, this.value(pair.value, depth + 1));
    }
    const out: JsonObject = {};
    // Merged keys never override own keys; merged sources that disagree are refused, since the
    // YAML parsers helm uses do not agree on which one wins.
    const fromMerge = new Map<string, JsonValue>();
    for (const source of merged) {
      for (const [k, v] of Object.entries(source)) {
        if (own.has(k)) continue;
        if (fromMerge.has(k) && !sameJson(fromMerge.get(k) as JsonValue, v)) this.fail(`merges two different values for the key "${k}" (<<)`);
        fromMerge.set(k, v);
      }
    }
    for (const [k, v] of fromMerge) defineOwn(out, k, v);
    for (const [k, v] of own) defineOwn(out, k, v);
    return out;
  }

  private isMergeKey(key: unknown): boolean {
    if (!isScalar(key)) return false;
    if (key.tag === TAG.merge) return true;
    return key.tag === undefined && key.type === 'PLAIN' && key.value === '<<';
  }

  private mergeSources(value: unknown, depth: number): JsonObject[] {
    const resolved = this.value(value, depth + 1);
    const sources = Array.isArray(resolved) ? resolved : [resolved];
    return sources.map((s) => (isObject(s) ? s : this.fail('merges (<<) something that is not a mapping')));
  }

  /** A mapping key as sigs.k8s.io/yaml turns it into a JSON key. */
  private key(node: unknown): string {
    if (!isScalar(node)) this.fail('has a mapping key that is not a scalar');
    const v = this.scalar(node);
    if (typeof v === 'string') return v;
    if (typeof v === 'boolean') return v ? 'true' : 'false';
    if (typeof v === 'bigint' || (typeof v === 'number' && Number.isInteger(v))) return v.toString();
    return this.fail(`has a mapping key "${String(node.value)}" that does not resolve to a string, integer or boolean`);
  }

  private scalar(node: Scalar): JsonValue {
    const text = String(node.value);
    const tag = node.tag;
    const plain = node.type === 'PLAIN' || node.type === undefined;
    if (tag === undefined) return plain ? resolvePlain(text) : text;
    switch (tag) {
      case '!':
      case TAG.str:
      case TAG.timestamp:
        return text;
      case TAG.int: {
        const v = resolvePlain(text);
        if ((typeof v === 'number' || typeof v === 'bigint') && goParseInt(text.replaceAll('_', '')) !== undefined) return v;
        return this.fail(`tags "${text}" as !!int, which it is not`);
      }
      case TAG.float: {
        const v = resolvePlain(text);
        if (typeof v === 'number' || typeof v === 'bigint') return v;
        return this.fail(`tags "${text}" as !!float, which it is not`);
      }
      case TAG.bool: {
        const v = resolvePlain(text);
        if (typeof v === 'boolean') return v;
        return this.fail(`tags "${text}" as !!bool, which it is not`);
      }
      case TAG.null: {
        if (resolvePlain(text) === null) return null;
        return this.fail(`tags "${text}" as !!null, which it is not`);
      }
      case TAG.binary:
        return decodeBinary(text) ?? this.fail('has a !!binary value that is not base64 of UTF-8 text');
      default:
        return this.fail(`uses the YAML tag ${tag}, which chartpilot does not accept in a manifest (only the standard ones)`);
    }
  }

  private expectCollectionTag(node: Node, allowed: string): void {
    const tag = (node as { tag?: string | undefined }).tag;
    if (tag !== undefined && tag !== allowed) this.fail(`uses the YAML tag ${tag} on a collection, which chartpilot does not accept`);
  }

  private fail(what: string): never {
    throw new ManifestResolveError(`manifest document ${this.n} ${what}`);
  }
}

/** Own data property even for `__proto__`: a key is data, never a prototype. */
function defineOwn(o: JsonObject, key: string, value: JsonValue): void {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
}

const TRUE = new Set(['y', 'Y', 'yes', 'Yes', 'YES', 'true', 'True', 'TRUE', 'on', 'On', 'ON']);
const FALSE = new Set(['n', 'N', 'no', 'No', 'NO', 'false', 'False', 'FALSE', 'off', 'Off', 'OFF']);
const NULL = new Set(['', '~', 'null', 'Null', 'NULL']);
const INFINITE = new Set(['.inf', '.Inf', '.INF', '+.inf', '+.Inf', '+.INF', '-.inf', '-.Inf', '-.INF', '.nan', '.NaN', '.NAN']);
/** go-yaml v2's yamlStyleFloat. */
const YAML_FLOAT = /^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$/;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;

/**
 * A plain scalar as go-yaml v2 resolves it (resolve.go): first the fixed words, then — only when
 * the first character is a digit, a sign or a dot — an integer in Go's base-0 syntax (int64, then
 * uint64), then a YAML-style float. Everything else is a string. Infinity and NaN cannot be JSON:
 * helm would fail on them, so they are refused here, earlier and with a clearer message.
 */
export function resolvePlain(text: string): JsonValue {
  if (NULL.has(text)) return null;
  if (TRUE.has(text)) return true;
  if (FALSE.has(text)) return false;
  if (INFINITE.has(text)) throw new ManifestResolveError(`the value ${text} (infinity or NaN) cannot be sent to Kubernetes`);
  const first = text[0] ?? '';
  if (first === '.') {
    return /^\.[0-9]+([eE][-+]?[0-9]+)?$/.test(text) ? Number(text) : text;
  }
  if (!/^[-+0-9]$/.test(first)) return text;
  const plain = text.replaceAll('_', '');
  const int = goParseInt(plain);
  // strconv.ParseInt (int64), then strconv.ParseUint (no sign allowed), as go-yaml tries them.
  if (int !== undefined && (int <= INT64_MAX || !/^[-+]/.test(plain))) return exactInteger(int);
  if (YAML_FLOAT.test(plain)) {
    const f = Number(plain);
    if (Number.isFinite(f)) return f;
    throw new ManifestResolveError(`the number ${text} is too large for Kubernetes`);
  }
  return text;
}

function exactInteger(v: bigint): number | bigint {
  return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
}

/** Go's strconv.ParseInt(s, 0, …) syntax: sign, then 0x/0o/0b prefix, a leading-0 octal, or decimal. */
function goParseInt(s: string): bigint | undefined {
  const m = /^([-+]?)(.*)$/.exec(s);
  if (m === null) return undefined;
  const sign = m[1] === '-' ? -1n : 1n;
  const body = m[2] ?? '';
  let digits: string;
  let radix: 'x' | 'o' | 'b' | 'd';
  if (/^0[xX]/.test(body)) [digits, radix] = [body.slice(2), 'x'];
  else if (/^0[oO]/.test(body)) [digits, radix] = [body.slice(2), 'o'];
  else if (/^0[bB]/.test(body)) [digits, radix] = [body.slice(2), 'b'];
  else if (/^0[0-9]/.test(body)) [digits, radix] = [body.slice(1), 'o'];
  else [digits, radix] = [body, 'd'];
  const valid = { x: /^[0-9a-fA-F]+$/, o: /^[0-7]+$/, b: /^[01]+$/, d: /^[0-9]+$/ }[radix];
  if (!valid.test(digits)) return undefined;
  const prefix = { x: '0x', o: '0o', b: '0b', d: '' }[radix];
  const value = BigInt(prefix + digits) * sign;
  if (value < INT64_MIN || value > UINT64_MAX) return undefined;
  return value;
}

/** go-yaml decodes !!binary into its bytes; only text can become a JSON string faithfully. */
function decodeBinary(text: string): string | undefined {
  const compact = text.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact) || compact.length % 4 !== 0) return undefined;
  const bytes = Buffer.from(compact, 'base64');
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function describe(v: JsonValue): string {
  if (Array.isArray(v)) return 'list';
  return typeof v;
}

function sameJson(a: JsonValue, b: JsonValue): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => Object.hasOwn(b, k) && sameJson((a as JsonObject)[k] as JsonValue, (b as JsonObject)[k] as JsonValue));
}
