/**
 * Which kinds are namespaced, for every kind the cluster serves: manifests need it (to fill in the
 * release namespace) and so does the post-renderer (an ownerReference on a cluster-scoped object
 * is invalid, and the garbage collector deletes objects whose owner it cannot resolve).
 *
 * Aggregated discovery answers for all groups in two requests (`/api`, `/apis`); servers without
 * it (before 1.26, or with the feature off) answer with the legacy documents, and then we read
 * each group/version's resource list.
 */
import type { Logger } from 'pino';
import { parseResourceList } from '../kube/discovery.js';
import { getDiscoveryDocument } from '../kube/objects.js';
import type { KubeClient } from '../kube/rest.js';
import { groupVersionPath, parseApiVersion } from '../kube/resource.js';
import { forEachLimited } from '../lib/for-each-limited.js';
import { asPlainObject } from '../lib/json.js';

/** Served by Kubernetes ≥ 1.30 (v2) and 1.26–1.32 (v2beta1); anything else gets the legacy documents. */
export const AGGREGATED_DISCOVERY_ACCEPT = [
  'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList',
  'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList',
  'application/json',
].join(',');

export type DiscoverySource = 'aggregated-v2' | 'aggregated-v2beta1' | 'legacy';

export interface KindScope {
  apiVersion: string;
  kind: string;
  namespaced: boolean;
}

export interface ScopeMapOptions {
  client: KubeClient;
  log?: Logger | undefined;
  /** Parallel group/version requests in legacy mode; default 8. */
  concurrency?: number | undefined;
  /** `ensureKnown` refreshes at most this often; default 5 s. */
  minRefreshIntervalMs?: number | undefined;
}

export class ScopeMap {
  private readonly client: KubeClient;
  private readonly log: Logger | undefined;
  private readonly concurrency: number;
  private readonly minRefreshIntervalMs: number;
  private scopes = new Map<string, boolean>();
  private pending: Promise<void> | undefined;
  private lastRefreshAt = Number.NEGATIVE_INFINITY;
  private servedBy: DiscoverySource | undefined;

  constructor(opts: ScopeMapOptions) {
    this.client = opts.client;
    this.log = opts.log;
    this.concurrency = opts.concurrency ?? 8;
    this.minRefreshIntervalMs = opts.minRefreshIntervalMs ?? 5_000;
    if (!(Number.isInteger(this.concurrency) && this.concurrency > 0)) throw new RangeError('concurrency must be a positive integer');
    if (!(this.minRefreshIntervalMs >= 0)) throw new RangeError('minRefreshIntervalMs must be >= 0');
  }

  /** How the last refresh learned the scopes (undefined before the first one). */
  get source(): DiscoverySource | undefined {
    return this.servedBy;
  }

