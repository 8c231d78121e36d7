/**
 * One controller per watched kind: informers (one per watched namespace, or one for all) feed keys
 * into a work queue; a worker takes a key, reads the CR from the cache and reconciles it.
 * Informer callbacks only enqueue; all work happens in the queue's workers.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { KubeApiError } from '../kube/errors.js';
import { Informer } from '../kube/informer.js';
import type { KubeClient } from '../kube/rest.js';
import type { ApiResource, KubeObject } from '../kube/types.js';
import type { Engine } from '../core/engine.js';
import type { CustomResource } from '../core/model.js';
import { HelmCallInterrupted, HelmCallsStopped } from '../engines/helm/ports.js';
import { WorkQueue, type AddOptions, type Lane, type WorkQueueMetrics } from '../lib/work-queue.js';
import { withoutSpec } from './cr-reader.js';
import { errorMessage } from '../lib/errors.js';
import type { Clock } from '../lib/clock.js';

export interface CrControllerOptions {
  /** Controller name in logs and metrics (the kind, lower-cased like controller-runtime's). */
  readonly name: string;
  readonly resource: ApiResource;
  readonly client: KubeClient;
  /** Namespaces to watch; empty = all. */
  readonly namespaces: readonly string[];
  readonly labelSelector: string | undefined;
  readonly concurrency: number;
  /** Workers beyond `concurrency` that only take follow-ups (see WorkQueueOptions); default 0. */
  readonly followUpWorkers?: number;
  /** Called once the queue takes no more work and before it drains (e.g. to refuse new helm calls). */
  readonly onStopping?: () => void;
  /** Only `reconcile` is used (unit tests pass a recording fake). */
  readonly reconciler: Pick<Engine, 'reconcile'>;
  /**
   * The finalizers the kind's engine holds its CRs with: Helm's (and operator-sdk's legacy one),
   * or an Ansible entry's `finalizer.name` (none without one). Asked at each own write, as a hot
   * reload may change the entry. Only a write that leaves a CR being deleted with none of them
   * lets it go (see releases()).
   */
  readonly finalizers: () => readonly string[];
  readonly log: Logger;
  readonly queueMetrics?: WorkQueueMetrics;
  /** Schedules the queue's requeues and retry backoffs; the process clock unless a test drives time. */
  readonly clock?: Clock;
  /** A CR appeared in, changed in (`present` again) or left the cache (also when the controller stops): per-CR metrics. */
  readonly onResource?: (change: 'present' | 'gone', obj: KubeObject) => void;
  /**
   * Sees each CR in full as list or watch delivers it, with its spec's summary, before the cache
   * drops the spec (the reconciler derives its fingerprint there: no GET per CR at a restart).
   * Must not throw; it runs inside the informer.
   */
  readonly onSpec?: (cr: CustomResource) => void;
  /** Called after every reconcile (for metrics). */
  readonly onReconciled?: (result: 'success' | 'error' | 'requeue_after', durationMs: number) => void;
  /** Sharded (`--shards`): which CRs this replica must let go of, and how it lets go of one. */
  readonly shard?: ShardHooks;
}

/** How a member of a shard ring hands a CR back (controller/sharding/). */
export interface ShardHooks {
  /** The sharder asked this replica to let go of `obj` (its drain label is set). */
  readonly draining: (obj: KubeObject) => boolean;
  /**
   * Whether this replica may reconcile `obj` now, whatever its labels say (a CR author can write
   * them): act (call `end` when the reconcile is over), let go, skip it, or look again later.
   */
  readonly admit?: (obj: KubeObject) => ShardAdmission;
  /** Removes its shard labels; called once nothing runs for it here any more. */
  readonly acknowledge: (obj: KubeObject) => Promise<unknown>;
  /** Acknowledging failed (it is tried again). */
  readonly onError?: (obj: KubeObject, err: unknown) => void;
}

export type ShardAdmission =
  | { readonly kind: 'act'; readonly end: () => void }
  | { readonly kind: 'let-go' }
  | { readonly kind: 'skip' }
  | { readonly kind: 'wait'; readonly retryMs: number; readonly reason: string };

/** An acknowledgement that failed is tried again after this long. */
const ACK_RETRY_MS = 1_000;
const ACK_ATTEMPTS = 10;

