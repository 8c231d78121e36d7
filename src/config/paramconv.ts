/**
 * The names a CR's spec keys have when ansible-operator hands them to a role as variables
 * (`snakeCaseParameters: true`): its `paramconv.ToSnake` (operator-framework/ansible-operator-plugins,
 * internal/ansible/paramconv/paramconv.go), ported rule for rule, and the inverse the generators
 * need: which spec key (camelCase) becomes a given role option (snake_case). ToSnake is not
 * one-to-one (`fooBar`, `foo_bar` and `FooBar`... all meet), so the inverse is a search checked
 * against ToSnake, not a formula: a name that no key converts to is reported, never guessed.
 */

const WORD_MAPPING: Readonly<Record<string, string>> = { http: 'HTTP', url: 'URL', ip: 'IP' };
// Go ranges over a map in random order; the three words never overlap, so the order does not matter.
const SPECIAL_WORDS = Object.values(WORD_MAPPING);

/** `([a-zA-Z])(\d+)([a-zA-Z](\d+))` → `$1 $2 $3`, as paramconv separates numbers (e.g. `a12b3` → `a 12 b3`). */
function addWordBoundariesToNumbers(s: string): string {
  return s.replace(/([a-zA-Z])(\d+)([a-zA-Z](\d+))/gu, '$1 $2 $3');
}

const isUpper = (c: string | undefined): boolean => c !== undefined && c >= 'A' && c <= 'Z';
const isLower = (c: string | undefined): boolean => c !== undefined && c >= 'a' && c <= 'z';

/** paramconv's `translateWord`: HTTP/URL/IP upper-cased, other words title-cased after the first. */
function translateWord(word: string, initCase: boolean): string {
  const mapped = WORD_MAPPING[word];
  if (mapped !== undefined) return mapped;
  // cases.Title: first letter upper, the rest lower (ASCII names only here).
  return initCase && word !== '' ? word.charAt(0).toUpperCase() + word.slice(1).toLowerCase() : word;
}

/** paramconv.ToCamel: `log_level` → `logLevel`, `image_url` → `imageURL`. */
export function toCamel(input: string): string {
  const s = addWordBoundariesToNumbers(input).replace(/^ +| +$/gu, '');
  const bits: string[] = [];
  let n = '';
  for (const v of s) {
    if (v === '_' || v === ' ' || v === '-') {
      bits.push(n);
      n = '';
    } else n += v;
  }
  bits.push(n);
  return bits.map((b, i) => translateWord(b, i !== 0)).join('');
}

/** paramconv's `preprocessWordMapping`: `_` around HTTP/URL/IP (and their plurals) so ToSnake splits them. */
function preprocessWordMapping(input: string): string {
  let value = input;
  for (const word of SPECIAL_WORDS) {
    const idx = value.indexOf(word);
    if (idx < 0) continue;
    const end = idx + word.length;
    if (end - 1 === value.length - 1) {
      value = `${value.slice(0, idx)}_${value.slice(idx)}`;
    } else if (value[end] === 's') {
      if (end === value.length - 1) value = `${value.slice(0, idx)}_${value.slice(idx, end)}S`;
      else if (idx === 0) value = `${value.slice(0, end)}S_${value.slice(end + 1)}`;
      else value = `${value.slice(0, idx)}_${value.slice(idx, end)}S_${value.slice(end + 1)}`;
    } else if (idx === 0) {
      value = `${value.slice(0, end)}_${value.slice(end)}`;
    } else {
      value = `${value.slice(0, idx)}_${value.slice(idx, end)}_${value.slice(end)}`;
    }
  }
  return value;
}

/** paramconv.ToSnake: what ansible-operator turns a spec key into (`logLevel` → `log_level`). */
export function toSnake(input: string): string {
  let s = addWordBoundariesToNumbers(input).replace(/^ +| +$/gu, '');
  if (s === '') return ''; // Go would panic on an empty key; the API server never sends one.
  const prefix = isUpper(s[0]) ? '_' : '';
  const bits: string[] = [];
  let n = '';
  let iReal = -1;
  s = preprocessWordMapping(s);
  for (let i = 0; i < s.length; i++) {
    const v = s[i] ?? '';
    iReal++;
    const next = s[i + 1];
    const nextCaseIsChanged = next !== undefined && ((isUpper(v) && isLower(next)) || (isLower(v) && isUpper(next)));
    if (iReal > 0 && n[n.length - 1] !== '_' && nextCaseIsChanged) {
      if (isUpper(v)) {
        bits.push(n.toLowerCase());
        n = v;
        iReal = 0;
      } else if (isLower(v)) {
        bits.push((n + v).toLowerCase());
        n = '';
        iReal = -1;
      }
      // Go drops any other character here (e.g. a digit); so do we.
    } else if (v === ' ' || v === '_' || v === '-') {
      bits.push(n.toLowerCase());
      n = '';
      iReal = -1;
    } else {
      n += v;
    }
  }
  bits.push(n.toLowerCase());
  const joined = bits.join('_');
  return WORD_MAPPING[bits[0] ?? ''] === undefined ? prefix + joined : joined;
}

export type SpecKey = { readonly ok: true; readonly key: string } | { readonly ok: false; readonly why: string };

/**
 * The spec key a CR must use for the role variable `option`: with snake-casing on, the camelCase
 * key ToSnake turns into it (else the option's own name, when ToSnake leaves that unchanged);
 * without, the option's name. Not found: the option cannot be set from the spec at all.
 */
export function specKeyFor(option: string, snakeCaseParameters: boolean): SpecKey {
  if (!snakeCaseParameters) return { ok: true, key: option };
  const camel = toCamel(option);
  // ToCamel upper-cases a leading HTTP/URL/IP (`http_proxy` → `HTTPProxy`, which ToSnake turns
  // into `_http_proxy`): try the plain camelCase spelling too, then the name itself.
  const plain = option.split(/[_-]/u).map((b, i) => (i === 0 ? b : b.charAt(0).toUpperCase() + b.slice(1))).join('');
  for (const key of [camel, plain]) if (key !== '' && toSnake(key) === option) return { ok: true, key };
  if (toSnake(option) === option) return { ok: true, key: option };
  return {
    ok: false,
    why: `no spec key becomes the variable "${option}": ansible-operator turns spec keys into snake_case (e.g. ${camel} → ${toSnake(camel)}); rename the option to lower-case snake_case, or set snakeCaseParameters: false in watches.yaml`,
  };
}
