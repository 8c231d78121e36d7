/**
 * Go `time.ParseDuration`, because watches.yaml `reconcilePeriod` and the `--reconcile-period`
 * flag are written for operator-sdk, which parses them with Go. Accepting exactly Go's grammar
 * means a file or flag that works there works here, and nothing else slips through.
 */

export type DurationResult = { ok: true; ms: number } | { ok: false; reason: string };

const UNIT_MS: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  'µs': 1e-3, // U+00B5 micro sign
  'μs': 1e-3, // U+03BC Greek mu
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

// Go's limit: durations are int64 nanoseconds (about 292 years).
const MAX_MS = 9_223_372_036_854.775;

export const DURATION_EXAMPLES = 'such as 30s, 1m30s, 2h or 500ms';

/** Parses a Go duration (`1h2m3.5s`, `-5m`, `0`) into milliseconds. */
export function parseGoDuration(text: string): DurationResult {
  const bad = (why: string): DurationResult => ({
    ok: false,
    reason: `"${text}" is not a Go duration (${why}); write a number followed by a unit (ns, us, ms, s, m, h), ${DURATION_EXAMPLES}`,
  });
  let s = text;
  let sign = 1;
  if (s.startsWith('-') || s.startsWith('+')) {
    if (s.startsWith('-')) sign = -1;
    s = s.slice(1);
  }
  // Go accepts a bare "0" (and only zero) without a unit.
  if (s === '0') return { ok: true, ms: 0 };
  if (s === '') return bad('it is empty');
  let total = 0;
  const part = /^(\d*)(?:\.(\d*))?([^\d.]*)/u;
  while (s !== '') {
    const m = part.exec(s);
    const whole = m?.[1] ?? '';
    const frac = m?.[2];
    const unit = m?.[3] ?? '';
    if (m === null || (whole === '' && (frac === undefined || frac === ''))) {
      return bad(`expected a number at "${s}"`);
    }
    if (unit === '') return bad(`missing unit after ${m[0]}`);
    const factor = UNIT_MS[unit];
    if (factor === undefined) return bad(`unknown unit "${unit}"`);
    total += Number(`${whole === '' ? '0' : whole}.${frac ?? ''}0`) * factor;
    s = s.slice(m[0].length);
  }
  if (total > MAX_MS) return bad('it is longer than Go allows');
  // Round to whole nanoseconds, as Go does, so 1.1s is 1100 ms and not 1100.0000000000002.
  return { ok: true, ms: (sign * Math.round(total * 1e6)) / 1e6 };
}