export function keyOf(obj: { metadata: { namespace?: string; name: string } }): string {
  return obj.metadata.namespace === undefined ? obj.metadata.name : `${obj.metadata.namespace}/${obj.metadata.name}`;
}

function splitKey(key: string): { namespace: string | undefined; name: string } {
  const i = key.indexOf('/');
  return i < 0 ? { namespace: undefined, name: key } : { namespace: key.slice(0, i), name: key.slice(i + 1) };
}

function sameStrings(a: readonly string[] | undefined, b: readonly string[] | undefined): boolean {
  return JSON.stringify(a ?? []) === JSON.stringify(b ?? []);
}

function sameMap(a: Readonly<Record<string, string>> | undefined, b: Readonly<Record<string, string>> | undefined): boolean {
  const ka = Object.keys(a ?? {});
  if (ka.length !== Object.keys(b ?? {}).length) return false;
  return ka.every((k) => a?.[k] === b?.[k]);
}

/**
 * Whether an update is worth a reconcile: spec (generation), deletion, finalizers, labels or
 * annotations. Status-only updates — including the ones this operator writes — are not.
 */
export function needsReconcile(oldObj: CustomResource, newObj: CustomResource): boolean {
  const o = oldObj.metadata;
  const n = newObj.metadata;
  return (
    o.generation !== n.generation ||
    o.deletionTimestamp !== n.deletionTimestamp ||
    !sameStrings(o.finalizers, n.finalizers) ||
    !sameMap(o.annotations, n.annotations) ||
    !sameMap(o.labels, n.labels)
  );
}

/**
 * Whether what changed from `oldObj` to `newObj`, an echo of our own write, can be our write
 * alone. Our writes (status, finalizers, the run-record annotation) never change the generation,
 * the deletion or the labels: an echo that shows one of them changed folds in someone else's
 * change that the cache never showed on its own (a relist after a watch gap delivers only the
 * newest version), and must be reconciled like it.
 */
export function ownWritesExplain(oldObj: CustomResource, newObj: CustomResource): boolean {
  const o = oldObj.metadata;
  const n = newObj.metadata;
  return o.generation === n.generation && o.deletionTimestamp === n.deletionTimestamp && sameMap(o.labels, n.labels);
}

/**
 * Whether a write of ours let a CR being deleted go: it carries none of the engine's finalizers any
 * more, so nothing is left to do for it, whatever version the cache still shows. Any other write to
 * a CR being deleted — the status written when a run or an upgrade that the deletion overtook
 * ends, the `Running` status before a finalizer run — leaves it held: the deletion is still to be
 * acted on (the finalizer run, the uninstall), and a retry of a failed one must run.
 */
export function releases(written: { readonly metadata: { readonly deletionTimestamp?: string; readonly finalizers?: readonly string[] } }, ours: readonly string[]): boolean {
  return written.metadata.deletionTimestamp !== undefined && !(written.metadata.finalizers ?? []).some((f) => ours.includes(f));
}

/** One write of ours to a CR: the version it replaced and the version it made. */
interface OwnWrite {
  readonly from: string | undefined;
  readonly to: string;
}

/**
 * Own writes remembered per CR at most. A reconcile writes a handful (finalizer, status) before
 * their echoes arrive; more means echoes were lost, and forgetting the oldest costs at most one
 * needless reconcile.
 */
const MAX_OWN_WRITES_PER_KEY = 8;

/**
 * LIST pages of CRs by size: the cache drops specs, but a page is whole in memory while it is
 * parsed. The first page asks for 5 (at most 7.5 MiB at the API server's 1.5 MiB per object), the
 * next ones for about 4 MiB of specs each (1000 CRs of 10 KB: 5 requests; of 100 KB: 26).
 */
const CR_PAGE_BUDGET = {
  bytes: 4 * 1024 * 1024,
  first: 5,
  // Metadata and status are not measured: a few KiB each.
  sizeOf: (obj: KubeObject): number => ((obj as CustomResource).specSummary?.bytes ?? 0) + 4096,
};

/** How long to wait for the cache to show our own write before looking at a key again. */
const CACHE_CATCH_UP_MS = 50;

/** A CR being deleted waits in the queue's delete lane, so a wave of creates cannot hold it up (nor it them). */
function laneOf(obj: KubeObject): Lane {
  return obj.metadata.deletionTimestamp === undefined ? 'change' : 'delete';
}

