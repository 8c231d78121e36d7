/** Exponential backoff shared by the work queue (per-key retries) and informers (reconnects). */

export interface Backoff {
  /** Delay of the first retry. */
  readonly initialMs: number;
  /** No delay is ever longer. */
  readonly maxMs: number;
  /** Spread of the random jitter as a fraction of the delay: 0.2 → ±20 %. */
  readonly jitter: number;
}

/**
 * Delay before retry number `attempt` (1-based): initialMs · 2^(attempt-1), jittered, capped at
 * maxMs. Jitter keeps many clients that failed together from retrying in lockstep.
 */
export function backoffDelay(attempt: number, b: Backoff, random: () => number = Math.random): number {
  const exp = Math.min(b.maxMs, b.initialMs * 2 ** Math.min(Math.max(0, attempt - 1), 52));
  return Math.min(b.maxMs, exp * (1 + b.jitter * (2 * random() - 1)));
}
