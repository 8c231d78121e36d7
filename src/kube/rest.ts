/**
 * A thin REST client over a kubeconfig connection (kubeconfig.ts: client-node's parsing and
 * authentication); everything else (URLs, JSON, errors, timeouts, watches with an Accept header) is
 * ours, because that is where the generated client gets in the way (no metadata-only lists, no
 * control over watch framing). The pieces: authenticator.ts (credentials and the connection pool),
 * request.ts (one request), watch.ts (one watch); this file puts them together as a KubeClient.
 */
import { Authenticator } from './authenticator.js';
import { Discovery } from './discovery.js';
import { forwardRequest, type ForwardRequest, type ForwardResponse } from './forward.js';
import type { HttpVerb, Query, Transport } from './http.js';
import type { KubeConnection } from './kubeconfig.js';
import { sendRequest, type RequestOptions } from './request.js';
import { resourcePath } from './resource.js';
import type { ApiResource, WatchEventType } from './types.js';
import { openWatch, type WatchHandle, type WatchOptions } from './watch.js';

export { KubeApiError } from './errors.js';
export type { ForwardRequest, ForwardResponse } from './forward.js';
export type { ContentType, HttpVerb, Query } from './http.js';
export { loadKubeConfig, type KubeConnection } from './kubeconfig.js';
export type { RequestOptions } from './request.js';
export type { ApiResource } from './types.js';
export type { WatchHandle, WatchOptions } from './watch.js';

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
  /**
   * Passes one request through as bytes (for a proxy): resolves with the server's status, headers
   * and streaming body, whatever the status; rejects (KubeApiError, status 0) only without a response.
   */
  forward(req: ForwardRequest): Promise<ForwardResponse>;
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

/** A client over `conn`: requests and watches share its authentication and connection pool. */
export function createKubeClient(conn: KubeConnection, opts: KubeClientOptions = {}): KubeClient {
  const authenticator = new Authenticator(conn);
  const transport: Transport = {
    server: conn.server,
    userAgent: opts.userAgent ?? 'chartpilot',
    authenticate: () => authenticator.authenticate(),
    onRequest: opts.onRequest,
  };
  const request = <T>(method: HttpVerb, path: string, ro?: RequestOptions): Promise<T> => sendRequest<T>(transport, method, path, ro);
  const discovery = new Discovery((path) => request('GET', path));
  return {
    request,
    watch: (path, query, onEvent, onDone, wo) => openWatch(transport, path, query, onEvent, onDone, wo),
    resourceFor: (apiVersion, kind) => discovery.resourceFor(apiVersion, kind),
    forward: (req) => forwardRequest(transport, req),
    pathFor: resourcePath,
  };
}