export class CrController {
  private readonly informers = new Map<string, Informer<KubeObject>>();
  private readonly queue: WorkQueue;
  private readonly byUid = new Map<string, string>();
  /**
   * This controller's own writes per key (finalizer added or removed, status) that the cache has
   * not shown yet, oldest first: the version each replaced and the version it made. Their watch
   * events need no second reconcile (the reconcile that wrote them went on with the result), and
   * a reconcile must not start from a version they replaced.
   */
  private readonly ownWrites = new Map<string, OwnWrite[]>();
  /**
   * Uids of CRs being deleted whose finalizer we removed: nothing is left to do for them, whatever
   * version of them the cache still shows until their deletion arrives.
   */
  private readonly released = new Set<string>();
  /**
   * Keys the first LIST found that have not finished a reconcile yet; undefined once every one
   * has (a restart or failover is over then: logged once, with how long it took).
   */
  private unchecked: Set<string> | undefined = new Set();
  private listedAtStart = 0;
  private failedAtStart = 0;
  private startedAt = 0;
  /** Every informer's first LIST is in the cache (the informers' own flag turns before their adds are told). */
  private listedAll = false;
  /** The reconcile running per key: a CR is handed back only once its reconcile (and helm call) ended. */
  private readonly inFlight = new Map<string, Promise<unknown>>();
  /** CRs being handed back (shards): no reconcile starts for them any more. */
  private readonly lettingGo = new Map<string, Promise<void>>();
  /** The whole controller hands its CRs back (the replica stops). */
  private handingOver = false;

  constructor(private readonly opts: CrControllerOptions) {
    this.queue = new WorkQueue({
      name: opts.name,
      concurrency: opts.concurrency,
      ...(opts.followUpWorkers === undefined ? {} : { followUpWorkers: opts.followUpWorkers }),
      handler: (key, signal) => this.process(key, signal),
      ...(opts.clock === undefined ? {} : { clock: opts.clock }),
      ...(opts.queueMetrics === undefined ? {} : { metrics: opts.queueMetrics }),
      onError: (key, err, attempt) => {
        const { namespace, name } = splitKey(key);
        opts.log.warn({ namespace, name, attempt, err: errorMessage(err) }, 'reconcile failed; will retry');
      },
    });
  }

  get name(): string {
    return this.opts.name;
  }

  start(): void {
    const namespaces = this.opts.resource.namespaced && this.opts.namespaces.length > 0 ? this.opts.namespaces : [undefined];
    for (const namespace of namespaces) {
      const informer = new Informer<KubeObject>({
        client: this.opts.client,
        resource: this.opts.resource,
        ...(namespace === undefined ? {} : { namespace }),
        ...(this.opts.labelSelector === undefined ? {} : { labelSelector: this.opts.labelSelector }),
        log: this.opts.log,
        pageBudget: CR_PAGE_BUDGET,
        transform: (obj) => this.slim(obj),
        handlers: {
          onAdd: (obj) => {
            this.track(obj);
            this.opts.onResource?.('present', obj);
            if (this.unchecked !== undefined && !this.listedAll) {
              this.unchecked.add(keyOf(obj));
              this.listedAtStart++;
            }
            if (this.mustLetGo(obj)) this.letGo(obj);
            else this.queue.add(keyOf(obj), { lane: laneOf(obj) });
          },
          onUpdate: (oldObj, newObj) => {
            this.track(newObj);
            // Per-CR series follow the status (conditions, release) as the cache sees it.
            this.opts.onResource?.('present', newObj);
            if (this.mustLetGo(newObj)) {
              this.letGo(newObj);
              return;
            }
            // Every update consumes the own writes it shows, status-only echoes included: only
            // then is the list of own writes as short as the writes the cache has not shown yet.
            const own = this.caughtUpWithOwnWrite(newObj);
            if (needsReconcile(oldObj, newObj) && !(own && ownWritesExplain(oldObj, newObj))) this.queue.add(keyOf(newObj), { lane: laneOf(newObj) });
          },
          onDelete: (obj) => {
            if (obj.metadata.uid !== undefined) {
              this.byUid.delete(obj.metadata.uid);
              this.released.delete(obj.metadata.uid);
            }
            this.ownWrites.delete(keyOf(obj));
            this.checked(keyOf(obj));
            this.opts.onResource?.('gone', obj);
            // Nothing to do for a deleted CR: with our finalizer, deletion arrives as an update.
          },
        },
      });
      this.informers.set(namespace ?? '', informer);
      informer.start();
    }
    this.startedAt = performance.now();
    this.queue.start();
    // No CR at all, or all checked before the last informer synced: told once synced.
    this.waitForSync().then(
      () => {
        this.listedAll = true;
        this.checked(undefined);
      },
      () => undefined, // stopped before syncing
    );
  }

