/**
 * Kind → resource mapping through API discovery, one group/version document at a time (never the
 * whole aggregated discovery: an operator only needs the few kinds its charts create).
 */
import { KubeApiError, isNotFound } from './errors.js';
import { groupVersionPath, parseApiVersion } from './resource.js';
import type { ApiResource } from './types.js';

interface ApiResourceList {
  groupVersion?: string;
  resources?: { name: string; kind: string; namespaced: boolean }[];
}

export type DiscoveryGet = (path: string) => Promise<unknown>;

export class Discovery {
  /** apiVersion → resources; a promise so concurrent lookups share one request. */
  private readonly cache = new Map<string, Promise<ApiResource[]>>();

  constructor(private readonly get: DiscoveryGet) {}

  /**
   * Finds the resource serving `kind` in `apiVersion`. A miss refetches that group/version once,
   * because a CRD may have been installed since the cache was filled; a group/version the server
   * does not serve counts as a miss. Throws KubeApiError NotFound when still absent.
   */
  async resourceFor(apiVersion: string, kind: string): Promise<ApiResource> {
    let pending = this.load(apiVersion);
    let found = (await pending).find((r) => r.kind === kind);
    if (!found) {
      // Only refresh if nobody replaced the entry meanwhile: concurrent misses share one refetch.
      if (this.cache.get(apiVersion) === pending) this.cache.delete(apiVersion);
      pending = this.load(apiVersion);
      found = (await pending).find((r) => r.kind === kind);
    }
    if (!found) {
      throw new KubeApiError(`no resource for kind ${kind} in apiVersion ${apiVersion}`, {
        status: 404,
        reason: 'NotFound',
        details: { kind, apiVersion },
      });
    }
    return found;
  }

  /** Drops everything (e.g. after CRDs were removed). */
  invalidate(): void {
    this.cache.clear();
  }

  private load(apiVersion: string): Promise<ApiResource[]> {
    let entry = this.cache.get(apiVersion);
    if (!entry) {
      entry = this.fetch(apiVersion);
      this.cache.set(apiVersion, entry);
      // A failed lookup (network, 403) must not be cached: the next call asks again.
      void entry.catch(() => {
        if (this.cache.get(apiVersion) === entry) this.cache.delete(apiVersion);
      });
    }
    return entry;
  }

  private async fetch(apiVersion: string): Promise<ApiResource[]> {
    const { group, version } = parseApiVersion(apiVersion);
    let list: ApiResourceList;
    try {
      list = (await this.get(groupVersionPath(group, version))) as ApiResourceList;
    } catch (err) {
      if (isNotFound(err)) return [];
      throw err;
    }
    return parseResourceList(group, version, list);
  }
}

export function parseResourceList(group: string, version: string, list: ApiResourceList): ApiResource[] {
  const apiVersion = group === '' ? version : `${group}/${version}`;
  return (list.resources ?? [])
    .filter((r) => !r.name.includes('/')) // subresources (pods/status, deployments/scale) are not kinds' homes
    .map((r) => ({ group, version, apiVersion, kind: r.kind, plural: r.name, namespaced: r.namespaced }));
}
