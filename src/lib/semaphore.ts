/** At most `permits` holders at once; the others wait in arrival order. */
export class Semaphore {
  private held = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly permits: number) {
    if (!(Number.isInteger(permits) && permits >= 1)) throw new RangeError(`semaphore permits must be an integer >= 1, got ${permits}`);
  }

  /** Holders now. */
  get inUse(): number {
    return this.held;
  }

  /** Runs `fn` once a permit is free, and frees it when `fn` settles. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.held < this.permits) this.held++;
    // release() hands its permit straight to the first waiter, so `held` stays counted.
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await fn();
    } finally {
      this.release();
    }
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next === undefined) this.held--;
    else next();
  }
}
