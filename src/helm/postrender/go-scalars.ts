/**
 * Plain scalars as go-yaml v2 resolves them (its resolve.go), and its base-0 integers and
 * !!binary decoding: the resolver's scalar rules (resolve.ts), kept apart from its walk.
 */
import { Buffer } from 'node:buffer';

import { ManifestResolveError } from './manifest-error.js';

/** What a plain scalar can resolve to. */
export type PlainValue = null | boolean | number | bigint | string;

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
export function resolvePlain(text: string): PlainValue {
  if (NULL.has(text)) return null;
  const bool = goBoolean(text);
  if (bool !== undefined) return bool;
  if (INFINITE.has(text)) throw new ManifestResolveError(`the value ${text} (infinity or NaN) cannot be sent to Kubernetes`);
  const first = text[0] ?? '';
  if (first === '.') {
    return /^\.[0-9]+([eE][-+]?[0-9]+)?$/.test(text) ? Number(text) : text;
  }
  if (!/^[-+0-9]$/.test(first)) return text;
  const int = goInteger(text);
  if (int !== undefined) return exactInteger(int);
  const plain = text.replaceAll('_', '');
  if (YAML_FLOAT.test(plain)) {
    const f = Number(plain);
    if (Number.isFinite(f)) return f;
    throw new ManifestResolveError(`the number ${text} is too large for Kubernetes`);
  }
  return text;
}

/** The YAML 1.1 booleans go-yaml v2 knows (y, yes, on, true, … in three casings), or undefined. */
export function goBoolean(text: string): boolean | undefined {
  if (TRUE.has(text)) return true;
  if (FALSE.has(text)) return false;
  return undefined;
}

/**
 * The integer go-yaml v2 resolves a plain scalar to, underscores dropped: strconv.ParseInt
 * (int64), then strconv.ParseUint (no sign allowed), as go-yaml tries them; undefined when it is
 * no integer (a float, or text).
 */
export function goInteger(text: string): bigint | undefined {
  if (!/^[-+0-9]/.test(text)) return undefined;
  const plain = text.replaceAll('_', '');
  const int = goParseInt(plain);
  return int !== undefined && (int <= INT64_MAX || !/^[-+]/.test(plain)) ? int : undefined;
}

/**
 * A scalar tagged !!float as go-yaml v2 decodes it: a float, or an int64 made a float64 (so
 * 9007199254740993 is 9007199254740992); an integer beyond int64 it refuses, as anything else.
 */
export function goTaggedFloat(text: string): number | undefined {
  const int = goInteger(text);
  if (int !== undefined) return int <= INT64_MAX ? Number(int) : undefined;
  const v = resolvePlain(text);
  return typeof v === 'number' ? v : undefined;
}

/**
 * Whether go-yaml v2 decodes this text as a !!timestamp (its parseTimestamp, time.Parse with the
 * layouts 2006-1-2T15:4:5.999999999Z07:00, the same with t, 2006-1-2 15:4:5.999999999 and
 * 2006-1-2, days checked against the month): it then keeps the text, and fails on any other. A
 * subset of what Go takes (no comma before the fraction, offsets within ±23:59), never more.
 */
export function goTimestamp(text: string): boolean {
  const m = /^([0-9]{4})-([0-9][0-9]?)-([0-9][0-9]?)(?:([Tt ])([0-9][0-9]?):([0-9][0-9]?):([0-9][0-9]?)(?:\.[0-9]+)?(Z|[+-]([0-9]{2}):([0-9]{2}))?)?$/.exec(text);
  if (m === null) return false;
  const [year, month, day, hour, minute, second, offHour, offMinute] = [m[1], m[2], m[3], m[5], m[6], m[7], m[9], m[10]].map((d) => (d === undefined ? 0 : Number(d))) as [number, number, number, number, number, number, number, number];
  const separator = m[4];
  const zone = m[8];
  // The T and t layouts require a zone, the blank one has none.
  if (separator !== undefined && (separator === ' ') !== (zone === undefined)) return false;
  if (month < 1 || month > 12 || day < 1 || day > new Date(Date.UTC(year, month, 0)).getUTCDate()) return false;
  return hour <= 23 && minute <= 59 && second <= 59 && offHour <= 23 && offMinute <= 59;
}

/**
 * A mapping key as helm's kube client makes it text (sigs.k8s.io/yaml, after go-yaml v2 decoded
 * it): text stays, a boolean is true/false, an integer its decimal digits, a float what
 * strconv.FormatFloat(f, 'g', -1, 32) writes (float32 precision: 1e10 is "1e+10", 0.1 "0.1",
 * 3.141592653589793 "3.1415927"). A null key, and an integer beyond int64 (go-yaml's uint64), it
 * refuses; a float exactly halfway between two shortest spellings is refused here too (Go breaks
 * such ties to even, but up at a power of two, and its algorithm has changed between versions):
 * undefined.
 */
