/**
 * A list+watch cache of one resource (optionally one namespace / selector). It keeps itself correct
 * through everything a long-running watch meets: normal watch expiry (resume from the last
 * resourceVersion), 410 Gone (full relist, with synthetic add/update/delete for what changed while
 * away), network errors (reconnect with capped exponential backoff and jitter) and silently dead
 * connections (a watchdog restarts the watch when not even a bookmark arrived for too long).
 */
import type { Logger } from 'pino';
import { realClock, type Clock, type TimerHandle } from '../lib/clock.js';
import { backoffDelay } from '../lib/backoff.js';
import { KubeApiError, isGone } from './errors.js';
import { diffRelist } from './relist.js';
import { ACCEPT_METADATA_LIST, ACCEPT_METADATA_WATCH, type KubeClient, type Query, type WatchHandle } from './rest.js';
import { keyOf, objectKey, type ApiResource, type KubeList, type KubeObject, type KubeStatus, type WatchEventType } from './types.js';

export type { KubeObject } from './types.js';

export interface InformerHandlers<T extends KubeObject> {
  onAdd?(obj: T): void;
  onUpdate?(oldObj: T, newObj: T): void;
  onDelete?(obj: T): void;
}

export interface InformerOptions<T extends KubeObject> {
  client: KubeClient;
  resource: ApiResource;
  /** undefined = all namespaces (ignored for cluster-scoped resources). */
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** Cache PartialObjectMetadata only (dependent objects, Helm release Secrets): no spec, no data. */
  metadataOnly?: boolean;
  /** Handlers should only enqueue; an exception is logged and never stops the informer. */
  handlers: InformerHandlers<T>;
  log?: Logger;
  /** Watchdog: nothing (event or bookmark) for this long → restart the watch; default 5 min. */
  silenceTimeoutMs?: number;
  /** Reconnect backoff; default 800 ms doubling to 30 s. */
  backoff?: { initialMs: number; maxMs: number };
  /** LIST page size (limit/continue); default 500. */
  pageSize?: number;
  /**
   * Bounds LIST pages by size too (a page is whole in memory while it is parsed): the first page
   * asks for `first` objects, each next one for as many as fit `bytes` at the previous page's
   * average `sizeOf` (of the objects as `transform` left them), at most `pageSize`.
   */
  pageBudget?: { readonly bytes: number; readonly first: number; readonly sizeOf: (obj: T) => number };
  /** Keep metadata.managedFields (dropped by default: large and never needed from a cache). */
  keepManagedFields?: boolean;
  /**
   * Shrinks each object as it arrives from list or watch, before the cache keeps it (e.g. a CR
   * without its spec): the cache then never holds what it drops, whatever tenants put there.
   */
  transform?: (obj: T) => T;
  clock?: Clock;
  /** [0, 1) source for jitter and watch timeouts; replaceable in tests. */
  random?: () => number;
}

const DEFAULT_SILENCE_MS = 5 * 60_000;
const DEFAULT_BACKOFF = { initialMs: 800, maxMs: 30_000 };
/** Reconnect delays vary by ±20 % so informers that lost the API server together do not return in lockstep. */
const RECONNECT_JITTER = 0.2;
/** A watch that closes this fast without delivering anything is treated as a failure (backoff). */
const SHORT_WATCH_MS = 1_000;

/** How one watch connection ended. */
type WatchEnd =
  | { kind: 'closed'; events: number; durationMs: number }
  | { kind: 'gone'; err: unknown; events: number; durationMs: number }
  | { kind: 'silent' }
  | { kind: 'error'; err: unknown };

export class Informer<T extends KubeObject> {
  private readonly client: KubeClient;
  private readonly resource: ApiResource;
  private readonly handlers: InformerHandlers<T>;
  private readonly log: Logger | undefined;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly path: string;
  private readonly silenceMs: number;
  private readonly backoff: { initialMs: number; maxMs: number };
  private readonly pageSize: number;

