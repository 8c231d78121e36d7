/**
 * Time as an injectable edge: the work queue and informers schedule through a `Clock` so tests can
 * drive time by hand instead of sleeping.
 */

/** Opaque handle returned by `Clock.setTimeout`; only ever passed back to `clearTimeout`. */
export type TimerHandle = object | number;

export interface Clock {
  /** Milliseconds on a monotonic scale (not wall time): only differences are meaningful. */
  now(): number;
  /** Schedules `fn` once after `ms`. Real timers never keep the process alive on their own. */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

/**
 * The process clock. `performance.now()` rather than `Date.now()` because a wall-clock jump (NTP,
 * suspend) must not reorder scheduled work. Timers are `unref`'d: pending requeues and backoffs are
 * never a reason for the process to stay up, so shutdown cannot hang on them.
 */
export const realClock: Clock = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, Math.max(0, ms));
    t.unref();
    return t;
  },
  clearTimeout: (handle) => {
    clearTimeout(handle as NodeJS.Timeout);
  },
};

/**
 * Wall time (ms since the epoch), for comparing with timestamps the API server wrote (e.g. when a
 * release Secret was created) and for writing them (condition transition times).
 */
export interface WallClock {
  now(): number;
}

export const systemWallClock: WallClock = { now: () => Date.now() };
