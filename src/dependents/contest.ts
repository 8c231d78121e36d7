/**
 * Telling a fight from drift: a field chartpilot set back `repairs` times within `windowMs`, and
 * found changed again each time, belongs to someone else (an HPA, a CA injector, a mutating
 * webhook). Repairing it once more would only start the next round, so it is given up: no more
 * writes to it (the writes per field stay bounded by `repairs`) and one announcement. Pure
 * bookkeeping over a clock; the keeper does the reading, writing and telling.
 */

export interface ContestPolicy {
  /** Set-backs within the window after which the field is given up. */
  readonly repairs: number;
  readonly windowMs: number;
}

/** An HPA re-scales within its 15 s sync: three rounds take under a minute; a person editing by hand rarely does it thrice in ten. */
export const DEFAULT_CONTEST_POLICY: ContestPolicy = { repairs: 3, windowMs: 10 * 60_000 };

export type ContestVerdict =
  /** Set it back (and call `repaired` once written). */
  | { readonly kind: 'repair' }
  /** Given up on this pass: announce it (once). */
  | { readonly kind: 'contested'; readonly repairs: number; readonly withinMs: number }
  /** Given up before: leave it, say nothing new. */
  | { readonly kind: 'given-up' };

interface FieldRecord {
  /** When it was set back, oldest first, within the window. */
  repairedAt: number[];
  givenUp: boolean;
}

/** The fields of one release's objects chartpilot has set back, keyed by object and field. */
export class FieldContests {
  private readonly fields = new Map<string, FieldRecord>();

  constructor(
    private readonly now: () => number,
    private readonly policy: ContestPolicy = DEFAULT_CONTEST_POLICY,
  ) {
    if (!Number.isSafeInteger(policy.repairs) || policy.repairs < 1) throw new RangeError('contest policy: repairs must be a whole number of at least 1');
    if (!(policy.windowMs > 0)) throw new RangeError('contest policy: windowMs must be positive');
  }

  /** `field` of `object` has drifted again: set it back, or is it someone else's? */
  judge(object: string, field: string): ContestVerdict {
    const record = this.fields.get(keyOf(object, field));
    if (record === undefined) return { kind: 'repair' };
    if (record.givenUp) return { kind: 'given-up' };
    const now = this.now();
    record.repairedAt = record.repairedAt.filter((at) => now - at < this.policy.windowMs);
    if (record.repairedAt.length < this.policy.repairs) return { kind: 'repair' };
    record.givenUp = true;
    return { kind: 'contested', repairs: record.repairedAt.length, withinMs: now - (record.repairedAt[0] ?? now) };
  }

  /** A repair that set `field` of `object` back was written. */
  repaired(object: string, field: string): void {
    const key = keyOf(object, field);
    const record = this.fields.get(key) ?? { repairedAt: [], givenUp: false };
    record.repairedAt.push(this.now());
    this.fields.set(key, record);
  }

  /** Fields given up for `object` (their keys as `judge` got them). */
  givenUp(object: string): string[] {
    const prefix = `${object}\u0000`;
    const out: string[] = [];
    for (const [key, record] of this.fields) if (record.givenUp && key.startsWith(prefix)) out.push(key.slice(prefix.length));
    return out;
  }

  /** Forgets fields whose last set-back is older than the window and were not given up (bounds the memory). */
  prune(): void {
    const now = this.now();
    for (const [key, record] of this.fields) {
      if (!record.givenUp && record.repairedAt.every((at) => now - at >= this.policy.windowMs)) this.fields.delete(key);
    }
  }
}

function keyOf(object: string, field: string): string {
  return `${object}\u0000${field}`;
}