  /**
   * `key` finished its first reconcile since start (or went). Once every CR the first LIST found
   * has, says so once: how long a restart or a failover took to look at everything.
   */
  private checked(key: string | undefined, failed = false): void {
    const unchecked = this.unchecked;
    if (unchecked === undefined) return;
    if (key !== undefined && unchecked.delete(key) && failed) this.failedAtStart++;
    if (unchecked.size > 0 || !this.listedAll) return;
    this.unchecked = undefined;
    const seconds = Math.round(performance.now() - this.startedAt) / 1000;
    this.opts.log.info({ resources: this.listedAtStart, failed: this.failedAtStart, seconds }, 'every resource checked since start');
  }

  async stop(drainTimeoutMs: number): Promise<void> {
    await Promise.all([...this.informers.values()].map((i) => i.stop()));
    // A kind that is no longer watched keeps no per-CR series.
    if (this.opts.onResource !== undefined) for (const i of this.informers.values()) for (const obj of i.list()) this.opts.onResource('gone', obj);
    // shutdown() stops taking work at once; only then may running reconciles be refused helm,
    // so that a refusal is not taken for a failure to retry.
    const drained = this.queue.shutdown({ drainTimeoutMs });
    this.opts.onStopping?.();
    await drained;
  }

  hasSynced(): boolean {
    return [...this.informers.values()].every((i) => i.hasSynced());
  }

  /** How many CRs the caches hold (with shards: this replica's share). */
  get size(): number {
    let n = 0;
    for (const i of this.informers.values()) n += i.list().length;
    return n;
  }

  /**
   * Shards, on stop: starts no reconcile any more and hands every CR back, each once its running
   * reconcile ended. Resolves when all are handed back (also those that arrive meanwhile).
   */
  async handOver(): Promise<void> {
    this.handingOver = true;
    for (const i of this.informers.values()) for (const obj of i.list()) this.letGo(obj);
    while (this.lettingGo.size > 0) await Promise.all(this.lettingGo.values());
  }

  private mustLetGo(obj: KubeObject): boolean {
    const shard = this.opts.shard;
    return shard !== undefined && (this.handingOver || shard.draining(obj));
  }

  /** Hands `obj` back once its running reconcile (if any) ended; retried until done or the CR left this replica. */
  private letGo(obj: KubeObject): void {
    const shard = this.opts.shard;
    const key = keyOf(obj);
    if (shard === undefined || this.lettingGo.has(key)) return;
    const done = (async () => {
      await this.inFlight.get(key)?.catch(() => undefined);
      // Given up after that: the CR stays this replica's until the sharder judges it gone.
      for (let attempt = 1; attempt <= ACK_ATTEMPTS; attempt++) {
        try {
          await shard.acknowledge(obj);
          return;
        } catch (err) {
          shard.onError?.(obj, err);
          await new Promise((resolve) => setTimeout(resolve, ACK_RETRY_MS));
        }
      }
    })().finally(() => {
      this.lettingGo.delete(key);
    });
    this.lettingGo.set(key, done);
  }

  async waitForSync(signal?: AbortSignal): Promise<void> {
    await Promise.all([...this.informers.values()].map((i) => i.waitForSync(signal)));
  }

  /** The first error an informer hit (e.g. Forbidden on LIST), for start-up diagnostics. */
  lastError(): unknown {
    for (const i of this.informers.values()) if (i.lastError !== undefined) return i.lastError;
    return undefined;
  }

  /** `respectBackoff` for hints (dependent objects changed): they never cut a failing key's backoff short. */
  enqueue(key: string, opts: AddOptions = {}): void {
    this.queue.add(key, opts);
  }

  /** The running reconcile of `key` reads its dependents now: hints that came before are covered. */
  hintsCovered(key: string): void {
    this.queue.dropSoftAdds(key);
  }

