/**
 * A rendered manifest stream turned into the objects the API server will receive, decided the way
 * helm's own decoding decides them, so that the post-renderer checks those objects and nothing
 * else. Helm reads a manifest with two parsers in turn — go-yaml v3 (kyaml, in splitAndDeannotate,
 * which splits the stream, reads each document's file annotation and writes the documents out
 * again) and go-yaml v2 (sigs.k8s.io/yaml, in the kube client that builds the objects from that
 * text). What helm applies is go-yaml v2's reading, of the text and of kyaml's re-emission of it:
 * a construct is accepted only where both are what this resolver reads and kyaml parses it into
 * the same documents; go-yaml v3's own typing of a scalar (`yes` is text to it, `2001-12-14` a
 * time) is never applied and does not count (test/unit/helm/yaml-readers.test.ts runs a corpus
 * through helm v4.1.4's own readers and holds every accepted manifest to them):
 *
 * - The raw text (stream-text.ts): every line starting with `---` must be a bare separator, no
 *   content may follow a `...` before the next one, no `%` directives, no characters go-yaml
 *   refuses or takes for line breaks (NEL, LS, PS, a lone CR).
 * - Scalars resolve like go-yaml v2: YAML 1.1 booleans (`yes`, `on`, `y`, …), `~`/`null`,
 *   Go-style integers (`0x1F`, `0o17`, `017`, `0b101`, underscores), floats; plain timestamps stay
 *   text, as does `<<` as a value (kyaml writes it back as `!!merge <<`, also taken); quoted and
 *   block scalars are strings. Refused (reader-agreement.ts): the escapes `\/` and surrogates
 *   (go-yaml fails), folded blocks with more-indented lines (kyaml writes them back folded
 *   otherwise), a keep block (`|+`) whose trailing blank lines end its document (helm trims them),
 *   `?` inside a plain scalar in a flow collection (go-yaml fails), and an empty value in a flow
 *   mapping (`{a, b: 1}`: null to v2, "" once kyaml wrote it back).
 * - Tags: `!!str`, `!!int`, `!!float` (an integer becomes a double, as v2 makes it), `!!bool`,
 *   `!!null`, `!!timestamp` (a date or time go-yaml v2 reads, kept as text), `!!map`, `!!seq`, `!`
 *   (on text that stays text: kyaml drops the tag) and `!!binary` (decoded, as go-yaml does) are
 *   honoured; any other tag is refused.
 * - Keys become text as helm's kube client makes them (`1` → "1", `yes` → "true", `1e10` →
 *   "1e+10"); null keys and integers beyond int64 as keys are refused (it fails on them), as are
 *   keys too long for go-yaml to read back in the post-renderer's output.
 * - Aliases are expanded (each a deep copy, within a budget); anchor names are go-yaml's
 *   (letters, digits, `_`, `-`); a document's metadata or metadata.annotations may not be an alias
 *   (kyaml, which writes annotations into each document, fails on or drops it).
 * - Merge keys (`<<`) are applied; refused when two merged values disagree, or when a merge brings
 *   another value for a key the mapping set before it (v2 applies merges in document order, the
 *   later winning, and so does helm; this resolver lets own keys win).
 * - Duplicate keys, also when only resolution makes them equal, are refused.
 * - A document whose object has an `items` key is a list to Kubernetes' decoder whatever its kind:
 *   its items are the objects (an item without `kind` and `apiVersion` takes the list's, as the
 *   decoder does); an item that is itself a list is refused.
 * - kyaml's own annotations (`config.kubernetes.io/index`, `internal.config.kubernetes.io/…`, …),
 *   which its reader rewrites, copies or removes (and with a path naming a .json file, makes its
 *   writer emit go-yaml v3's typing), are refused.
 *
 * The post-renderer then emits exactly these objects as JSON (see emit.ts), so what was checked is
 * what helm parses: no tag, alias, merge key or list survives to be read differently later.
 */
import { isAlias, isMap, isPair, isScalar, isSeq, parseAllDocuments, type Document, type Node, type Pair, type Scalar, type YAMLMap } from 'yaml';

