/**
 * A thin REST client over a kubeconfig connection (kubeconfig.ts: client-node's parsing and
 * authentication); everything else (URLs, JSON, errors, timeouts, watches with an Accept header) is
 * ours, because that is where the generated client gets in the way (no metadata-only lists, no
 * control over watch framing).
 */
import { Agent, ProxyAgent, fetch, type Dispatcher } from 'undici';
import { Discovery } from './discovery.js';
import { KubeApiError } from './errors.js';
import type { Credentials, KubeConnection } from './kubeconfig.js';
import { LineDecoder } from './lines.js';
import { resourcePath } from './resource.js';
import { errorWithCause } from '../lib/errors.js';
import type { ApiResource, WatchEventType } from './types.js';

export { KubeApiError } from './errors.js';
export { loadKubeConfig, type KubeConnection } from './kubeconfig.js';
export type { ApiResource } from './types.js';

export type HttpVerb = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
export type ContentType =
  | 'application/json'
  | 'application/merge-patch+json'
  | 'application/strategic-merge-patch+json'
  | 'application/apply-patch+yaml'
  | 'application/json-patch+json';
export type Query = Record<string, string | number | boolean | undefined>;

export interface RequestOptions {
  query?: Query;
  /** Serialized as JSON (which is also valid YAML for apply patches); a string is sent as is. */
  body?: unknown;
  contentType?: ContentType;
  accept?: string;
  signal?: AbortSignal;
  /** Whole-request deadline; default 30 s. */
  timeoutMs?: number;
}

export interface WatchOptions {
  accept?: string;
  /** No bytes for this long → the watch ends with a KubeApiError reason Timeout; default 5 min. */
  inactivityTimeoutMs?: number;
}

export interface WatchHandle {
  /** Ends the watch; `onDone(null)` follows unless it already ended. Idempotent. */
  abort(): void;
}

export interface KubeClient {
  request<T = unknown>(method: HttpVerb, path: string, opts?: RequestOptions): Promise<T>;
  /**
   * Opens a watch (`watch=true` is added to `query`). Resolves once the server accepted it or it
   * failed; never rejects. `onDone` is called exactly once: `null` when the server closed the
   * stream normally or `abort()` was called, otherwise the error (a KubeApiError). If `onEvent`
   * throws, the watch ends with that error.
   */
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- the caller names the event object shape it expects
  watch<T = unknown>(
    path: string,
    query: Query,
    onEvent: (type: WatchEventType, obj: T) => void,
    onDone: (err: unknown) => void,
    opts?: WatchOptions,
  ): Promise<WatchHandle>;
  /** Discovery, cached per group/version; refreshed once on a miss; NotFound KubeApiError when absent. */
  resourceFor(apiVersion: string, kind: string): Promise<ApiResource>;
  pathFor(r: ApiResource, namespace?: string, name?: string, subresource?: string): string;
}

export interface KubeClientOptions {
  userAgent?: string;
  /** Called after every request (and every watch connection, method `WATCH`), e.g. for metrics. */
  onRequest?: (method: string, path: string, status: number, durationMs: number) => void;
}

/** Accept header for a LIST that returns metadata only (PartialObjectMetadataList), with JSON fallback. */
export const ACCEPT_METADATA_LIST = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';
/** Accept header for a WATCH whose objects are metadata only (PartialObjectMetadata), with JSON fallback. */
export const ACCEPT_METADATA_WATCH = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json';

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_WATCH_INACTIVITY_MS = 5 * 60_000;
/**
 * One connection pool for all requests (a TLS handshake per request would be the alternative),
 * renewed now and then so rotated certificate files are picked up, and at once when an exec plugin
 * hands out a different client certificate.
 */
const DISPATCHER_MAX_AGE_MS = 15 * 60_000;

