/**
 * A token bucket: at most `burst` takes at once, refilled at `perSecond`. For bounding how often
 * something costly (a TokenReview) may be asked for by whoever can reach a port.
 */
import type { Clock } from './clock.js';

export class TokenBucket {
  private tokens: number;
  private refilledAt: number;

  constructor(
    private readonly burst: number,
    private readonly perSecond: number,
    private readonly clock: Clock,
  ) {
    if (!(burst >= 1) || !(perSecond > 0)) throw new RangeError(`a token bucket needs burst ≥ 1 and a positive rate, not ${String(burst)} and ${String(perSecond)}`);
    this.tokens = burst;
    this.refilledAt = clock.now();
  }

  /** Takes one token if there is one. */
  take(): boolean {
    const now = this.clock.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.refilledAt) / 1000) * this.perSecond);
    this.refilledAt = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}