  private cache = new Map<string, T>();
  private resourceVersion = '';
  private synced = false;
  private stopped = false;
  private running: Promise<void> | undefined;
  private error: unknown;
  private syncWaiters: { resolve: () => void; reject: (e: Error) => void }[] = [];
  private listAbort: AbortController | undefined;
  private cancelCurrentWatch: (() => void) | undefined;
  private wakeSleeper: (() => void) | undefined;

  constructor(private readonly opts: InformerOptions<T>) {
    this.client = opts.client;
    this.resource = opts.resource;
    this.handlers = opts.handlers;
    this.log = opts.log?.child({ informer: describe(opts) });
    this.clock = opts.clock ?? realClock;
    this.random = opts.random ?? Math.random;
    this.path = opts.client.pathFor(opts.resource, opts.resource.namespaced ? opts.namespace : undefined);
    this.silenceMs = opts.silenceTimeoutMs ?? DEFAULT_SILENCE_MS;
    this.backoff = opts.backoff ?? DEFAULT_BACKOFF;
    this.pageSize = opts.pageSize ?? 500;
    if (!(this.silenceMs > 0)) throw new RangeError('silenceTimeoutMs must be > 0');
    if (!(this.backoff.initialMs > 0 && this.backoff.maxMs >= this.backoff.initialMs)) {
      throw new RangeError('backoff needs 0 < initialMs <= maxMs');
    }
    if (!(Number.isInteger(this.pageSize) && this.pageSize > 0)) throw new RangeError('pageSize must be a positive integer');
  }

  /** Starts listing and watching in the background; idempotent. */
  start(): void {
    if (this.running || this.stopped) return;
    this.running = this.run().catch((err: unknown) => {
      // run() handles its own errors; reaching here is a bug, but it must not be an unhandled rejection.
      this.error = err;
      this.log?.error({ err }, 'informer loop crashed');
    });
  }

  /** Stops the watch and any pending list or backoff; resolves when the loop has exited. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.listAbort?.abort();
    this.cancelCurrentWatch?.();
    this.wakeSleeper?.();
    const waiters = this.syncWaiters;
    this.syncWaiters = [];
    for (const w of waiters) w.reject(new Error(`informer ${describe(this.opts)} stopped before it synced`));
    await this.running;
  }

  /** True once the first LIST has filled the cache. */
  hasSynced(): boolean {
    return this.synced;
  }

  waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.synced) return Promise.resolve();
    if (this.stopped) return Promise.reject(new Error(`informer ${describe(this.opts)} is stopped`));
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        this.syncWaiters = this.syncWaiters.filter((w) => w !== waiter);
        reject(signal?.reason as Error);
      };
      const waiter = {
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        reject: (e: Error) => {
          signal?.removeEventListener('abort', onAbort);
          reject(e);
        },
      };
      this.syncWaiters.push(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  get(namespace: string | undefined, name: string): T | undefined {
    return this.cache.get(objectKey(this.resource.namespaced ? namespace : undefined, name));
  }

  /** A snapshot of the cache. The objects are shared with the cache: never mutate them. */
  list(): T[] {
    return [...this.cache.values()];
  }

  /** How many objects the cache holds. */
  get size(): number {
    return this.cache.size;
  }

  /** The last LIST/WATCH failure (e.g. Forbidden: missing RBAC), cleared by the next success. */
  get lastError(): unknown {
    return this.error;
  }

  /** The resourceVersion the next watch would resume from. */
  get lastResourceVersion(): string {
    return this.resourceVersion;
  }

  private async run(): Promise<void> {
    let needList = true;
    let failures = 0;
    while (!this.isStopped()) {
      const relisting = needList;
      try {
        if (needList) {
          await this.relist();
          needList = false;
          this.error = undefined;
          failures = 0;
        }
        const end = await this.watchOnce();
        if (this.isStopped()) break;
        switch (end.kind) {
          case 'closed':
            if (end.events === 0 && end.durationMs < SHORT_WATCH_MS) {
              throw new KubeApiError(`watch of ${this.path} closed immediately`, { status: 0, reason: 'Unavailable' });
            }
            failures = 0;
            break; // resume from the last resourceVersion
          case 'gone':
            needList = true;
            // 410 right after a fresh LIST is not a gap to repair but a server refusing our
            // resourceVersions: back off instead of spinning list → watch → 410.
            if (relisting && end.events === 0 && end.durationMs < SHORT_WATCH_MS) throw end.err;
            this.log?.info({ resourceVersion: this.resourceVersion }, 'watch expired (410); relisting');
            break;
          case 'silent':
            this.log?.warn({ silenceMs: this.silenceMs }, 'watch silent too long; restarting it');
            break;
          case 'error':
            throw end.err;
        }
      } catch (err) {
        if (this.isStopped()) break;
        this.error = err;
        if (isGone(err)) needList = true; // e.g. an expired continue token while paging
        failures++;
        const delay = backoffDelay(failures, { ...this.backoff, jitter: RECONNECT_JITTER }, this.random);
        this.log?.warn({ err, attempt: failures, retryInMs: Math.round(delay) }, 'list/watch failed; retrying');
        await this.sleep(delay);
      }
    }
  }

  /** A method, not the field, so the compiler does not assume it unchanged across awaits. */
  private isStopped(): boolean {
    return this.stopped;
  }

  /** Paginated LIST, then swap the cache and tell handlers what changed. */
  private async relist(): Promise<void> {
    const items: T[] = [];
    let cont: string | undefined;
    let rv = '';
    const budget = this.opts.pageBudget;
    let limit = budget === undefined ? this.pageSize : Math.max(1, Math.min(this.pageSize, budget.first));
    this.listAbort = new AbortController();
    try {
      do {
        const page = await this.client.request<KubeList<T>>('GET', this.path, {
          query: { ...this.selectors(), limit, continue: cont },
          accept: this.opts.metadataOnly ? ACCEPT_METADATA_LIST : undefined,
          signal: this.listAbort.signal,
          timeoutMs: 60_000,
        });
        const before = items.length;
        for (const item of page.items) items.push(this.normalize(item));
        if (budget !== undefined && items.length > before) {
          let bytes = 0;
          for (let i = before; i < items.length; i++) bytes += budget.sizeOf(items[i] as T);
          const average = Math.max(1, bytes / (items.length - before));
          limit = Math.max(1, Math.min(this.pageSize, Math.floor(budget.bytes / average)));
        }
        cont = page.metadata.continue || undefined;
        rv = page.metadata.resourceVersion ?? rv;
      } while (cont && !this.stopped);
    } finally {
      this.listAbort = undefined;
    }
    if (this.stopped) return;
    const diff = diffRelist(this.cache, items);
    this.cache = diff.cache;
    this.resourceVersion = rv;
    const initial = !this.synced;
    this.synced = true;
    if (!initial) {
      this.log?.debug({ added: diff.added.length, updated: diff.updated.length, deleted: diff.deleted.length }, 'relisted');
    }
    for (const obj of diff.deleted) this.fire('onDelete', () => this.handlers.onDelete?.(obj));
    for (const obj of diff.added) this.fire('onAdd', () => this.handlers.onAdd?.(obj));
    for (const [o, n] of diff.updated) this.fire('onUpdate', () => this.handlers.onUpdate?.(o, n));
    if (initial) {
      const waiters = this.syncWaiters;
      this.syncWaiters = [];
      for (const w of waiters) w.resolve();
    }
  }

  /** One WATCH connection from the current resourceVersion, until it ends for any reason. */
  private watchOnce(): Promise<WatchEnd> {
    return new Promise<WatchEnd>((resolve) => {
      const started = this.clock.now();
      let events = 0;
      let ended = false;
      let handle: WatchHandle | undefined;
      let watchdog: TimerHandle | undefined;

      const end = (how: WatchEnd): void => {
        if (ended) return;
        ended = true;
        if (watchdog !== undefined) this.clock.clearTimeout(watchdog);
        this.cancelCurrentWatch = undefined;
        handle?.abort();
        resolve(how);
      };
      const armWatchdog = (): void => {
        if (watchdog !== undefined) this.clock.clearTimeout(watchdog);
        watchdog = this.clock.setTimeout(() => {
          end({ kind: 'silent' });
        }, this.silenceMs);
      };
      this.cancelCurrentWatch = () => {
        end({ kind: 'closed', events, durationMs: this.clock.now() - started });
      };

      // Randomized so that many informers restarted together do not all reconnect together.
      const timeoutSeconds = 300 + Math.floor(this.random() * 300);
      const query: Query = {
        ...this.selectors(),
        resourceVersion: this.resourceVersion || undefined,
        allowWatchBookmarks: true,
        timeoutSeconds,
      };
      armWatchdog();
      void this.client
        .watch(
          this.path,
          query,
          (type, obj) => {
            if (ended) return;
            armWatchdog();
            if (type === 'ERROR') {
              const err = KubeApiError.fromStatus((obj as KubeStatus | null) ?? {}, 500, { method: 'GET', path: this.path });
              end(isGone(err) ? { kind: 'gone', err, events, durationMs: this.clock.now() - started } : { kind: 'error', err });
              return;
            }
            events++;
            this.error = undefined; // the watch works: a past failure is no longer current
            this.apply(type, obj as T);
          },
          (err) => {
            if (err === null || err === undefined) end({ kind: 'closed', events, durationMs: this.clock.now() - started });
            else end(isGone(err) ? { kind: 'gone', err, events, durationMs: this.clock.now() - started } : { kind: 'error', err });
          },
          {
            accept: this.opts.metadataOnly ? ACCEPT_METADATA_WATCH : undefined,
            // The transport's own idle limit is a backstop only; the watchdog above decides.
            inactivityTimeoutMs: this.silenceMs + 30_000,
          },
        )
        .then((h) => {
          handle = h;
          if (ended) h.abort();
        })
        .catch((err: unknown) => {
          end({ kind: 'error', err });
        });
    });
  }

  /** Applies one watch event to the cache, then tells the handlers. */
  private apply(type: WatchEventType, raw: T): void {
    const rv = raw.metadata.resourceVersion;
    if (rv) this.resourceVersion = rv;
    if (type === 'BOOKMARK') return;
    const obj = this.normalize(raw);
    const key = keyOf(obj);
    const old = this.cache.get(key);
    if (type === 'DELETED') {
      this.cache.delete(key);
      this.fire('onDelete', () => this.handlers.onDelete?.(obj));
      return;
    }
    this.cache.set(key, obj);
    if (!old) this.fire('onAdd', () => this.handlers.onAdd?.(obj));
    else if (old.metadata.resourceVersion !== obj.metadata.resourceVersion) {
      this.fire('onUpdate', () => this.handlers.onUpdate?.(old, obj));
    }
  }

  /**
   * List items and metadata-only objects carry no (or a meta.k8s.io) apiVersion/kind: stamp the
   * resource's own, so every cached object says what it is. Metadata-only mode also drops anything
   * but metadata in case the server ignored the Accept header.
   */
  private normalize(obj: T): T {
    const out = (this.opts.metadataOnly ? { metadata: obj.metadata } : obj) as T;
    out.apiVersion = this.resource.apiVersion;
    out.kind = this.resource.kind;
    if (!this.opts.keepManagedFields) delete out.metadata.managedFields;
    return this.opts.transform === undefined ? out : this.opts.transform(out);
  }

  private selectors(): Query {
    return { labelSelector: this.opts.labelSelector || undefined, fieldSelector: this.opts.fieldSelector || undefined };
  }

  private fire(what: string, call: () => void): void {
    try {
      call();
    } catch (err) {
      this.log?.error({ err, handler: what }, 'informer handler threw; event dropped for this handler');
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = this.clock.setTimeout(() => {
        this.wakeSleeper = undefined;
        resolve();
      }, ms);
      this.wakeSleeper = () => {
        this.clock.clearTimeout(timer);
        this.wakeSleeper = undefined;
        resolve();
      };
    });
  }
}


function describe(o: Pick<InformerOptions<KubeObject>, 'resource' | 'namespace' | 'labelSelector'>): string {
  const scope = o.resource.namespaced ? (o.namespace ?? '*') : '-';
  const sel = o.labelSelector ? `?${o.labelSelector}` : '';
  return `${o.resource.kind}.${o.resource.apiVersion}@${scope}${sel}`;
}
