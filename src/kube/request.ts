/**
 * One API request: JSON in and out, a whole-request deadline, and every failure turned into a
 * KubeApiError — except the caller's own abort, which stays an abort.
 */
import { request } from 'undici';
import { KubeApiError } from './errors.js';
import { buildUrl, requestHeaders, type ContentType, type HttpVerb, type Query, type Transport } from './http.js';
import { errorWithCause } from '../lib/errors.js';

export interface RequestOptions {
  query?: Query;
  /** Serialized as JSON (which is also valid YAML for apply patches); a string is sent as is. */
  body?: unknown;
  contentType?: ContentType;
  accept?: string;
  signal?: AbortSignal;
  /** Whole-request deadline; default 30 s. */
  timeoutMs?: number;
  /** Make the request as this user (`Impersonate-User`), e.g. a tenant's ServiceAccount. */
  impersonateUser?: string;
}

export const DEFAULT_TIMEOUT_MS = 30_000;

export async function sendRequest<T>(t: Transport, method: HttpVerb, path: string, ro: RequestOptions = {}): Promise<T> {
  // An empty Impersonate-User would be ignored by the API server: the request would go out as us.
  if (ro.impersonateUser === '') throw new TypeError('impersonateUser must not be empty when given');
  const url = buildUrl(t.server, path, ro.query);
  const timeoutMs = ro.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = ro.signal ? AbortSignal.any([ro.signal, timeout]) : timeout;
  const started = performance.now();
  let status = 0;
  try {
    const auth = await t.authenticate();
    const headers = requestHeaders(t, auth, ro.accept, ro.impersonateUser);
    let body: string | undefined;
    if (ro.body !== undefined) {
      body = typeof ro.body === 'string' ? ro.body : JSON.stringify(ro.body);
      headers['Content-Type'] = ro.contentType ?? 'application/json';
    }
    // undici's request, not fetch: the same connection pool without the WHATWG streams and
    // Request/Response objects, which cost the operator a noticeable share of its CPU in a wave.
    const res = await request(url, { method, headers, body, dispatcher: auth.dispatcher, signal });
    status = res.statusCode;
    const text = await res.body.text();
    if (status < 200 || status > 299) throw KubeApiError.fromResponse(status, text, { method, path });
    return (text ? JSON.parse(text) : undefined) as T;
  } catch (err) {
    // The caller's own abort surfaces as an abort, not as an API failure.
    if (!(err instanceof KubeApiError) && ro.signal?.aborted) throw ro.signal.reason;
    throw requestFailure(err, { method, path, status, timedOut: timeout.aborted, timeoutMs });
  } finally {
    t.onRequest?.(method, path, status, performance.now() - started);
  }
}

/** What a failed request means to the caller, as a KubeApiError. */
function requestFailure(err: unknown, at: { method: HttpVerb; path: string; status: number; timedOut: boolean; timeoutMs: number }): KubeApiError {
  const { method, path } = at;
  if (err instanceof KubeApiError) return err;
  if (at.timedOut) {
    return new KubeApiError(`${method} ${path}: no response within ${at.timeoutMs} ms`, { status: 0, reason: 'Timeout', method, path, cause: err });
  }
  if (err instanceof SyntaxError) {
    return new KubeApiError(`${method} ${path}: response is not JSON`, { status: at.status, reason: 'InternalError', method, path, cause: err });
  }
  return new KubeApiError(`${method} ${path}: ${errorWithCause(err)}`, { status: 0, reason: 'Unavailable', method, path, cause: err });
}
