/**
 * The timings of a shard ring, all from one flag (--shard-lease-duration): the renew deadline and
 * retry period keep controller-runtime's proportions (15 s : 10 s : 2 s), so a member gives up its
 * CRs (renew deadline) well before the sharder judges it dead (two lease durations).
 */
export interface ShardTimings {
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
}

export const DEFAULT_SHARD_LEASE_DURATION_MS = 15_000;
/** Leases are written in whole seconds. */
export const MIN_SHARD_LEASE_DURATION_MS = 2_000;

export function shardTimings(leaseDurationMs: number = DEFAULT_SHARD_LEASE_DURATION_MS): ShardTimings {
  if (!(Number.isInteger(leaseDurationMs) && leaseDurationMs >= MIN_SHARD_LEASE_DURATION_MS && leaseDurationMs % 1000 === 0)) {
    throw new RangeError(`shard lease duration must be whole seconds, at least ${String(MIN_SHARD_LEASE_DURATION_MS / 1000)} s; got ${String(leaseDurationMs)} ms`);
  }
  return { leaseDurationMs, renewDeadlineMs: (leaseDurationMs * 2) / 3, retryPeriodMs: leaseDurationMs / 7.5 };
}