  /** Looks at `key` after `delayMs`, unless it runs sooner anyway (hints that may wait). */
  enqueueAfter(key: string, delayMs: number, opts: { respectBackoff?: boolean } = {}): void {
    this.queue.addAfter(key, delayMs, opts);
  }

  /** The reconciler wrote a CR (finalizers or status), starting from version `from`, and goes on with `written`. */
  noteOwnWrite(
    from: string | undefined,
    written: { metadata: { namespace?: string; name: string; resourceVersion?: string; uid?: string; deletionTimestamp?: string; finalizers?: readonly string[] } },
  ): void {
    const key = keyOf(written);
    const cached = this.get(key);
    const { uid, resourceVersion: to } = written.metadata;
    // Our finalizer came off a CR being deleted (while the cache still has it): it is released.
    if (uid !== undefined && cached !== undefined && releases(written, this.opts.finalizers())) this.released.add(uid);
    // The watch may have delivered the write before its response arrived: nothing left to skip.
    if (to === undefined || cached?.metadata.resourceVersion === to) return;
    const own = this.ownWrites.get(key);
    if (own === undefined) {
      this.ownWrites.set(key, [{ from, to }]);
      return;
    }
    own.push({ from, to });
    // Writes whose echoes never come (the watch restarted and relisted past them) must not pile up.
    if (own.length > MAX_OWN_WRITES_PER_KEY) own.splice(0, own.length - MAX_OWN_WRITES_PER_KEY);
  }

  /** How many own writes the cache has not shown yet, over all keys (for tests and diagnostics). */
  get unseenOwnWrites(): number {
    let n = 0;
    for (const own of this.ownWrites.values()) n += own.length;
    return n;
  }

  /** An update reached the cache; true when it is one of our own writes (nothing new to act on). */
  private caughtUpWithOwnWrite(obj: KubeObject): boolean {
    const key = keyOf(obj);
    const own = this.ownWrites.get(key);
    if (own === undefined) return false;
    // Events come in order: the writes up to this one are in the cache now.
    const i = own.findIndex((w) => w.to === obj.metadata.resourceVersion);
    if (i < 0 || i === own.length - 1) this.ownWrites.delete(key);
    else own.splice(0, i + 1);
    return i >= 0;
  }

  /** Whether the cache still shows a version one of our own writes replaced. */
  private behindOwnWrite(key: string, cr: CustomResource): boolean {
    const rv = cr.metadata.resourceVersion;
    return rv !== undefined && (this.ownWrites.get(key) ?? []).some((w) => w.from === rv);
  }

  /** Every known CR of this kind (after a chart change, every release must be upgraded). */
  enqueueAll(): void {
    for (const i of this.informers.values()) for (const obj of i.list()) this.queue.add(keyOf(obj));
  }

  /** Every cached CR of this kind (no specs: the cache keeps their summaries), e.g. to choose which one tries a changed chart first. */
  list(): CustomResource[] {
    return [...this.informers.values()].flatMap((i) => i.list() as CustomResource[]);
  }

  /** Every known CR in `namespace` (its ServiceAccount appeared or went). */
  enqueueNamespace(namespace: string): void {
    for (const i of this.informers.values()) for (const obj of i.list()) if (obj.metadata.namespace === namespace) this.queue.add(keyOf(obj));
  }

  /** The key of the CR with this uid, if it is cached (dependents name their owner by uid). */
  keyForUid(uid: string): string | undefined {
    return this.byUid.get(uid);
  }

  get(key: string): CustomResource | undefined {
    const { namespace, name } = splitKey(key);
    const informer = this.informers.get(namespace ?? '') ?? this.informers.get('');
    return informer?.get(namespace, name);
  }

  private cachedObject(key: string): KubeObject | undefined {
    const { namespace, name } = splitKey(key);
    return (this.informers.get(namespace ?? '') ?? this.informers.get(''))?.get(namespace, name);
  }

  /** What the cache keeps of a CR (no spec); `onSpec` sees it whole first. */
  private slim(obj: KubeObject): KubeObject {
    const slim = withoutSpec(obj);
    const onSpec = this.opts.onSpec;
    if (onSpec !== undefined) {
      try {
        onSpec({ ...(obj as CustomResource), specSummary: (slim as CustomResource).specSummary });
      } catch (err) {
        // Only an optimisation: the reconcile reads the spec itself then.
        this.opts.log.warn({ err: errorMessage(err) }, 'cannot derive from a spec as it arrived; the reconcile reads it');
      }
    }
    return slim;
  }

