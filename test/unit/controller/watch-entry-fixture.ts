/** A validated watches entry as config/ produces it, with every optional key at its default. */
import type { WatchEntry } from '../../../src/config/types.js';

export function watchEntry(kind: string, extra: Partial<WatchEntry> = {}): WatchEntry {
  return {
    group: 'g.example.com',
    version: 'v1',
    kind,
    chartPath: `/charts/${kind}`,
    overrideValues: {},
    watchDependentResources: true,
    reconcilePeriodMs: undefined,
    maxConcurrentReconciles: undefined,
    labelSelector: undefined,
    dryRunOption: undefined,
    allowClusterScoped: false,
    allowCrossNamespace: false,
    serviceAccount: undefined,
    ...extra,
  };
}
