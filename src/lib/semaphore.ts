/** At most `permits` holders at once; the others wait in arrival order until it is closed. */
export class Semaphore {
  private held = 0;
  private readonly waiting: { resolve: () => void; reject: (err: Error) => void }[] = [];
  private closedWith: Error | undefined;

  constructor(private readonly permits: number) {
    if (!(Number.isInteger(permits) && permits >= 1)) throw new RangeError(`semaphore permits must be an integer >= 1, got ${permits}`);
  }

  /** Holders now. */
  get inUse(): number {
    return this.held;
  }

  /** Runs `fn` once a permit is free, and frees it when `fn` settles; rejects once closed, without running `fn`. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.closedWith !== undefined) throw this.closedWith;
    if (this.held < this.permits) this.held++;
    // release() hands its permit straight to the first waiter, so `held` stays counted.
    else await new Promise<void>((resolve, reject) => this.waiting.push({ resolve, reject }));
    try {
      return await fn();
    } finally {
      this.release();
    }
  }

  /** Turns away the waiting and every later `run` with `reason`; holders finish as they are. */
  close(reason: Error): void {
    this.closedWith = reason;
    for (const w of this.waiting.splice(0)) w.reject(reason);
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next === undefined) this.held--;
    else next.resolve();
  }
}
