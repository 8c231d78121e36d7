/**
 * Watches the objects chartpilot deployed, one informer per kind (per watched namespace), and
 * tells which owner CR an event concerns. Only objects carrying the owner label are listed and
 * cached, so memory grows with what we deployed, not with the cluster. Full objects (not
 * metadata) are cached because drift detection and readiness read spec and status from here
 * instead of GETting every object on every reconcile.
 *
 * With --shards only this replica's share is cached (selection.ts): the objects whose owner-bucket
 * label names a bucket its view of the ring gives it, and every object without a bucket label.
 * When the view changes the owned watches are swapped: new informers with the new selector list
 * and sync while the old ones keep serving reads and events; then, in one synchronous step, reads
 * move to the new caches, whatever the old watch had not delivered yet is told from the
 * difference of the two caches, and the old informers stop. An owner whose bucket is not watched
 * yet waits for that step (waitForOwner) rather than reading a cache that cannot hold its objects.
 */
import type { Logger } from 'pino';
import { isForbidden, isNotFound } from '../kube/errors.js';
import { Informer, type InformerOptions } from '../kube/informer.js';
import { listObjects } from '../kube/objects.js';
import type { KubeClient } from '../kube/rest.js';
import type { ApiResource, KubeObject } from '../kube/types.js';
import { bucketOf } from '../lib/uid-bucket.js';
import { OWNER_UID_LABEL } from '../engines/helm/names.js';
import { objectReadiness } from './readiness.js';
import { ALL_DEPENDENTS, bucketCount, gains, sameSelection, selects, selectorsOf, swapChanges, swapDelay, type DependentSelection, type SwapDelays } from './selection.js';
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
  /** Which objects to watch at first (selection.ts); every owner's (no --shards) by default. Changed by select(). */
  selection?: DependentSelection | undefined;
  /** How long after a change of the selection its watches are swapped; DEFAULT_SWAP_DELAYS by default. */
  swapDelays?: SwapDelays | undefined;
  /**
   * An owner whose pass gave up waiting for its bucket to be watched (waitForOwner false while the
   * selection wanted it) is watched now: its pass should run again. Should only enqueue.
   */
  onCovered?: ((ownerUid: string) => void) | undefined;
}

interface KindWatch {
  readonly resource: ApiResource;
  /** The namespaces (or ALL) this kind may be listed in. */
  readonly scopes: readonly string[];
  /** The selected owners' objects, by namespace; '' = cluster-wide (cluster-scoped kinds, or all namespaces). Empty when the selection selects no bucket. */
  owned: Map<string, Informer<KubeObject>>;
  /** Objects without a bucket label, by namespace: with --shards only. */
  readonly unbucketed: Map<string, Informer<KubeObject>>;
}

/** Whether an informer's events reach the owners yet: a swap's new informers are silent until it commits. */
interface Gate {
  live: boolean;
}

/** What the dependent caches hold now (metrics). */
export interface DependentCacheStats {
  /** Objects in the owned watches' caches. */
  readonly owned: number;
  /** Objects in the caches of objects without a bucket label (--shards). */
  readonly unbucketed: number;
  /** Uid buckets the owned watches select (all 1024 without --shards). */
  readonly buckets: number;
  /** Swaps to a new selection so far. */
  readonly swaps: number;
}

