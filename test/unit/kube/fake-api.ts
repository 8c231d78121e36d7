/**
 * An in-memory stand-in for the API server's LIST and WATCH of one resource, enough to drive the
 * informer through every path (pagination, events, bookmarks, 410, errors) deterministically.
 */
import { matchesLabels, parseLabelQuery } from '../../../src/config/label-query.js';
import { KubeApiError } from '../../../src/kube/errors.js';
import { resourcePath } from '../../../src/kube/resource.js';
import type { KubeClient, Query, RequestOptions, WatchHandle } from '../../../src/kube/rest.js';
import type { ApiResource, KubeList, KubeObject, WatchEventType } from '../../../src/kube/types.js';

export const configMaps: ApiResource = { group: '', version: 'v1', apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };

export interface OpenWatch {
  readonly path: string;
  readonly query: Query;
  readonly accept: string | undefined;
  aborted: boolean;
  ended: boolean;
  emit(type: WatchEventType, obj: unknown): void;
  /** Server-side end: normal (no error) or with an error. */
  close(err?: unknown): void;
}

export class FakeApi implements KubeClient {
  rv = 100;
  readonly objects = new Map<string, KubeObject>();
  readonly lists: { path: string; query: Query; accept: string | undefined }[] = [];
  readonly watches: OpenWatch[] = [];
  /**
   * Answer LISTs and WATCHes by their label selector, as the API server does (off by default: most
   * tests put unlabelled objects and only check the selector is sent). A watched object whose
   * labels stop or start matching comes as DELETED or ADDED.
   */
  honourSelectors = false;
  /** Errors the next LIST / WATCH calls fail with, in order. */
  readonly listFailures: (Error | undefined)[] = [];
  readonly watchFailures: Error[] = [];

  /** Creates or updates an object (bumping its resourceVersion) and tells open watches. */
  put(name: string, data: Record<string, string> = {}, ns = 'default', extra: Partial<KubeObject['metadata']> = {}): KubeObject {
    const key = `${ns}/${name}`;
    const previous = this.objects.get(key);
    const obj: KubeObject = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, namespace: ns, uid: `uid-${name}`, resourceVersion: String(++this.rv), ...extra },
      data,
    };
    this.objects.set(key, obj);
    this.broadcast(previous !== undefined ? 'MODIFIED' : 'ADDED', obj, previous);
    return obj;
  }

  remove(name: string, ns = 'default'): void {
    const key = `${ns}/${name}`;
    const obj = this.objects.get(key);
    if (!obj) throw new Error(`no ${key}`);
    this.objects.delete(key);
    this.broadcast('DELETED', { ...obj, metadata: { ...obj.metadata, resourceVersion: String(++this.rv) } });
  }

  /** The newest watch that is still open. */
  get current(): OpenWatch | undefined {
    const w = this.watches.at(-1);
    return w && !w.ended ? w : undefined;
  }

  /** Live broadcasting can be switched off to simulate changes made while nobody watches. */
  live = true;

  private broadcast(type: WatchEventType, obj: KubeObject, previous?: KubeObject): void {
    if (!this.live) return;
    for (const w of this.watches) {
      if (w.ended) continue;
      const as = eventSeen(type, this.selected(w.query, obj), previous !== undefined && this.selected(w.query, previous));
      if (as !== undefined) w.emit(as, structuredClone(obj));
    }
  }

  private selected(query: Query, obj: KubeObject): boolean {
    const selector = query.labelSelector;
    if (!this.honourSelectors || typeof selector !== 'string') return true;
    const parsed = parseLabelQuery(selector);
    if (!parsed.ok) throw new Error(`bad label selector ${selector}: ${parsed.reason}`);
    return matchesLabels(parsed.requirements, obj.metadata.labels);
  }

  private readonly held = new Map<string, Promise<undefined>>();

  /** LISTs with exactly this label selector wait (a slow LIST) until the returned function is called. */
  holdLists(labelSelector: string): () => void {
    const { promise, resolve } = Promise.withResolvers<undefined>();
    this.held.set(labelSelector, promise);
    return () => {
      this.held.delete(labelSelector);
      resolve(undefined);
    };
  }

  request<T = unknown>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    if (method !== 'GET') return Promise.reject(new Error(`fake supports GET only, got ${method}`));
    const query = opts.query ?? {};
    const hold = this.held.get(String(query.labelSelector));
    if (hold !== undefined) {
      // As a real request, a held one ends when its caller aborts it.
      const aborted = new Promise<never>((_, reject) => opts.signal?.addEventListener('abort', () => { reject(new Error('aborted')); }, { once: true }));
      return Promise.race([hold, aborted]).then(() => this.request<T>(method, path, opts));
    }
    this.lists.push({ path, query, accept: opts.accept });
    const failure = this.listFailures.shift();
    if (failure !== undefined) return Promise.reject(failure);
    const all = [...this.objects.values()].filter((o) => this.selected(query, o)).sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
    const limit = typeof query.limit === 'number' ? query.limit : all.length;
    const start = typeof query.continue === 'string' ? Number(query.continue) : 0;
    const items = all.slice(start, start + limit).map((o) => {
      // Real list items carry no apiVersion/kind.
      const { apiVersion: _a, kind: _k, ...rest } = structuredClone(o);
      return rest;
    });
    const next = start + limit < all.length ? String(start + limit) : undefined;
    const list: KubeList = { metadata: { resourceVersion: String(this.rv), ...(next ? { continue: next } : {}) }, items };
    return Promise.resolve(list as T);
  }

  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- implements KubeClient.watch
  watch<T = unknown>(
    path: string,
    query: Query,
    onEvent: (type: WatchEventType, obj: T) => void,
    onDone: (err: unknown) => void,
    opts: { accept?: string } = {},
  ): Promise<WatchHandle> {
    const failure = this.watchFailures.shift();
    const w: OpenWatch = {
      path,
      query,
      accept: opts.accept,
      aborted: false,
      ended: false,
      emit: (type, obj) => {
        if (!w.ended) onEvent(type, obj as T);
      },
      close: (err?: unknown) => {
        if (w.ended) return;
        w.ended = true;
        onDone(err ?? null);
      },
    };
    this.watches.push(w);
    if (failure !== undefined) w.close(failure);
    return Promise.resolve({
      abort: () => {
        if (w.ended) return;
        w.aborted = true;
        w.close();
      },
    });
  }

  resourceFor(): Promise<ApiResource> {
    return Promise.resolve(configMaps);
  }

  forward(): never {
    throw new Error('not used');
  }

  pathFor = resourcePath;
}

/** The event a watch selecting by labels gets for a change, from whether it selects the object now and did before. */
function eventSeen(type: WatchEventType, selectsNow: boolean, selectedBefore: boolean): WatchEventType | undefined {
  if (type === 'DELETED') return selectsNow ? 'DELETED' : undefined;
  if (selectsNow) return selectedBefore ? 'MODIFIED' : 'ADDED';
  return selectedBefore ? 'DELETED' : undefined;
}

export const gone = (): KubeApiError => new KubeApiError('too old resource version: 1 (200)', { status: 410, reason: 'Expired' });
export const unavailable = (): KubeApiError => new KubeApiError('connection refused', { status: 0, reason: 'Unavailable' });
export const forbidden = (): KubeApiError =>
  new KubeApiError('configmaps is forbidden: User "x" cannot list resource "configmaps"', { status: 403, reason: 'Forbidden' });
