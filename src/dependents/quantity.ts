/**
 * Kubernetes resource quantities (`100m`, `0.1`, `1Gi`, `1073741824`, `1e3`) reduced to one exact
 * number, because the API server rewrites what a chart wrote (`0.1` comes back as `100m`, `1.5Gi`
 * as `1536Mi`) and a rewritten value is not a changed one.
 */

const QUANTITY = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)|[eE]([+-]?\d+))?$/;

const BINARY_POWER: Readonly<Record<string, number>> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
const DECIMAL_EXPONENT: Readonly<Record<string, number>> = { n: -9, u: -6, m: -3, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
/** Beyond this an exponent is not a quantity anyone means; refusing it keeps the bigints small. */
const MAX_EXPONENT = 64;

/**
 * The quantity in nano-units, rounded up as the API server rounds precision below 1n; undefined
 * when `value` is not a quantity.
 */
export function quantityNanos(value: string | number): bigint | undefined {
  const text = typeof value === 'number' ? (Number.isFinite(value) ? String(value) : '') : value.trim();
  const m = QUANTITY.exec(text);
  if (!m) return undefined;
  const [, sign = '', number = '', suffix, exponent] = m;
  const [whole = '', fraction = ''] = number.split('.');
  let num = BigInt((whole || '0') + fraction);
  let pow10 = -fraction.length + 9; // nano-units
  let pow2 = 0;
  if (suffix !== undefined) {
    if (suffix in BINARY_POWER) pow2 = BINARY_POWER[suffix] ?? 0;
    else pow10 += DECIMAL_EXPONENT[suffix] ?? 0;
  } else if (exponent !== undefined) {
    const e = Number(exponent);
    if (Math.abs(e) > MAX_EXPONENT) return undefined;
    pow10 += e;
  }
  num *= 2n ** BigInt(pow2);
  if (pow10 >= 0) num *= 10n ** BigInt(pow10);
  else {
    const den = 10n ** BigInt(-pow10);
    num = (num + den - 1n) / den; // round up
  }
  return sign === '-' ? -num : num;
}

/** Whether two spellings are the same quantity (false when either is not a quantity). */
export function sameQuantity(a: string | number, b: string | number): boolean {
  const x = quantityNanos(a);
  return x !== undefined && x === quantityNanos(b);
}