const ALL = '';
const DEFAULT_RETRY_SKIPPED_MS = 5 * 60_000;
const OPEN: Gate = { live: true };
export const DEFAULT_SWAP_DELAYS: SwapDelays = { gainMs: 1_000, shrinkMs: 30_000 };
/** setTimeout's limit: a longer delay would fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export class DependentWatcher {
  private readonly client: KubeClient;
  private readonly namespaces: readonly string[];
  private readonly log: Logger;
  private readonly onChange: DependentWatcherOptions['onChange'];
  private readonly notifyInitial: boolean;
  private readonly retrySkippedAfterMs: number;
  private readonly informerOptions: DependentWatcherOptions['informer'];
  private readonly swapDelays: SwapDelays;
  private readonly onCovered: DependentWatcherOptions['onCovered'];

  private readonly watches = new Map<string, KindWatch>();
  /** What the owned watches select now, and what they should select (they differ until a swap commits). */
  private active: DependentSelection;
  private target: DependentSelection;
  private swapTimer: { readonly at: number; readonly handle: NodeJS.Timeout } | undefined;
  private swap: { readonly to: DependentSelection; readonly abort: AbortController; readonly done: Promise<void> } | undefined;
  private swaps = 0;
  /** Resolved whenever the active or the target selection changes (waitForOwner). */
  private changed = Promise.withResolvers<undefined>();
  /** Owners whose pass gave up waiting for their bucket: told (onCovered) once it is watched. */
  private readonly uncovered = new Set<string>();
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
    this.active = opts.selection ?? ALL_DEPENDENTS;
    this.target = this.active;
    this.swapDelays = opts.swapDelays ?? DEFAULT_SWAP_DELAYS;
    this.onCovered = opts.onCovered;
  }

  /**
   * Watch the objects of `selection` from now on (the replica's view of the ring changed). The
   * owned watches are swapped after the selection's swap delay, once (a change that arrives
   * meanwhile is folded in); reads keep coming from the current caches until the swap commits.
   */
  select(selection: DependentSelection): void {
    if (this.stopped || sameSelection(selection, this.target)) return;
    this.target = selection;
    this.signalChange();
    // A swap in flight that would not cover what the new selection gains is superseded; one that
    // would finishes, and the rest (buckets to let go) follows after the shrink delay.
    if (this.swap !== undefined && gains(this.swap.to, selection)) this.swap.abort.abort();
    this.schedule();
  }

  /**
   * Resolves true once the caches hold the objects of the owner with this uid (at once when they
   * do); false when the selection does not want them (the ring gives the owner to another
   * replica) or `signal` aborts first, in which case the owner is told through onCovered once they
   * are watched.
   */
  async waitForOwner(ownerUid: string, signal?: AbortSignal): Promise<boolean> {
    if (this.active.kind === 'all') return true; // without --shards: not even a hash per pass
    const bucket = bucketOf(ownerUid);
    for (;;) {
      if (selects(this.active, bucket)) return true;
      if (this.stopped || !selects(this.target, bucket)) return false;
      if (signal?.aborted === true) {
        this.uncovered.add(ownerUid);
        return false;
      }
      await untilChangedOrAborted(this.changed.promise, signal);
    }
  }

  /** What the caches hold now. */
  stats(): DependentCacheStats {
    let owned = 0;
    let unbucketed = 0;
    for (const w of this.watches.values()) {
      for (const i of w.owned.values()) owned += i.size;
      for (const i of w.unbucketed.values()) unbucketed += i.size;
    }
    return { owned, unbucketed, buckets: bucketCount(this.active), swaps: this.swaps };
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
    return w.owned.get(scope)?.get(namespace, name) ?? w.unbucketed.get(scope)?.get(namespace, name);
  }

  /** Resolves when every kind requested so far has completed its first LIST. */
  async waitForSync(signal?: AbortSignal): Promise<void> {
    await Promise.all(this.starting.values());
    const informers = [...this.watches.values()].flatMap(informersOf);
    await Promise.all(informers.map((i) => i.waitForSync(signal)));
  }

  /** Stops every informer; the watcher cannot be restarted. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.swapTimer !== undefined) clearTimeout(this.swapTimer.handle);
    this.swapTimer = undefined;
    this.swap?.abort.abort();
    this.signalChange();
    await Promise.allSettled(this.starting.values());
    await this.swap?.done;
    const informers = [...this.watches.values()].flatMap(informersOf);
    this.watches.clear();
    await Promise.all(informers.map((i) => i.stop()));
  }

  /** Wakes waitForOwner's waiters: the active or the target selection changed. */
  private signalChange(): void {
    this.changed.resolve(undefined);
    this.changed = Promise.withResolvers<undefined>();
  }

  /** Arms the swap timer for the target selection, never later than it is armed already. */
  private schedule(): void {
    if (this.stopped || this.swap !== undefined) return; // a running swap schedules again when it ends
    const delay = swapDelay(this.active, this.target, this.swapDelays);
    if (delay === undefined) {
      if (this.swapTimer !== undefined) clearTimeout(this.swapTimer.handle);
      this.swapTimer = undefined;
      return;
    }
    const at = performance.now() + delay;
    if (this.swapTimer !== undefined && this.swapTimer.at <= at) return;
    if (this.swapTimer !== undefined) clearTimeout(this.swapTimer.handle);
    const handle = setTimeout(() => {
      this.swapTimer = undefined;
      this.startSwap();
    }, Math.min(delay, MAX_TIMER_MS));
    handle.unref();
    this.swapTimer = { at, handle };
  }

  private startSwap(): void {
    if (this.stopped || this.swap !== undefined || sameSelection(this.active, this.target)) return;
    const to = this.target;
    const abort = new AbortController();
    const done = this.swapTo(to, abort.signal)
      .catch((err: unknown) => {
        if (!abort.signal.aborted) this.log.warn({ err }, 'could not swap the dependent watches to this replica\'s new share; trying again');
      })
      .finally(() => {
        this.swap = undefined;
        this.schedule();
      });
    this.swap = { to, abort, done };
  }

  /**
   * New owned informers for `to`, for every watched kind (also kinds that start meanwhile), synced
   * while the old ones serve; then the synchronous commit. Aborted: the new ones stop, nothing changed.
   */
  private async swapTo(to: DependentSelection, signal: AbortSignal): Promise<void> {
    const started = performance.now();
    const from = this.active;
    const gate: Gate = { live: false };
    const pending = new Map<string, Map<string, Informer<KubeObject>>>();
    const selector = selectorsOf(to).owned;
    try {
      for (;;) {
        for (const [k, w] of this.watches) {
          if (pending.has(k)) continue;
          const informers = new Map<string, Informer<KubeObject>>();
          if (selector !== undefined) for (const scope of w.scopes) informers.set(scope, this.newInformer(w.resource, scope, selector, gate));
          pending.set(k, informers);
          for (const i of informers.values()) i.start();
        }
        await Promise.all([...pending.values()].flatMap((m) => [...m.values()]).map((i) => i.waitForSync(signal)));
        if (signal.aborted || this.stopped) throw new Error('swap aborted');
        // Kinds whose watch started while these synced get their new informers too, before anything moves.
        if ([...this.watches.keys()].every((k) => pending.has(k))) break;
      }
    } catch (err) {
      await Promise.all([...pending.values()].flatMap((m) => [...m.values()]).map((i) => i.stop()));
      throw err;
    }
    this.commit(from, to, pending, gate, performance.now() - started);
  }

  /** Synchronous, so no read and no event falls between the old caches and the new ones. */
  private commit(from: DependentSelection, to: DependentSelection, pending: Map<string, Map<string, Informer<KubeObject>>>, gate: Gate, listMs: number): void {
    const retired: Informer<KubeObject>[] = [];
    let told = 0;
    for (const [k, informers] of pending) {
      const w = this.watches.get(k);
      if (w === undefined) continue;
      for (const scope of w.scopes) {
        const old = w.owned.get(scope)?.list() ?? [];
        const next = informers.get(scope)?.list() ?? [];
        for (const change of swapChanges(from, to, old, next)) {
          told++;
          if (change.type === 'updated') this.emit(w.resource, [change.old, change.obj], 'updated', specHash(change.old) !== specHash(change.obj));
          else this.emit(w.resource, [change.obj], change.type, true);
        }
      }
      retired.push(...w.owned.values());
      w.owned = informers;
    }
    gate.live = true;
    this.active = to;
    this.swaps++;
    this.signalChange();
    for (const uid of this.uncovered) {
      const bucket = bucketOf(uid);
      if (selects(this.active, bucket)) {
        this.uncovered.delete(uid);
        this.onCovered?.(uid);
      } else if (!selects(this.target, bucket)) this.uncovered.delete(uid);
    }
    this.log.info({ buckets: bucketCount(to), kinds: pending.size, objects: this.stats().owned, changes: told, listMs: Math.round(listMs) }, 'dependent watches swapped to this replica\'s share of the ring');
    void Promise.all(retired.map((i) => i.stop()));
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
    // The selection active now: a swap in flight gives this kind its own new informers before it commits.
    const selectors = selectorsOf(this.active);
    const watch: KindWatch = { resource, scopes: allowed, owned: new Map(), unbucketed: new Map() };
    for (const scope of allowed) {
      if (selectors.owned !== undefined) watch.owned.set(scope, this.newInformer(resource, scope, selectors.owned, OPEN));
      if (selectors.unbucketed !== undefined) watch.unbucketed.set(scope, this.newInformer(resource, scope, selectors.unbucketed, OPEN));
    }
    this.watches.set(k, watch);
    this.skipped.delete(k);
    for (const i of informersOf(watch)) i.start();
    this.log.info({ kind: resource.kind, apiVersion: resource.apiVersion, scopes: allowed.length }, 'watching dependent kind');
  }

  private newInformer(resource: ApiResource, scope: string, labelSelector: string, gate: Gate): Informer<KubeObject> {
    let primed = this.notifyInitial;
    const informer = new Informer<KubeObject>({
      ...this.informerOptions,
      client: this.client,
      resource,
      namespace: scope === ALL ? undefined : scope,
      labelSelector,
      log: this.log,
      handlers: {
        onAdd: (obj) => {
          if (primed && gate.live) this.emit(resource, [obj], 'added', true);
        },
        onUpdate: (old, obj) => {
          if (gate.live) this.emit(resource, [old, obj], 'updated', specHash(old) !== specHash(obj));
        },
        onDelete: (obj) => {
          if (gate.live) this.emit(resource, [obj], 'deleted', true);
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

/** Resolves when `changed` does or `signal` aborts, whichever is first, leaving no listener behind. */
async function untilChangedOrAborted(changed: Promise<unknown>, signal: AbortSignal | undefined): Promise<void> {
  if (signal === undefined) {
    await changed;
    return;
  }
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<undefined>((resolve) => {
    onAbort = () => {
      resolve(undefined);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    await Promise.race([changed, aborted]);
  } finally {
    if (onAbort !== undefined) signal.removeEventListener('abort', onAbort);
  }
}

function informersOf(w: KindWatch): Informer<KubeObject>[] {
  return [...w.owned.values(), ...w.unbucketed.values()];
}

function kindKey(apiVersion: string, kind: string): string {
  return `${apiVersion}/${kind}`;
}
