/**
 * A small map whose entries expire after a per-entry time-to-live and which never holds more
 * than `maxEntries` (the least recently used entry goes first). For caching answers that are
 * cheap to ask again but not on every request, such as token and access reviews.
 */
import type { Clock } from './clock.js';

interface Entry<V> {
  readonly value: V;
  readonly expiresAt: number;
}

export class TtlCache<K, V> {
  // Map iteration order is insertion order: re-inserting on use makes the first key the least
  // recently used one.
  private readonly entries = new Map<K, Entry<V>>();

  constructor(
    private readonly maxEntries: number,
    private readonly clock: Clock,
  ) {
    if (!Number.isInteger(maxEntries) || maxEntries < 1) throw new Error(`maxEntries must be a whole number ≥ 1, not ${String(maxEntries)}`);
  }

  get size(): number {
    return this.entries.size;
  }

  /** The value stored under `key` if it has not expired. */
  get(key: K): V | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    this.entries.delete(key);
    if (entry.expiresAt <= this.clock.now()) return undefined;
    this.entries.set(key, entry);
    return entry.value;
  }

  /** Stores `value` for `ttlMs` (≤ 0 stores nothing), evicting the least recently used entry when full. */
  set(key: K, value: V, ttlMs: number): void {
    this.entries.delete(key);
    if (ttlMs <= 0) return;
    while (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (oldest.done === true) break;
      this.entries.delete(oldest.value);
    }
    this.entries.set(key, { value, expiresAt: this.clock.now() + ttlMs });
  }

  clear(): void {
    this.entries.clear();
  }
}
