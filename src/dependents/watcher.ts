/**
 * Watches the objects chartpilot deployed, one informer per kind (per watched namespace), and
 * tells which owner CR an event concerns. Only objects carrying the owner label are listed and
 * cached, so memory grows with what we deployed, not with the cluster. Full objects (not
 * metadata) are cached because drift detection and readiness read spec and status from here
 * instead of GETting every object on every reconcile.
 */
import type { Logger } from 'pino';
import { isForbidden, isNotFound } from '../kube/errors.js';
import { Informer, type InformerOptions } from '../kube/informer.js';
import { listObjects } from '../kube/objects.js';
import type { KubeClient } from '../kube/rest.js';
import type { ApiResource, KubeObject } from '../kube/types.js';
import { OWNER_UID_LABEL } from '../reconcile/names.js';
import { objectReadiness } from './readiness.js';
import { specHash } from './spec-hash.js';
import type { ObjectRef } from './types.js';

export interface DependentChange {
  type: 'added' | 'updated' | 'deleted';
  objectRef: ObjectRef;
  /** False when only status (or volatile metadata such as resourceVersion) changed. */
  specChanged: boolean;
  /**
   * Whether the object's readiness verdict (ready, failed, reason) may have changed: always true
   * unless a status-only update left it as it was — a rollout's progress, which the owner's
   * status tells at a pace anyway.
   */
  verdictChanged: boolean;
}

export interface DependentWatcherOptions {
  client: KubeClient;
  /** Namespaces to watch namespaced kinds in; [] = all namespaces (one cluster-wide watch). */
  namespaces: readonly string[];
  log: Logger;
  /** Called for each event of a labelled object; should only enqueue (exceptions are logged). */
  onChange: (ownerUid: string, change: DependentChange) => void;
  /**
   * Also report the objects a new informer finds in its first LIST. Off by default: every owner
   * is reconciled at startup anyway, and a kind's watch starts because its owner is reconciling,
   * so those events would only enqueue every owner a second time.
   */
  notifyInitial?: boolean | undefined;
  /** A kind skipped for Forbidden/NotFound is tried again by ensureWatching after this; default 5 min. */
  retrySkippedAfterMs?: number | undefined;
  /** Passed to every informer (tests use short timeouts). */
  informer?: Pick<InformerOptions<KubeObject>, 'silenceTimeoutMs' | 'backoff' | 'pageSize' | 'clock' | 'random'> | undefined;
}

interface KindWatch {
  resource: ApiResource;
  /** By namespace; '' = cluster-wide (cluster-scoped kinds, or all namespaces). */
  informers: Map<string, Informer<KubeObject>>;
}

const ALL = '';
const DEFAULT_RETRY_SKIPPED_MS = 5 * 60_000;

export class DependentWatcher {
  private readonly client: KubeClient;
  private readonly namespaces: readonly string[];
  private readonly log: Logger;
  private readonly onChange: DependentWatcherOptions['onChange'];
  private readonly notifyInitial: boolean;
  private readonly retrySkippedAfterMs: number;
  private readonly informerOptions: DependentWatcherOptions['informer'];

  private readonly watches = new Map<string, KindWatch>();
  private readonly starting = new Map<string, Promise<void>>();
  /** Kinds we may not or cannot watch, with when we last tried. */
  private readonly skipped = new Map<string, number>();
  private readonly loggedOnce = new Set<string>();
  private stopped = false;

  constructor(opts: DependentWatcherOptions) {
    this.client = opts.client;
    this.namespaces = [...new Set(opts.namespaces)];
    if (this.namespaces.some((ns) => ns === '')) throw new TypeError('namespaces must not contain an empty name ([] means all namespaces)');
    this.log = opts.log.child({ component: 'dependents' });
    this.onChange = opts.onChange;
    this.notifyInitial = opts.notifyInitial ?? false;
    this.retrySkippedAfterMs = opts.retrySkippedAfterMs ?? DEFAULT_RETRY_SKIPPED_MS;
    this.informerOptions = opts.informer;
  }

  /**
   * Starts watching a kind (idempotent; resolves once its informers are started, see waitForSync).
   * A kind the API does not serve or we may not list is logged once and skipped, and tried again
   * after `retrySkippedAfterMs` (a CRD may arrive later, RBAC may be fixed). Other failures
   * (network) reject, and the next call tries again.
   */
  async ensureWatching(apiVersion: string, kind: string): Promise<void> {
    if (this.stopped) throw new Error('dependent watcher is stopped');
    const k = kindKey(apiVersion, kind);
    if (this.watches.has(k)) return;
    const inFlight = this.starting.get(k);
    if (inFlight) return inFlight;
    const skippedAt = this.skipped.get(k);
    if (skippedAt !== undefined && performance.now() - skippedAt < this.retrySkippedAfterMs) return;
    const p = this.start(k, apiVersion, kind).finally(() => this.starting.delete(k));
    this.starting.set(k, p);
    return p;
  }

  /** Whether a kind has informers (false for skipped and never-requested kinds). */
  isWatching(apiVersion: string, kind: string): boolean {
    return this.watches.has(kindKey(apiVersion, kind));
  }

  /** `apiVersion/Kind` of every watched kind, sorted. */
  watchedKinds(): string[] {
    return [...this.watches.values()].map((w) => `${w.resource.apiVersion}/${w.resource.kind}`).sort();
  }

