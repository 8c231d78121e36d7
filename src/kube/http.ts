/**
 * What a request and a watch share: the HTTP vocabulary of the API, how URLs are built, and the
 * `Transport` (server, authentication, user agent, metrics hook) both are sent through.
 */
import type { Dispatcher } from 'undici';

export type HttpVerb = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
export type ContentType =
  | 'application/json'
  | 'application/merge-patch+json'
  | 'application/strategic-merge-patch+json'
  | 'application/apply-patch+yaml'
  | 'application/json-patch+json';
export type Query = Record<string, string | number | boolean | undefined>;

/** Headers carrying fresh credentials, and the connection pool they go out on. */
export interface Authenticated {
  readonly headers: Record<string, string>;
  readonly dispatcher: Dispatcher;
}

export interface Transport {
  /** API server URL without a trailing slash. */
  readonly server: string;
  readonly userAgent: string;
  /** Called per request: tokens expire and exec plugins refresh. Failures are KubeApiErrors. */
  authenticate(): Promise<Authenticated>;
  /** After every request (and every watch connection, method `WATCH`), e.g. for metrics. */
  readonly onRequest: ((method: string, path: string, status: number, durationMs: number) => void) | undefined;
}

/** `server + path` with the query's defined values. */
export function buildUrl(server: string, path: string, query: Query | undefined): URL {
  const url = new URL(server + path);
  for (const [k, v] of Object.entries(query ?? {})) {
    if (v !== undefined) url.searchParams.set(k, String(v));
  }
  return url;
}

/**
 * The request headers: credentials, user agent and what is accepted back; with `impersonateUser`,
 * the request is made as that user (any impersonation the kubeconfig asks for is replaced, groups
 * included: the API server gives a ServiceAccount user its own groups).
 */
export function requestHeaders(t: Transport, auth: Authenticated, accept: string | undefined, impersonateUser?: string): Record<string, string> {
  const credentials = impersonateUser === undefined ? auth.headers : Object.fromEntries(Object.entries(auth.headers).filter(([name]) => !/^impersonate-/iu.test(name)));
  return {
    ...credentials,
    ...(impersonateUser === undefined ? {} : { 'Impersonate-User': impersonateUser }),
    'User-Agent': t.userAgent,
    Accept: accept ?? 'application/json',
  };
}