  private track(obj: KubeObject): void {
    if (obj.metadata.uid !== undefined) this.byUid.set(obj.metadata.uid, keyOf(obj));
  }

  private async process(key: string, signal: AbortSignal): Promise<{ requeueAfterMs?: number }> {
    // Being handed back: nothing new starts (checked and recorded in one step, so a drain that
    // arrives later waits for this very run).
    if (this.lettingGo.has(key) || (this.handingOver && this.opts.shard !== undefined)) return {};
    // Sharded: decided and recorded in one synchronous step, before the reconcile's first await.
    let end: (() => void) | undefined;
    const admit = this.opts.shard?.admit;
    const cr = admit === undefined ? undefined : this.cachedObject(key);
    if (admit !== undefined && cr !== undefined) {
      const admission = admit(cr);
      switch (admission.kind) {
        case 'act':
          end = admission.end;
          break;
        case 'let-go':
          this.letGo(cr);
          return {};
        case 'skip':
          return {};
        case 'wait':
          this.opts.log.debug({ namespace: cr.metadata.namespace, name: cr.metadata.name, reason: admission.reason }, 'not acting on the resource yet (shard ring)');
          return { requeueAfterMs: admission.retryMs };
      }
    }
    const run = this.reconcileKey(key, signal);
    this.inFlight.set(key, run);
    try {
      return await run;
    } finally {
      if (this.inFlight.get(key) === run) this.inFlight.delete(key);
      end?.();
    }
  }

  private async reconcileKey(key: string, signal: AbortSignal): Promise<{ requeueAfterMs?: number }> {
    const cr = this.get(key);
    if (cr === undefined) return {};
    // We removed its finalizer: only its deletion is left to arrive.
    if (cr.metadata.uid !== undefined && this.released.has(cr.metadata.uid)) {
      // Said (at debug): a CR skipped here that is not about to go is what a wrong release looks like.
      this.opts.log.debug({ namespace: cr.metadata.namespace, name: cr.metadata.name }, 'our finalizer is off this resource: nothing to do until its deletion arrives');
      this.checked(key);
      return {};
    }
    // The cache still shows a version our own write replaced (typically a follow-up queued right
    // after a status write): look again once the cache has caught up.
    if (this.behindOwnWrite(key, cr)) {
      return { requeueAfterMs: CACHE_CATCH_UP_MS };
    }
    const reconcileID = randomUUID();
    const log = this.opts.log.child({ namespace: cr.metadata.namespace, name: cr.metadata.name, reconcileID });
    const started = performance.now();
    try {
      const result = await this.opts.reconciler.reconcile(cr, log, signal);
      this.opts.onReconciled?.(result.requeueAfterMs === undefined ? 'success' : 'requeue_after', performance.now() - started);
      this.checked(key);
      return result;
    } catch (err) {
      // A CR deleted while this reconcile ran (typically a queued reconcile of a CR whose
      // finalizer was just removed): nothing is left to do or to retry.
      if (this.isGone(err, cr)) {
        log.debug('the custom resource is gone; nothing to reconcile');
        this.opts.onReconciled?.('success', performance.now() - started);
        this.checked(key);
        return {};
      }
      // Stopped while helm ran (the drain time was up): the release may be left failed or
      // pending-*, which the next owner clears; not a failure of the CR, nothing to retry here.
      if (err instanceof HelmCallInterrupted) {
        log.info({ err: err.message }, 'stopping: the running helm call was stopped; the next owner of this release finishes the work');
        return {};
      }
      // Stopping before its helm call started: nothing was done, nothing to count or retry.
      if (err instanceof HelmCallsStopped) {
        log.debug('stopping: the helm call did not start');
        return {};
      }
      this.opts.onReconciled?.('error', performance.now() - started);
      this.checked(key, true);
      throw err;
    }
  }

  /** Whether `err` is the API server saying this very CR (or its status) no longer exists. */
  private isGone(err: unknown, cr: CustomResource): boolean {
    if (!(err instanceof KubeApiError) || err.reason !== 'NotFound' || err.path === undefined) return false;
    const own = this.opts.client.pathFor(this.opts.resource, cr.metadata.namespace, cr.metadata.name);
    return err.path === own || err.path.startsWith(`${own}/`) || err.path.startsWith(`${own}?`);
  }
}
