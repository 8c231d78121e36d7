// Polling with a deadline: how integration tests wait for anything (never a fixed sleep).
import { setTimeout as sleep } from 'node:timers/promises';
import { inspect } from 'node:util';
import { errorMessage } from '../../src/lib/errors.js';

/**
 * Polls probe until it returns something other than undefined, null or false, and returns that.
 * Probe errors count as "not yet". On timeout the Error names `what` and the last value or error.
 */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | null | false>,
  opts: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const intervalMs = opts.intervalMs ?? 250;
  const deadline = Date.now() + timeoutMs;
  let last = 'never completed';
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== null && value !== false) return value;
      last = `returned ${inspect(value)}`;
    } catch (err) {
      last = `threw: ${errorMessage(err)}`;
    }
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`timed out after ${String(timeoutMs / 1000)} s waiting for ${what}; last probe ${last}`);
    await sleep(Math.min(intervalMs, left));
  }
}

/** `wait`, but a failure also says `explain()` (what was last seen, an operator's log tail). */
export async function explained<T>(wait: Promise<T>, explain: () => string): Promise<T> {
  try {
    return await wait;
  } catch (err) {
    throw new Error(`${errorMessage(err)}\n${explain()}`, { cause: err });
  }
}
