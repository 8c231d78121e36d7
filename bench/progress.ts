/**
 * Progress of a long wave (10,000 CRs): a line with the rate and the time the rest would take, and
 * when the bench's progress look may skip listing the CRs. Pure; contenders.ts and scenario.ts use them.
 */

/**
 * Whether a progress look lists the CRs too. That list is of full objects (status conditions,
 * managed fields): at 10,000 CRs tens of MB, which the API server serializes and the bench parses
 * on the same cores as the operator, every 5 s. No CR can be at the goal before its release is, so
 * while some release is not, the CRs are listed at most every `sparseMs` (for the progress line);
 * once every release is, at every look, so convergence is seen as soon as before.
 */
export function crLookDue(released: number, total: number, sinceLastMs: number, sparseMs: number): boolean {
  return released >= total || sinceLastMs >= sparseMs;
}

/**
 * A progress line for long waves (10,000 CRs): done of total, the rate over the last minute of
 * samples (and over the whole wave), and when the rest would be done at the recent rate.
 * `samples` are [ms since the phase start, done] in time order.
 */
export function progressRate(samples: readonly (readonly [number, number])[], total: number): string {
  const last = samples[samples.length - 1];
  if (last === undefined) return `0/${String(total)}`;
  const [t, done] = last;
  const windowStart = samples.find(([ts]) => ts >= t - 60_000) ?? last;
  const recent = t - windowStart[0] > 0 ? ((done - windowStart[1]) * 1000) / (t - windowStart[0]) : Number.NaN;
  const overall = t > 0 ? (done * 1000) / t : Number.NaN;
  const left = total - done;
  const eta = Number.isFinite(recent) && recent > 0 ? `, the rest in ~${formatSeconds(left / recent)} at the recent rate` : '';
  const rate = (r: number): string => (Number.isFinite(r) ? r.toFixed(1) : '–');
  return `${String(done)}/${String(total)} after ${formatSeconds(t / 1000)}: ${rate(recent)}/s over the last minute, ${rate(overall)}/s overall${left > 0 ? eta : ''}`;
}

function formatSeconds(s: number): string {
  if (s < 120) return `${s.toFixed(0)} s`;
  const m = Math.floor(s / 60);
  return m < 120 ? `${String(m)} min ${String(Math.round(s - m * 60))} s` : `${(s / 3600).toFixed(1)} h`;
}
