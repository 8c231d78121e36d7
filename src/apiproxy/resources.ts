/**
 * Resource (plural name in a URL) → kind, scope and verbs, from the group/version's discovery
 * document: the proxy sees URLs, not kinds, and decides confinement on the scope the API server
 * will apply. Cached per group/version; a miss re-reads the document (a CRD the role just created),
 * at most once a second per group/version.
 */
import { getDiscoveryDocument } from '../kube/objects.js';
import { isNotFound } from '../kube/errors.js';
import type { KubeClient } from '../kube/rest.js';
import { groupVersionPath } from '../kube/resource.js';

export interface ResourceInfo {
  readonly group: string;
  readonly version: string;
  readonly resource: string;
  readonly kind: string;
  readonly namespaced: boolean;
  /** Whether objects of it can be read back (`get`): false for reviews, which store nothing. */
  readonly persisted: boolean;
}

/** What the proxy asks about resources (unit tests substitute a table). */
export interface ResourceLookup {
  /** undefined: the server does not serve it (as far as a fresh read of discovery tells). */
  find(group: string, version: string, resource: string): Promise<ResourceInfo | undefined>;
}

interface ApiResourceList {
  resources?: { name?: unknown; kind?: unknown; namespaced?: unknown; verbs?: unknown }[];
}

const MIN_REREAD_MS = 1_000;

export class DiscoveryResourceLookup implements ResourceLookup {
  private readonly cache = new Map<string, { readonly at: number; readonly list: Promise<ResourceInfo[]> }>();

  constructor(private readonly client: KubeClient) {}

  async find(group: string, version: string, resource: string): Promise<ResourceInfo | undefined> {
    const key = `${group}/${version}`;
    let entry = this.cache.get(key);
    if (entry === undefined) entry = this.load(key, group, version);
    let found = (await entry.list).find((r) => r.resource === resource);
    if (found === undefined && performance.now() - entry.at >= MIN_REREAD_MS && this.cache.get(key) === entry) {
      entry = this.load(key, group, version);
      found = (await entry.list).find((r) => r.resource === resource);
    }
    return found;
  }

  private load(key: string, group: string, version: string): { at: number; list: Promise<ResourceInfo[]> } {
    const list = this.fetch(group, version);
    const entry = { at: performance.now(), list };
    this.cache.set(key, entry);
    // A failed read (network, 403) is not remembered: the next request asks again.
    list.catch(() => {
      if (this.cache.get(key) === entry) this.cache.delete(key);
    });
    return entry;
  }

  private async fetch(group: string, version: string): Promise<ResourceInfo[]> {
    let doc: ApiResourceList;
    try {
      doc = await getDiscoveryDocument<ApiResourceList>(this.client, groupVersionPath(group, version));
    } catch (err) {
      if (isNotFound(err)) return [];
      throw err;
    }
    return parseResources(group, version, doc);
  }
}

/** The resources of one group/version's `APIResourceList`, subresources (`pods/log`) left out. */
export function parseResources(group: string, version: string, doc: ApiResourceList): ResourceInfo[] {
  const out: ResourceInfo[] = [];
  for (const r of doc.resources ?? []) {
    if (typeof r.name !== 'string' || r.name.includes('/') || typeof r.kind !== 'string') continue;
    const verbs = Array.isArray(r.verbs) ? r.verbs : [];
    out.push({ group, version, resource: r.name, kind: r.kind, namespaced: r.namespaced === true, persisted: verbs.includes('get') });
  }
  return out;
}