  /**
   * The cached object, or undefined when it does not exist, is not labelled, or its kind or
   * namespace is not watched (tell those apart with isWatching).
   */
  get(apiVersion: string, kind: string, namespace: string | undefined, name: string): KubeObject | undefined {
    const w = this.watches.get(kindKey(apiVersion, kind));
    if (!w) return undefined;
    const scope = w.resource.namespaced && this.namespaces.length > 0 ? (namespace ?? ALL) : ALL;
    return w.informers.get(scope)?.get(namespace, name);
  }

  /** Resolves when every kind requested so far has completed its first LIST. */
  async waitForSync(signal?: AbortSignal): Promise<void> {
    await Promise.all(this.starting.values());
    const informers = [...this.watches.values()].flatMap((w) => [...w.informers.values()]);
    await Promise.all(informers.map((i) => i.waitForSync(signal)));
  }

  /** Stops every informer; the watcher cannot be restarted. */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.allSettled(this.starting.values());
    const informers = [...this.watches.values()].flatMap((w) => [...w.informers.values()]);
    this.watches.clear();
    await Promise.all(informers.map((i) => i.stop()));
  }

  private async start(k: string, apiVersion: string, kind: string): Promise<void> {
    let resource: ApiResource;
    try {
      resource = await this.client.resourceFor(apiVersion, kind);
    } catch (err) {
      if (isNotFound(err) || isForbidden(err)) {
        this.skip(k, err, `${kind} ${apiVersion} is not served by the cluster (or discovery is forbidden); objects of this kind are not watched`);
        return;
      }
      throw err;
    }
    const scopes = resource.namespaced && this.namespaces.length > 0 ? this.namespaces : [ALL];
    // Probe before starting informers: an informer retries a 403 forever, which would only show
    // as a warning every 30 s and a waitForSync that never resolves.
    const allowed: string[] = [];
    for (const scope of scopes) {
      try {
        await listObjects(this.client, resource, scope === ALL ? undefined : scope, { labelSelector: OWNER_UID_LABEL, limit: 1, metadataOnly: true });
        allowed.push(scope);
      } catch (err) {
        if (!(isForbidden(err) || isNotFound(err))) throw err;
        this.logOnce(`${k}@${scope}`, err, `cannot list ${resource.plural} ${scope === ALL ? 'cluster-wide' : `in namespace ${scope}`}; changes to them will not be noticed`);
      }
    }
    if (allowed.length === 0) {
      this.skipped.set(k, performance.now());
      return;
    }
    if (this.stopped) return;
    const informers = new Map<string, Informer<KubeObject>>();
    for (const scope of allowed) informers.set(scope, this.newInformer(resource, scope));
    this.watches.set(k, { resource, informers });
    this.skipped.delete(k);
    for (const i of informers.values()) i.start();
    this.log.info({ kind: resource.kind, apiVersion: resource.apiVersion, scopes: allowed.length }, 'watching dependent kind');
  }

  private newInformer(resource: ApiResource, scope: string): Informer<KubeObject> {
    let primed = this.notifyInitial;
    const informer = new Informer<KubeObject>({
      ...this.informerOptions,
      client: this.client,
      resource,
      namespace: scope === ALL ? undefined : scope,
      labelSelector: OWNER_UID_LABEL,
      log: this.log,
      handlers: {
        onAdd: (obj) => {
          if (primed) this.emit(resource, [obj], 'added', true);
        },
        onUpdate: (old, obj) => {
          this.emit(resource, [old, obj], 'updated', specHash(old) !== specHash(obj));
        },
        onDelete: (obj) => {
          this.emit(resource, [obj], 'deleted', true);
        },
      },
    });
    // The first LIST's handlers run before waitForSync's waiters; the first watch event comes
    // over the network, long after this continuation.
    void informer.waitForSync().then(
      () => {
        primed = true;
      },
      () => undefined, // stopped before syncing: nothing to prime
    );
    return informer;
  }

  /** Tells the owner(s) of `objects` (on update, old and new may name different owners). */
  private emit(resource: ApiResource, objects: readonly KubeObject[], type: DependentChange['type'], specChanged: boolean): void {
    const obj = objects.at(-1);
    if (obj === undefined) return;
    const objectRef: ObjectRef = {
      apiVersion: resource.apiVersion,
      kind: resource.kind,
      namespace: resource.namespaced ? obj.metadata.namespace : undefined,
      name: obj.metadata.name,
    };
    const owners = new Set<string>();
    for (const o of objects) {
      const uid = o.metadata.labels?.[OWNER_UID_LABEL];
      if (uid) owners.add(uid);
    }
    const verdictChanged = specChanged || objects.length < 2 || !sameReadinessVerdict(objectRef, objects[0], obj);
    for (const uid of owners) this.onChange(uid, { type, objectRef, specChanged, verdictChanged });
  }

  private skip(k: string, err: unknown, message: string): void {
    this.skipped.set(k, performance.now());
    this.logOnce(k, err, message);
  }

  private logOnce(k: string, err: unknown, message: string): void {
    if (this.loggedOnce.has(k)) return;
    this.loggedOnce.add(k);
    this.log.warn({ err }, message);
  }
}

/** Whether an object's readiness verdict (ready, failed, reason) is the same before and after an update. */
export function sameReadinessVerdict(ref: ObjectRef, before: KubeObject | undefined, after: KubeObject): boolean {
  const a = objectReadiness(ref, before);
  const b = objectReadiness(ref, after);
  return a.ready === b.ready && a.failed === b.failed && a.reason === b.reason;
}

function kindKey(apiVersion: string, kind: string): string {
  return `${apiVersion}/${kind}`;
}
