/**
 * Fair sharing of a few slots between groups (tenants: a CR's namespace). Two parts, both used by
 * the work queue's lanes and by the helm slots of a kind:
 * - `shareCap`: how many of the slots one group may hold — all but one, so a group whose holders
 *   never finish (a hook that hangs until the helm timeout) cannot take the last slot from the
 *   others. The cap holds whether or not others wait right now: a slot cannot be taken back from a
 *   running helm process, so a group that took them all while alone would keep them from a
 *   newcomer until they end.
 * - `FairQueue`: waiting items by group, handed out round-robin across the groups (FIFO within
 *   one), skipping groups that hold their cap: one group's thousand waiting items do not make the
 *   next group's first item wait behind them.
 */

/** The most of `slots` one group may hold at once: max(1, slots − 1). */
export function shareCap(slots: number): number {
  return Math.max(1, slots - 1);
}

export class FairQueue<T> {
  /** Waiting items per group, oldest first. A group is here only while it has items. */
  private readonly byGroup = new Map<string, T[]>();
  /** Groups with items, in the order their turn comes (round robin). */
  private order: string[] = [];
  private count = 0;

  get size(): number {
    return this.count;
  }

  push(group: string, item: T): void {
    const items = this.byGroup.get(group);
    if (items !== undefined) items.push(item);
    else {
      this.byGroup.set(group, [item]);
      this.order.push(group);
    }
    this.count++;
  }

  /**
   * The oldest item of the first group, in turn order, that `mayTake` allows; that group's turn
   * then goes to the back. undefined when no group with items may take one.
   */
  take(mayTake: (group: string) => boolean = () => true): { group: string; item: T } | undefined {
    for (let i = 0; i < this.order.length; i++) {
      const group = this.order[i] as string;
      if (!mayTake(group)) continue;
      const items = this.byGroup.get(group) as T[];
      const item = items.shift() as T;
      this.count--;
      this.order.splice(i, 1);
      if (items.length > 0) this.order.push(group);
      else this.byGroup.delete(group);
      return { group, item };
    }
    return undefined;
  }

  /** Removes `item` from `group`; false when it was not waiting there. */
  remove(group: string, item: T): boolean {
    const items = this.byGroup.get(group);
    const i = items?.indexOf(item) ?? -1;
    if (items === undefined || i < 0) return false;
    items.splice(i, 1);
    this.count--;
    if (items.length === 0) {
      this.byGroup.delete(group);
      this.order = this.order.filter((g) => g !== group);
    }
    return true;
  }

  /** Takes every item out, in no particular order. */
  drain(): T[] {
    const all = [...this.byGroup.values()].flat();
    this.byGroup.clear();
    this.order = [];
    this.count = 0;
    return all;
  }
}

/**
 * At most `permits` holders at once, at most `shareCap(permits)` of them from one group; waiters
 * are let in round-robin across groups. Closing turns away the waiting and every later `run`.
 */
export class FairSemaphore {
  private held = 0;
  private readonly heldBy = new Map<string, number>();
  private readonly waiting = new FairQueue<{ resolve: () => void; reject: (err: Error) => void }>();
  private closedWith: Error | undefined;
  readonly cap: number;

  constructor(private readonly permits: number) {
    if (!(Number.isInteger(permits) && permits >= 1)) throw new RangeError(`semaphore permits must be an integer >= 1, got ${permits}`);
    this.cap = shareCap(permits);
  }

  /** Holders now. */
  get inUse(): number {
    return this.held;
  }

  /** Holders from `group` now. */
  heldByGroup(group: string): number {
    return this.heldBy.get(group) ?? 0;
  }

  /** Runs `fn` once a permit is free for `group`, and frees it when `fn` settles; rejects once closed, without running `fn`. */
  async run<T>(group: string, fn: () => Promise<T>): Promise<T> {
    if (this.closedWith !== undefined) throw this.closedWith;
    if (this.mayTake(group)) this.acquire(group);
    // release() acquires on the waiter's behalf before resolving it.
    else await new Promise<void>((resolve, reject) => { this.waiting.push(group, { resolve, reject }); });
    try {
      return await fn();
    } finally {
      this.release(group);
    }
  }

  /** Turns away the waiting and every later `run` with `reason`; holders finish as they are. */
  close(reason: Error): void {
    this.closedWith = reason;
    for (const w of this.waiting.drain()) w.reject(reason);
  }

  private mayTake(group: string): boolean {
    return this.held < this.permits && this.heldByGroup(group) < this.cap;
  }

  private acquire(group: string): void {
    this.held++;
    this.heldBy.set(group, this.heldByGroup(group) + 1);
  }

  private release(group: string): void {
    this.held--;
    const left = this.heldByGroup(group) - 1;
    if (left > 0) this.heldBy.set(group, left);
    else this.heldBy.delete(group);
    for (;;) {
      const next = this.waiting.take((g) => this.mayTake(g));
      if (next === undefined) return;
      this.acquire(next.group);
      next.item.resolve();
    }
  }
}
