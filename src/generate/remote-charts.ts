/**
 * Charts from registries for the generators and `new`: pulled first (into the same
 * content-addressed cache the operator uses), so everything downstream reads a local archive.
 * Without a running operator there is no namespace to read a chartPullSecret from: credentials
 * come from Helm's own files (helm registry login, helm repo add --username), as for helm pull.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WatchEntry } from '../config/types.js';
import { ChartCache } from '../registry/cache.js';
import { ChartSourceError } from '../registry/errors.js';
import { ChartResolver } from '../registry/resolver.js';
import { EnvironmentError, InputError } from './errors.js';

export type Env = Readonly<Record<string, string | undefined>>;

/** `entries` with every chart from a registry pulled (chartPath = the cached archive). */
export async function pullRemoteCharts(entries: readonly WatchEntry[], env: Env): Promise<WatchEntry[]> {
  if (entries.every((e) => e.remote === undefined)) return [...entries];
  const resolver = new ChartResolver({
    cache: new ChartCache(env['CHARTPILOT_CHART_CACHE'] ?? join(tmpdir(), 'chartpilot-charts')),
    readSecret: () => Promise.resolve(undefined),
    secretNamespace: undefined,
    env,
  });
  try {
    const out: WatchEntry[] = [];
    for (const e of entries) {
      if (e.remote === undefined) {
        out.push(e);
        continue;
      }
      try {
        const chart = await resolver.resolve({ ...e.remote, pullSecret: undefined });
        out.push({ ...e, chartPath: chart.path });
      } catch (err) {
        if (!(err instanceof ChartSourceError)) throw err;
        const message = `${e.kind}: cannot pull ${e.remote.reference}: ${err.message}`;
        if (err.reason === 'RegistryUnreachable') throw new EnvironmentError(message, { cause: err });
        throw new InputError([message]);
      }
    }
    return out;
  } finally {
    await resolver.close();
  }
}