/** Helm 4 adds it before post-rendering and removes it after (pkg/action/action.go). */
export const HELM_POSTRENDER_FILENAME_ANNOTATION = 'postrenderer.helm.sh/postrender-filename';
import { decodeBinary, goBoolean, goInteger, goKeyText, goParseInt, goTaggedFloat, goTimestamp, resolvePlain, type PlainValue } from './go-scalars.js';
import { emittedKeyLength, MAX_EMITTED_KEY_CHARS } from './json-text.js';
import { ManifestResolveError } from './manifest-error.js';
import { anchorProblem, doubleQuotedProblem, foldedProblem } from './reader-agreement.js';
import { kyamlPieces, lineAt, textProblem } from './stream-text.js';

export type JsonValue = null | boolean | number | bigint | string | JsonValue[] | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue;
}

export { ManifestResolveError } from './manifest-error.js';
export { resolvePlain } from './go-scalars.js';

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
  const problem = textProblem(manifest);
  if (problem !== undefined) {
    // The document the offending text belongs to: the last one starting at or before it.
    const n = Math.max(1, docs.filter((d) => (d.range?.[0] ?? 0) <= problem.offset).length);
    throw new ManifestResolveError(`manifest document ${n} (line ${lineAt(manifest, problem.offset)}) ${problem.what}`);
  }
  const alone = kyamlPieces(manifest) === 1; // kyaml sees a single document (see checkKyamlTargets)
  const out: ResolvedObject[] = [];
  docs.forEach((doc, i) => {
    const n = i + 1;
    const firstError = doc.errors[0];
    if (firstError !== undefined) throw new ManifestResolveError(`manifest document ${n} is not valid YAML: ${firstError.message}`);
    let value: JsonValue;
    try {
      const resolver = new Resolver(doc, n, manifest);
      resolver.checkKyamlTargets(alone && n === 1);
      value = resolver.value(doc.contents, 0, false);
    } catch (err) {
      if (err instanceof ManifestResolveError) throw err;
      // The parser or a walk ran out of stack on hostile nesting: refuse, never crash.
      if (err instanceof RangeError) throw new ManifestResolveError(`manifest document ${n} is nested too deeply`);
      throw err;
    }
    if (value === null) return; // an empty document: helm skips it too
    if (!isObject(value)) throw new ManifestResolveError(`manifest document ${n} is not an object (a ${describe(value)})`);
    for (const object of flattenList(value, n)) {
      refuseKyamlAnnotations(object, n);
      out.push({ object, document: n });
    }
  });
  return out;
}

/**
 * Annotations kyaml's reader keeps its books in: on every document helm parses it sets the index
 * ones (and its writer removes them), and copies the path and id ones to their other spelling, so
 * what the chart wrote there is not what the API server would get.
 */
const KYAML_ANNOTATIONS = new Set(['config.kubernetes.io/index', 'config.kubernetes.io/path', 'config.k8s.io/id']);
const KYAML_ANNOTATION_PREFIX = 'internal.config.kubernetes.io/';