  /** Reloads discovery; concurrent calls share one load. On failure the previous map stays. */
  refresh(): Promise<void> {
    this.pending ??= this.load().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  /**
   * Refreshes once when any of `kinds` is unknown (e.g. a CRD the release just installed), at
   * most every `minRefreshIntervalMs`. True when all are known afterwards.
   */
  async ensureKnown(kinds: readonly { apiVersion: string; kind: string }[]): Promise<boolean> {
    const unknown = (): boolean => kinds.some((k) => this.isNamespaced(k.apiVersion, k.kind) === undefined);
    if (!unknown()) return true;
    if (this.pending === undefined && performance.now() - this.lastRefreshAt < this.minRefreshIntervalMs) return false;
    await this.refresh();
    return !unknown();
  }

  /** undefined = the cluster does not serve this kind (as of the last refresh). */
  isNamespaced(apiVersion: string, kind: string): boolean | undefined {
    return this.scopes.get(key(apiVersion, kind));
  }

  /** `apiVersion/Kind` of every cluster-scoped kind, sorted (e.g. `v1/Namespace`, `rbac.authorization.k8s.io/v1/ClusterRole`). */
  clusterScopedKinds(): string[] {
    return this.kindsWhere(false);
  }

  /** `apiVersion/Kind` of every namespaced kind, sorted (e.g. `v1/ConfigMap`, `apps/v1/Deployment`). */
  namespacedKinds(): string[] {
    return this.kindsWhere(true);
  }

  private kindsWhere(namespaced: boolean): string[] {
    const out: string[] = [];
    for (const [k, n] of this.scopes) {
      if (n === namespaced) out.push(k.replace('\u0000', '/'));
    }
    return out.sort();
  }

  private async load(): Promise<void> {
    const [core, groups] = await Promise.all([this.loadRoot('/api'), this.loadRoot('/apis')]);
    const next = new Map<string, boolean>();
    for (const s of [...core.scopes, ...groups.scopes]) next.set(key(s.apiVersion, s.kind), s.namespaced);
    this.scopes = next;
    this.servedBy = core.source === groups.source ? core.source : 'legacy';
    this.lastRefreshAt = performance.now();
    this.log?.debug({ kinds: next.size, source: this.servedBy }, 'discovery loaded');
  }

  private async loadRoot(root: '/api' | '/apis'): Promise<{ scopes: KindScope[]; source: DiscoverySource }> {
    const doc = await getDiscoveryDocument(this.client, root, { accept: AGGREGATED_DISCOVERY_ACCEPT });
    const aggregated = parseAggregatedDiscovery(doc);
    if (aggregated) return aggregated;
    const gvs = legacyGroupVersions(doc);
    const scopes: KindScope[] = [];
    await forEachLimited(gvs, this.concurrency, async (gv) => {
      const { group, version } = parseApiVersion(gv);
      try {
        const list = await getDiscoveryDocument<Parameters<typeof parseResourceList>[2]>(this.client, groupVersionPath(group, version));
        for (const r of parseResourceList(group, version, list)) scopes.push({ apiVersion: r.apiVersion, kind: r.kind, namespaced: r.namespaced });
      } catch (err) {
        // One broken aggregated API (metrics-server down: 503) must not hide all the others.
        this.log?.warn({ err, groupVersion: gv }, 'discovery of a group/version failed; its kinds stay unknown');
      }
    });
    return { scopes, source: 'legacy' };
  }
}

/**
 * Kinds and scopes from an aggregated discovery document (`APIGroupDiscoveryList` of `/api` or
 * `/apis`), or undefined when `doc` is something else (the legacy `APIVersions`/`APIGroupList`).
 */
export function parseAggregatedDiscovery(doc: unknown): { scopes: KindScope[]; source: DiscoverySource } | undefined {
  const d = asPlainObject(doc);
  if (d.kind !== 'APIGroupDiscoveryList' || !Array.isArray(d.items)) return undefined;
  const source: DiscoverySource = d.apiVersion === 'apidiscovery.k8s.io/v2beta1' ? 'aggregated-v2beta1' : 'aggregated-v2';
  const scopes: KindScope[] = [];
  for (const item of d.items) {
    const g = asPlainObject(item);
    const name = asPlainObject(g.metadata).name;
    const group = typeof name === 'string' ? name : ''; // the core group has no name
    for (const v of array(g.versions)) {
      const version = asPlainObject(v).version;
      if (typeof version !== 'string') continue;
      const apiVersion = group === '' ? version : `${group}/${version}`;
      for (const r of array(asPlainObject(v).resources)) {
        const res = asPlainObject(r);
        const kind = asPlainObject(res.responseKind).kind;
        if (typeof kind !== 'string' || kind === '') continue;
        scopes.push({ apiVersion, kind, namespaced: res.scope === 'Namespaced' });
      }
    }
  }
  return { scopes, source };
}

/** Every group/version a legacy `/api` (`APIVersions`) or `/apis` (`APIGroupList`) document names. */
export function legacyGroupVersions(doc: unknown): string[] {
  const d = asPlainObject(doc);
  if (d.kind === 'APIVersions') return array(d.versions).filter((v): v is string => typeof v === 'string');
  const out: string[] = [];
  for (const g of array(d.groups)) {
    // All served versions, not only the preferred one: a chart may use any of them.
    for (const v of array(asPlainObject(g).versions)) {
      const gv = asPlainObject(v).groupVersion;
      if (typeof gv === 'string') out.push(gv);
    }
  }
  return out;
}

function key(apiVersion: string, kind: string): string {
  return `${apiVersion}\u0000${kind}`;
}

function array(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}