export function createKubeClient(conn: KubeConnection, opts: KubeClientOptions = {}): KubeClient {
  const server = conn.server;
  const userAgent = opts.userAgent ?? 'chartpilot';
  const onRequest = opts.onRequest;

  let pool: { dispatcher: Dispatcher; createdAt: number; cert: Credentials['cert']; key: Credentials['key'] } | undefined;

  function newDispatcher(creds: Credentials): Dispatcher {
    const tls = conn.tls();
    const connect = { ...tls, ...(creds.cert === undefined ? {} : { cert: creds.cert }), ...(creds.key === undefined ? {} : { key: creds.key }) };
    if (conn.proxyUrl !== undefined) return new ProxyAgent({ uri: conn.proxyUrl, requestTls: connect });
    return new Agent({ connect });
  }

  /** Fresh credentials per request (tokens expire, exec plugins refresh), a shared connection pool. */
  async function authenticate(): Promise<{ headers: Record<string, string>; dispatcher: Dispatcher }> {
    let creds: Credentials;
    let dispatcher: Dispatcher;
    try {
      creds = await conn.credentials();
      const now = Date.now();
      if (!pool || now - pool.createdAt > DISPATCHER_MAX_AGE_MS || pool.cert !== creds.cert || pool.key !== creds.key) {
        const old = pool?.dispatcher;
        pool = { dispatcher: newDispatcher(creds), createdAt: now, cert: creds.cert, key: creds.key };
        // Graceful: close() lets in-flight requests and open watches on the old pool finish.
        if (old) void old.close().catch(() => undefined);
      }
      dispatcher = pool.dispatcher;
    } catch (cause) {
      throw new KubeApiError(`cannot authenticate to ${server}: ${errorWithCause(cause)}`, { status: 0, reason: 'Unauthorized', cause });
    }
    return { headers: { ...creds.headers }, dispatcher };
  }

  function buildUrl(path: string, query: Query | undefined): URL {
    const url = new URL(server + path);
    for (const [k, v] of Object.entries(query ?? {})) {
      if (v !== undefined) url.searchParams.set(k, String(v));
    }
    return url;
  }

  async function request<T>(method: HttpVerb, path: string, ro: RequestOptions = {}): Promise<T> {
    const url = buildUrl(path, ro.query);
    const timeout = AbortSignal.timeout(ro.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    const signal = ro.signal ? AbortSignal.any([ro.signal, timeout]) : timeout;
    const started = performance.now();
    let status = 0;
    try {
      const { headers, dispatcher } = await authenticate();
      headers['User-Agent'] = userAgent;
      headers.Accept = ro.accept ?? 'application/json';
      let body: string | undefined;
      if (ro.body !== undefined) {
        body = typeof ro.body === 'string' ? ro.body : JSON.stringify(ro.body);
        headers['Content-Type'] = ro.contentType ?? 'application/json';
      }
      const res = await fetch(url, { method, headers, body, dispatcher, signal });
      status = res.status;
      const text = await res.text();
      if (!res.ok) throw KubeApiError.fromResponse(res.status, text, { method, path });
      return (text ? JSON.parse(text) : undefined) as T;
    } catch (err) {
      if (err instanceof KubeApiError) throw err;
      // The caller's own abort surfaces as an abort, not as an API failure.
      if (ro.signal?.aborted) throw ro.signal.reason;
      if (timeout.aborted) {
        throw new KubeApiError(`${method} ${path}: no response within ${ro.timeoutMs ?? DEFAULT_TIMEOUT_MS} ms`, {
          status: 0,
          reason: 'Timeout',
          method,
          path,
          cause: err,
        });
      }
      if (err instanceof SyntaxError) {
        throw new KubeApiError(`${method} ${path}: response is not JSON`, { status, reason: 'InternalError', method, path, cause: err });
      }
      throw new KubeApiError(`${method} ${path}: ${errorWithCause(err)}`, { status: 0, reason: 'Unavailable', method, path, cause: err });
    } finally {
      onRequest?.(method, path, status, performance.now() - started);
    }
  }

  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- mirrors KubeClient.watch
  async function watch<T>(
    path: string,
    query: Query,
    onEvent: (type: WatchEventType, obj: T) => void,
    onDone: (err: unknown) => void,
    wo: WatchOptions = {},
  ): Promise<WatchHandle> {
    const url = buildUrl(path, { ...query, watch: true });
    const controller = new AbortController();
    const inactivityMs = wo.inactivityTimeoutMs ?? DEFAULT_WATCH_INACTIVITY_MS;
    let finished = false;
    let aborted = false; // by our caller
    let timedOut = false;
    let timer: NodeJS.Timeout | undefined;

    const finish = (err: unknown): void => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      controller.abort();
      onDone(err);
    };
    const armTimer = (): void => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        timedOut = true;
        controller.abort();
      }, inactivityMs);
      timer.unref();
    };
    const failure = (err: unknown): unknown => {
      if (aborted) return null;
      if (err instanceof KubeApiError) return err;
      if (timedOut) {
        return new KubeApiError(`watch ${path}: nothing received for ${inactivityMs} ms`, { status: 0, reason: 'Timeout', method: 'GET', path, cause: err });
      }
      return new KubeApiError(`watch ${path}: ${errorWithCause(err)}`, { status: 0, reason: 'Unavailable', method: 'GET', path, cause: err });
    };
    const handle: WatchHandle = {
      abort: () => {
        if (finished) return;
        aborted = true;
        controller.abort();
        finish(null);
      },
    };

    const started = performance.now();
    let body: AsyncIterable<Uint8Array>;
    try {
      armTimer(); // until headers arrive it bounds the connect, then it becomes the inactivity timeout
      const { headers, dispatcher } = await authenticate();
      headers['User-Agent'] = userAgent;
      headers.Accept = wo.accept ?? 'application/json';
      const res = await fetch(url, { method: 'GET', headers, dispatcher, signal: controller.signal });
      onRequest?.('WATCH', path, res.status, performance.now() - started);
      if (res.status !== 200 || !res.body) {
        throw KubeApiError.fromResponse(res.status, await res.text(), { method: 'GET', path });
      }
      body = res.body;
    } catch (err) {
      finish(failure(err));
      return handle;
    }

    const pump = async (): Promise<void> => {
      const lines = new LineDecoder();
      const deliver = (line: string): void => {
        let ev: { type: WatchEventType; object: T };
        try {
          ev = JSON.parse(line) as { type: WatchEventType; object: T };
        } catch (cause) {
          // Ending the watch (and resuming from the last good resourceVersion) loses nothing;
          // skipping the line would silently drop an event.
          throw new KubeApiError(`watch ${path}: malformed event`, { status: 0, reason: 'InternalError', path, cause });
        }
        onEvent(ev.type, ev.object);
      };
      try {
        armTimer();
        for await (const chunk of body) {
          armTimer();
          for (const line of lines.push(chunk)) {
            if (finished) return;
            deliver(line);
          }
        }
        for (const line of lines.end()) {
          if (finished) return;
          deliver(line);
        }
        finish(null);
      } catch (err) {
        finish(failure(err));
      }
    };
    void pump();
    return handle;
  }

  const discovery = new Discovery((path) => request('GET', path));

  return {
    request,
    watch,
    resourceFor: (apiVersion, kind) => discovery.resourceFor(apiVersion, kind),
    pathFor: resourcePath,
  };
}