function refuseKyamlAnnotations(o: JsonObject, n: number): void {
  const m = o['metadata'];
  const a = isObject(m) ? m['annotations'] : undefined;
  if (!isObject(a)) return;
  for (const key of Object.keys(a)) {
    if (KYAML_ANNOTATIONS.has(key) || key.startsWith(KYAML_ANNOTATION_PREFIX)) {
      throw new ManifestResolveError(`manifest document ${n} has the annotation ${key}, which helm's kyaml pass sets, copies or removes on every document`);
    }
  }
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

/** A mapping's own key, where it stood among the mapping's entries, and its value. */
interface OwnEntry {
  readonly position: number;
  readonly value: JsonValue;
}

class Resolver {
  private produced = 0;
  /** Set for a lone List document, which kyaml breaks up into its items (see checkKyamlTargets). */
  private aliasesRefused: string | undefined;

  constructor(
    private readonly doc: Document,
    private readonly n: number,
    /** The whole manifest: node ranges are offsets into it. */
    private readonly source: string,
  ) {}

  /**
   * kyaml writes its index annotations into every document's metadata.annotations, looking them
   * up without following aliases: an aliased metadata makes it fail, aliased annotations it drops.
   */
  checkKyamlTargets(alone: boolean): void {
    const root = this.doc.contents;
    if (!isMap(root)) return;
    // kio.ParseAll replaces a stream's only document, when its kind reads List or ResourceList
    // and it has items or a functionConfig, by its items, each then written as a document of its
    // own: an alias can lose its anchor, and the list's other fields are dropped.
    const kind = pairNamed(root, 'kind')?.value;
    if (alone && isScalar(kind) && (kind.value === 'List' || kind.value === 'ResourceList') && (pairNamed(root, 'items') ?? pairNamed(root, 'functionConfig')) !== undefined) {
      this.aliasesRefused = `is the stream's only document and a ${kind.value}, which helm's kyaml pass breaks up into its items, each written on its own`;
      if (pairNamed(root, 'functionConfig') !== undefined) this.fail(`${this.aliasesRefused}: its functionConfig is dropped`);
    }
    const metadata = pairNamed(root, 'metadata')?.value;
    if (isAlias(metadata)) this.fail("has a metadata that is an alias (*name), which helm's kyaml pass cannot annotate");
    if (!isMap(metadata)) return;
    if (isAlias(pairNamed(metadata, 'annotations')?.value)) this.fail("has metadata.annotations that are an alias (*name), which helm's kyaml pass drops");
  }

  value(node: unknown, depth: number, inFlow: boolean): JsonValue {
    if (depth > MAX_DEPTH) this.fail(`is nested deeper than ${MAX_DEPTH} levels`);
    if (++this.produced > MAX_NODES_PER_DOCUMENT) this.fail(`expands to more than ${MAX_NODES_PER_DOCUMENT} values (aliases)`);
    if (node === null || node === undefined) return null;
    if (isAlias(node)) {
      if (this.aliasesRefused !== undefined) this.fail(`${this.aliasesRefused}: an alias (*${node.source}) may lose its anchor`);
      this.check(anchorProblem(node.source));
      const target = node.resolve(this.doc);
      if (target === undefined) this.fail(`uses an unknown alias *${node.source}`);
      // A fresh copy per use: objects built from one anchor must not share state.
      return this.value(target, depth + 1, inFlow);
    }
    const anchor = (node as { anchor?: string | undefined }).anchor;
    if (anchor !== undefined) this.check(anchorProblem(anchor));
    if (isScalar(node)) return this.scalar(node, inFlow);
    if (isMap(node)) {
      this.expectCollectionTag(node, TAG.map);
      return this.map(node, depth, inFlow || node.flow === true);
    }
    if (isSeq(node)) {
      this.expectCollectionTag(node, TAG.seq);
      const flow = inFlow || node.flow === true;
      return node.items.map((item) => this.value(item, depth + 1, flow));
    }
    return this.fail('holds a YAML node of an unsupported type');
  }

  private map(node: YAMLMap, depth: number, inFlow: boolean): JsonObject {
    const own = new Map<string, OwnEntry>();
    const merges: { position: number; sources: JsonObject[] }[] = [];
    node.items.forEach((pair: unknown, position) => {
      if (!isPair(pair)) this.fail('holds a malformed mapping');
      if (inFlow && isEmptyValue(pair)) {
        this.fail('has a key without a value in a flow mapping ({a, b: 1} or {a: }), which go-yaml v2 reads as null and v3 as "": write ~ or a value');
      }
      if (this.isMergeKey(pair.key)) {
        merges.push({ position, sources: this.mergeSources(pair.value, depth, inFlow) });
        return;
      }
      const key = this.key(pair.key, inFlow);
      if (own.has(key)) this.fail(`has the key "${key}" twice (after YAML 1.1 resolution)`);
      own.set(key, { position, value: this.value(pair.value, depth + 1, inFlow) });
    });
    // Merged sources that disagree are refused: which wins is the subtle part of either reader.
    const fromMerge = new Map<string, JsonValue>();
    for (const { position, sources } of merges) {
      for (const source of sources) {
        for (const [k, v] of Object.entries(source)) {
          const mine = own.get(k);
          // v2 lets a merge override the keys before it, v3 never: both agree only when equal.
          if (mine !== undefined && mine.position < position && !sameJson(mine.value, v)) {
            this.fail(`sets the key "${k}" before a merge key (<<) that brings another value for it: go-yaml v2 (helm's kube client) lets the merge win, go-yaml v3 (kyaml) the key; put the merge first`);
          }
          if (mine !== undefined) continue;
          if (fromMerge.has(k) && !sameJson(fromMerge.get(k) as JsonValue, v)) this.fail(`merges two different values for the key "${k}" (<<)`);
          fromMerge.set(k, v);
        }
      }
    }
    const out: JsonObject = {};
    for (const [k, v] of fromMerge) defineOwn(out, k, v);
    for (const [k, { value }] of own) defineOwn(out, k, value);
    return out;
  }

  private isMergeKey(key: unknown): boolean {
    if (!isScalar(key)) return false;
    const merge = key.type === 'PLAIN' && key.value === '<<';
    if (key.tag === TAG.merge && !merge) this.fail('tags a key other than << as !!merge');
    if (merge && key.tag === '!') this.fail("has the merge key << with the tag !, which one of helm's readers merges and another may not");
    return merge && (key.tag === undefined || key.tag === TAG.merge);
  }

  private mergeSources(value: unknown, depth: number, inFlow: boolean): JsonObject[] {
    const resolved = this.value(value, depth + 1, inFlow);
    const sources = Array.isArray(resolved) ? resolved : [resolved];
    return sources.map((s) => (isObject(s) ? s : this.fail('merges (<<) something that is not a mapping')));
  }

  /**
   * A mapping key as helm's kube client reads it: go-yaml v2 resolves it as any scalar, then
   * sigs.k8s.io/yaml makes it text (1 → "1", yes → "true", 1e10 → "1e+10"); it must be short enough
   * to be read back in the post-renderer's output.
   */
  private key(node: unknown, inFlow: boolean): string {
    if (!isScalar(node)) this.fail('has a mapping key that is not a scalar');
    const v = this.scalar(node, inFlow);
    const plain = node.type === 'PLAIN' || node.type === undefined;
    const float = typeof v === 'number' && (node.tag === TAG.float || (node.tag === undefined && plain && goInteger(String(node.value)) === undefined));
    const text = goKeyText(v, float);
    if (text === undefined) {
      const what = v === null ? 'null, which helm\'s kube client cannot make text' : typeof v === 'bigint' ? 'an integer beyond int64, which helm\'s kube client cannot make text' : 'a float exactly halfway between two float32 spellings, which Go rounds either way';
      this.fail(`has the key "${String(node.value)}", ${what}: quote it`);
    }
    if (emittedKeyLength(text) > MAX_EMITTED_KEY_CHARS) this.fail(`has a key longer than go-yaml reads back (${MAX_EMITTED_KEY_CHARS} characters as JSON): "${text.slice(0, 40)}..."`);
    return text;
  }

  private scalar(node: Scalar, inFlow: boolean): PlainValue {
    const text = String(node.value);
    const tag = node.tag;
    const plain = node.type === 'PLAIN' || node.type === undefined;
    this.checkSource(node, plain, inFlow);
    if (tag === undefined) return plain ? resolvePlain(text) : text;
    switch (tag) {
      case '!': {
        // go-yaml v2 makes `! x` text; v3, and v2 again after kyaml drops the tag, resolve x.
        if (plain && resolvePlain(text) !== text) this.fail(`tags "${text}" with !, which one of helm's readers makes text and another a ${describe(resolvePlain(text))}: quote it`);
        return text;
      }
      case TAG.str:
        return text;
      case TAG.int: {
        const v = resolvePlain(text);
        if ((typeof v === 'number' || typeof v === 'bigint') && goParseInt(text.replaceAll('_', '')) !== undefined) return v;
        return this.fail(`tags "${text}" as !!int, which it is not`);
      }
      case TAG.float: {
        const v = goTaggedFloat(text);
        if (v !== undefined) return v;
        return this.fail(`tags "${text}" as !!float, which go-yaml v2 cannot read as a float`);
      }
      case TAG.bool: {
        const v = goBoolean(text);
        if (v !== undefined) return v;
        return this.fail(`tags "${text}" as !!bool, which it is not`);
      }
      case TAG.null: {
        if (resolvePlain(text) === null) return null;
        return this.fail(`tags "${text}" as !!null, which it is not`);
      }
      case TAG.binary:
        return decodeBinary(text) ?? this.fail('has a !!binary value that is not base64 of UTF-8 text');
      case TAG.merge:
        // kyaml writes a plain << value back as `!!merge <<`; go-yaml v2 reads either as the text.
        if (plain && text === '<<') return text;
        return this.fail(`tags "${text}" as !!merge, which only a << may be`);
      case TAG.timestamp:
        // go-yaml v2 keeps a timestamp's text (as sigs.k8s.io/yaml decodes into interface{}).
        if (goTimestamp(text)) return text;
        return this.fail(`tags "${text}" as !!timestamp, which go-yaml v2 does not read as one (quote it as text, or write a date such as 2001-12-14 or 2001-12-14T21:59:43Z)`);
      default:
        return this.fail(`uses the YAML tag ${tag}, which chartpilot does not accept in a manifest (only the standard ones)`);
    }
  }

  /** What only the scalar's source text shows: escapes, folding, trailing blank lines, `?` in flow. */
  private checkSource(node: Scalar, plain: boolean, inFlow: boolean): void {
    const range = node.range;
    if (range === null || range === undefined) return;
    const source = this.source.slice(range[0], range[1]);
    if (plain) {
      if (inFlow && source.includes('?')) this.fail(`has a ? inside the plain value "${source}" in a flow collection, where go-yaml ends the value: quote it`);
      return;
    }
    if (node.type === 'QUOTE_DOUBLE') this.check(doubleQuotedProblem(source));
    if (node.type === 'BLOCK_FOLDED') this.check(foldedProblem(source));
    if (node.type === 'BLOCK_FOLDED' || node.type === 'BLOCK_LITERAL') {
      const header = source.split('\n', 1)[0] ?? '';
      const rest = this.source.slice(range[2], this.doc.range?.[2] ?? this.source.length);
      if (header.includes('+') && String(node.value).endsWith('\n\n') && rest.trim() === '') {
        this.fail('ends with a keep block scalar (|+ or >+) whose trailing blank lines helm trims off the document: strip them or move the key up');
      }
    }
  }

  private expectCollectionTag(node: Node, allowed: string): void {
    const tag = (node as { tag?: string | undefined }).tag;
    if (tag !== undefined && tag !== allowed) this.fail(`uses the YAML tag ${tag} on a collection, which chartpilot does not accept`);
  }

  private check(problem: string | undefined): void {
    if (problem !== undefined) this.fail(problem);
  }

  private fail(what: string): never {
    throw new ManifestResolveError(`manifest document ${this.n} ${what}`);
  }
}

/** The entry of a mapping whose key is the text `name` (plain or quoted), if any. */
function pairNamed(map: YAMLMap, name: string): Pair | undefined {
  return map.items.find((p) => isScalar(p.key) && p.key.value === name);
}

/** `{a}` or `{a: }`: no value at all, or an empty plain one. */
function isEmptyValue(pair: Pair): boolean {
  const v = pair.value;
  return v === null || v === undefined || (isScalar(v) && (v.type === 'PLAIN' || v.type === undefined) && v.source === '');
}

/** Own data property even for `__proto__`: a key is data, never a prototype. */
function defineOwn(o: JsonObject, key: string, value: JsonValue): void {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
}

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function describe(v: JsonValue): string {
  if (v === null) return 'null';
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