export function goKeyText(value: PlainValue, float: boolean): string | undefined {
  if (value === null) return undefined;
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (float) return goFloat32Text(Number(value));
  const int = BigInt(value);
  return int >= INT64_MIN && int <= INT64_MAX ? int.toString() : undefined;
}

/**
 * strconv.FormatFloat(f, 'g', -1, 32): the shortest decimal within the float32's rounding
 * interval (its ends included when the mantissa is even), the nearest such; %e form when the
 * exponent is below -4 or at least 6. Computed exactly, in integers; undefined for a tie.
 */
export function goFloat32Text(f64: number): string | undefined {
  const f = Math.fround(f64);
  if (f === Infinity) return '.inf'; // sigs.k8s.io/yaml's spelling of +Inf
  if (f === -Infinity) return '-.inf';
  if (f === 0) return Object.is(f, -0) ? '-0' : '0';
  const sign = f < 0 ? '-' : '';
  const shortest = shortestFloat32(Math.abs(f));
  if (shortest === undefined) return undefined;
  const { digits, exp } = shortest;
  if (exp < -4 || exp >= 6) {
    const e = `${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
    return `${sign}${digits[0] ?? ''}${digits.length > 1 ? `.${digits.slice(1)}` : ''}e${e}`;
  }
  if (exp < 0) return `${sign}0.${'0'.repeat(-exp - 1)}${digits}`;
  const fraction = digits.slice(exp + 1);
  return `${sign}${digits.slice(0, exp + 1).padEnd(exp + 1, '0')}${fraction === '' ? '' : `.${fraction}`}`;
}

/** The shortest digits (no trailing zeros) and decimal exponent of a positive float32, or undefined for a tie. */
function shortestFloat32(f: number): { digits: string; exp: number } | undefined {
  const view = new DataView(new ArrayBuffer(4));
  view.setFloat32(0, f);
  const bits = view.getUint32(0);
  const biased = (bits >>> 23) & 0xff;
  const fraction = bits & 0x7fffff;
  // f = m·2^e; the interval's ends are the midpoints to its neighbours, the lower one nearer at a power of two.
  const m = BigInt(biased === 0 ? fraction : fraction | 0x800000);
  const e = biased === 0 ? -149 : biased - 150;
  const lopsided = fraction === 0 && biased > 1;
  const inclusive = m % 2n === 0n;
  // The distance of d·10^x from f, exactly (both sides times 10^t·2^s to make integers), or
  // undefined outside the interval; the interval's ends, in units of 2^(e-2), are 4m∓2 (4m-1 below
  // a power of two) and 4m+2.
  const distance = (d: bigint, x: number): bigint | undefined => {
    const t = BigInt(Math.max(0, -x));
    const s = BigInt(Math.max(0, 2 - e));
    const c = d * 10n ** (BigInt(x) + t) * 2n ** s;
    const unit = 10n ** t * 2n ** (BigInt(e - 2) + s);
    const [lower, centre, upper] = [(lopsided ? 4n * m - 1n : 4n * m - 2n) * unit, 4n * m * unit, (4n * m + 2n) * unit];
    if (c < lower || c > upper || (!inclusive && (c === lower || c === upper))) return undefined;
    return c > centre ? c - centre : centre - c;
  };
  for (let p = 1; p <= 9; p++) {
    const [mantissa = '', x10 = '0'] = f.toExponential(p - 1).split('e');
    const nearest = BigInt(mantissa.replace('.', ''));
    const x = Number(x10) - (p - 1);
    let best: { d: bigint; distance: bigint } | undefined;
    let tie = false;
    for (const d of [nearest - 1n, nearest, nearest + 1n]) {
      if (d <= 0n) continue;
      const off = distance(d, x);
      if (off === undefined) continue;
      if (best !== undefined && off === best.distance) tie = true;
      else if (best === undefined || off < best.distance) [best, tie] = [{ d, distance: off }, false];
    }
    if (tie) return undefined;
    if (best !== undefined) {
      const all = best.d.toString();
      return { digits: all.replace(/0+$/, ''), exp: x + all.length - 1 };
    }
  }
  throw new Error(`no float32 digits for ${String(f)}`);
}

function exactInteger(v: bigint): number | bigint {
  return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
}

/** Go's strconv.ParseInt(s, 0, …) syntax: sign, then 0x/0o/0b prefix, a leading-0 octal, or decimal. */
export function goParseInt(s: string): bigint | undefined {
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
export function decodeBinary(text: string): string | undefined {
  const compact = text.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact) || compact.length % 4 !== 0) return undefined;
  const bytes = Buffer.from(compact, 'base64');
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}
