/**
 * watches.yaml `overrideValues`: Helm `--set` paths (`image.tag`, `a\.b`, `list[0].name`) and
 * their values, applied the way `helm --set` (Helm's strvals package) applies them, because that
 * is what operator-sdk calls for every override.
 */
import { clonePlain, getOwn, isPlainMap, setOwn, type PlainMap } from '../lib/json.js';

export type PathSegment = { readonly key: string } | { readonly index: number };

// Helm refuses indexes above this, to stop `a[99999999]=x` from allocating a huge list.
const MAX_INDEX = 65536;

export type PathResult = { ok: true; segments: PathSegment[] } | { ok: false; reason: string };

/**
 * Splits a `--set` path into keys and list indexes. `\` escapes the next character, so `a\.b`
 * is the single key "a.b".
 */
export function parseSetPath(path: string): PathResult {
  const bad = (why: string): PathResult => ({
    ok: false,
    reason: `"${path}" is not a valid Helm --set path (${why}); write keys separated by dots, e.g. image.tag, a\\.dotted\\.key or list[0].name`,
  });
  if (path === '') return bad('it is empty');
  const segments: PathSegment[] = [];
  let i = 0;
  // After a key or index we expect '.', '[' or the end; at the start and after '.', a key.
  let expectKey = true;
  while (i < path.length || expectKey) {
    if (expectKey) {
      let key = '';
      while (i < path.length) {
        const c = path.charAt(i);
        if (c === '\\') {
          if (i + 1 >= path.length) return bad('it ends with a lone backslash');
          key += path.charAt(i + 1);
          i += 2;
          continue;
        }
        if (c === '.' || c === '[') break;
        if (c === ']' || c === '=' || c === ',') return bad(`unexpected "${c}" at position ${i + 1}; escape it as \\${c}`);
        key += c;
        i++;
      }
      if (key === '') {
        if (segments.length === 0 && path.charAt(i) === '[') return bad('it must start with a key, not a list index');
        return bad(i >= path.length && segments.length > 0 ? 'it ends with "."' : `empty key at position ${i + 1}`);
      }
      segments.push({ key });
      expectKey = false;
      continue;
    }
    const c = path.charAt(i);
    if (c === '.') {
      expectKey = true;
      i++;
    } else if (c === '[') {
      const close = path.indexOf(']', i);
      if (close === -1) return bad('"[" without a closing "]"');
      const digits = path.slice(i + 1, close);
      if (!/^\d+$/u.test(digits)) return bad(`list index "[${digits}]" must be a whole number >= 0`);
      const index = Number(digits);
      if (index > MAX_INDEX) return bad(`list index ${index} is above Helm's limit of ${MAX_INDEX}`);
      segments.push({ index });
      i = close + 1;
    } else {
      return bad(`unexpected "${c}" at position ${i + 1}`);
    }
  }
  return { ok: true, segments };
}

export interface OverrideOptions {
  /**
   * Keep every value a string, as `helm --set-string` and operator-sdk's own helm-operator do.
   * Default false: values are typed like `helm --set` (and helm-operator-plugins) types them.
   */
  readonly stringValues?: boolean;
}

/**
 * A `--set` value: `\` escapes the next character, `{a,b}` is a list, and unless `stringValues`
 * is set, `true`/`false`, `null` and integers become booleans, null and numbers.
 */
export function parseSetValue(raw: string, options: OverrideOptions = {}): unknown {
  const typed = options.stringValues !== true;
  if (raw.startsWith('{') && raw.endsWith('}') && !raw.endsWith('\\}')) {
    const body = raw.slice(1, -1);
    if (body === '') return [];
    return splitUnescaped(body).map((item) => typedValue(item, typed));
  }
  return typedValue(unescape(raw), typed);
}

function unescape(s: string): string {
  // Helm drops a trailing lone backslash and keeps the character after any other one.
  return s.replace(/\\(.?)/gsu, '$1');
}

function splitUnescaped(s: string): string[] {
  const items: string[] = [];
  let cur = '';
  for (let i = 0; i < s.length; i++) {
    const c = s.charAt(i);
    if (c === '\\') {
      cur += s.charAt(i + 1);
      i++;
    } else if (c === ',') {
      items.push(cur);
      cur = '';
    } else cur += c;
  }
  items.push(cur);
  return items;
}

/** Helm strvals typedVal: the rules `--set` uses to turn text into YAML types. */
function typedValue(val: string, typed: boolean): unknown {
  if (!typed) return val;
  const lower = val.toLowerCase();
  if (lower === 'true') return true;
  if (lower === 'false') return false;
  if (lower === 'null') return null;
  if (val === '0') return 0;
  // Helm: integers that do not start with 0, within int64. Beyond 2^53 a JS number would lose
  // digits, so those stay strings rather than silently changing.
  if (!val.startsWith('0') && /^[+-]?\d+$/u.test(val)) {
    const big = BigInt(val);
    if (big >= -(2n ** 63n) && big < 2n ** 63n) {
      const n = Number(big);
      if (Number.isSafeInteger(n)) return n;
    }
  }
  return val;
}

/**
 * Applies overrides over `base` the way Helm's strvals.ParseInto does (list items the override
 * does not name are kept), returning a new object; `base` is not mutated. Overrides apply in
 * the order given, so for `a: x` followed by `a.b: y` the later one wins, as with repeated --set.
 */
export function applyOverrides(
  base: PlainMap,
  overrides: Readonly<Record<string, string>>,
  options: OverrideOptions = {},
): PlainMap {
  const out = clonePlain(base) as PlainMap;
  for (const [path, raw] of Object.entries(overrides)) {
    const parsed = parseSetPath(path);
    // Paths were validated when watches.yaml was loaded; a bad one here is a caller bug.
    if (!parsed.ok) throw new TypeError(`invalid override path: ${parsed.reason}`);
    setPath(out, parsed.segments, parseSetValue(raw, options));
  }
  return out;
}

/** The overrides alone as a nested values tree, e.g. {"a.b": "1"} → {a: {b: 1}}. */
export function overrideValuesToTree(
  overrides: Readonly<Record<string, string>>,
  options: OverrideOptions = {},
): PlainMap {
  return applyOverrides({}, overrides, options);
}

type Container = PlainMap | unknown[];

/** Sets `value` at `segments` in `root` (mutated), making maps and lists on the way as `--set` does. */
export function setPath(root: PlainMap, segments: readonly PathSegment[], value: unknown): void {
  let container: Container = root;
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i];
    const next = segments[i + 1];
    if (seg === undefined) return;
    if (next === undefined) {
      put(container, seg, value);
      return;
    }
    const existing = get(container, seg);
    let child: Container;
    if ('key' in next) child = isPlainMap(existing) ? existing : {};
    else child = Array.isArray(existing) ? existing : [];
    put(container, seg, child);
    container = child;
  }
}

function get(container: Container, seg: PathSegment): unknown {
  if ('key' in seg) return Array.isArray(container) ? undefined : getOwn(container, seg.key);
  return Array.isArray(container) ? container[seg.index] : undefined;
}

function put(container: Container, seg: PathSegment, value: unknown): void {
  if (Array.isArray(container)) {
    if (!('index' in seg)) return; // setPath only pairs keys with maps and indexes with lists
    // Helm pads a list with nulls up to the index it sets.
    while (container.length < seg.index) container.push(null);
    container[seg.index] = value;
  } else if ('key' in seg) {
    setOwn(container, seg.key, value);
  }
}
