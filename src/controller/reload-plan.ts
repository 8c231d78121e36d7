/**
 * What a new watches.yaml means for running controllers: a pure diff, so "start, reconfigure or
 * stop that kind without disturbing the others" is decided and tested without a cluster.
 */
import { gvkKey, type WatchEntry } from '../config/types.js';

export type EntryChange =
  | { readonly kind: 'add'; readonly entry: WatchEntry }
  | { readonly kind: 'remove'; readonly key: string }
  /** Settings the informers or the queue are built from changed: stop and start that controller. */
  | { readonly kind: 'restart'; readonly entry: WatchEntry }
  /** Same controller, new target (chart, overrides, period); the chart digest is recomputed. */
  | { readonly kind: 'refresh'; readonly entry: WatchEntry };

function needsRestart(a: WatchEntry, b: WatchEntry): boolean {
  return (
    a.labelSelector !== b.labelSelector ||
    a.maxConcurrentReconciles !== b.maxConcurrentReconciles ||
    a.watchDependentResources !== b.watchDependentResources ||
    // Another engine (chart ↔ role or playbook) is another reconciler.
    (a.ansible === undefined) !== (b.ansible === undefined)
  );
}

export function diffEntries(current: readonly WatchEntry[], next: readonly WatchEntry[]): EntryChange[] {
  const before = new Map(current.map((e) => [gvkKey(e), e]));
  const after = new Map(next.map((e) => [gvkKey(e), e]));
  const changes: EntryChange[] = [];
  for (const [key] of before) {
    if (!after.has(key)) changes.push({ kind: 'remove', key });
  }
  for (const [key, entry] of after) {
    const old = before.get(key);
    if (old === undefined) changes.push({ kind: 'add', entry });
    else if (needsRestart(old, entry)) changes.push({ kind: 'restart', entry });
    // Always refreshed: the chart's files may have changed even when the entry did not.
    else changes.push({ kind: 'refresh', entry });
  }
  return changes;
}
