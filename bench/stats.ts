/** Percentiles over the N CRs of a phase (nearest rank: every figure is one CR's real value). */

export interface Distribution {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

/** The value at or below which p % of the values lie (nearest-rank method); NaN for no values. */
export function percentile(sortedAscending: readonly number[], p: number): number {
  const n = sortedAscending.length;
  if (n === 0) return Number.NaN;
  const rank = Math.min(n, Math.max(1, Math.ceil((p / 100) * n)));
  return sortedAscending[rank - 1] ?? Number.NaN;
}

/** undefined for no values (the figure does not apply), never NaN in the results file. */
export function distribution(values: readonly number[]): Distribution | undefined {
  const finite = values.filter((v) => Number.isFinite(v));
  if (finite.length === 0) return undefined;
  const sorted = [...finite].sort((a, b) => a - b);
  return {
    count: sorted.length,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1] ?? Number.NaN,
  };
}
