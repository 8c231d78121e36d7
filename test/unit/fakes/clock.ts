/**
 * A hand-driven `Clock` for tests: time moves only when the test calls `advance`, and due timers
 * fire in time order. Between timer callbacks `advance` lets pending promise chains run, so code
 * that awaits inside a timer callback makes progress the way it would under real time.
 */
import { setImmediate as tick } from 'node:timers/promises';
import type { Clock, TimerHandle } from '../../../src/lib/clock.js';

interface FakeTimer {
  readonly id: number;
  readonly at: number;
  readonly fn: () => void;
}

export class FakeClock implements Clock {
  private current: number;
  private nextId = 1;
  private readonly timers = new Map<number, FakeTimer>();

  constructor(start = 1_000) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = this.nextId++;
    this.timers.set(id, { id, at: this.current + Math.max(0, ms), fn });
    return id;
  }

  clearTimeout(handle: TimerHandle): void {
    if (typeof handle === 'number') this.timers.delete(handle);
  }

  /** Number of timers not yet fired or cleared. */
  get pending(): number {
    return this.timers.size;
  }

  /** Delays (from now) of the pending timers, soonest first. */
  pendingDelays(): number[] {
    return [...this.timers.values()].map((t) => t.at - this.current).sort((a, b) => a - b);
  }

  /**
   * Moves time forward by `ms`, firing every timer that falls due (including ones scheduled by
   * earlier callbacks within the window), settling promise chains after each.
   */
  async advance(ms: number): Promise<void> {
    const target = this.current + ms;
    await settle();
    for (;;) {
      const due = this.earliest();
      if (due === undefined || due.at > target) break;
      this.timers.delete(due.id);
      this.current = Math.max(this.current, due.at);
      due.fn();
      await settle();
    }
    this.current = target;
    await settle();
  }

  /** Advances exactly to the next pending timer and fires it (and any due at the same instant). */
  async runNext(): Promise<void> {
    const due = this.earliest();
    if (due === undefined) return;
    await this.advance(due.at - this.current);
  }

  private earliest(): FakeTimer | undefined {
    let best: FakeTimer | undefined;
    for (const t of this.timers.values()) {
      if (best === undefined || t.at < best.at || (t.at === best.at && t.id < best.id)) best = t;
    }
    return best;
  }
}

/** Lets queued microtasks and immediate callbacks run a few rounds deep. */
export async function settle(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await tick();
}

/** Lets promise chains and immediates run until `cond` holds; fails the test if it never does. */
export async function until(what: string, cond: () => boolean): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (cond()) return;
    await tick();
  }
  throw new Error(`never happened: ${what}`);
}
