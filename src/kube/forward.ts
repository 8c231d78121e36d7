/**
 * One request passed through as bytes: for a proxy in front of the API server (the Ansible runs'
 * local proxy), which must hand back whatever the server answers — any status, any content type,
 * a watch as it streams — with the operator's credentials and connection pool.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import { request } from 'undici';
import { KubeApiError } from './errors.js';
import { requestHeaders, type HttpVerb, type Transport } from './http.js';
import { errorWithCause } from '../lib/errors.js';

export interface ForwardRequest {
  readonly method: HttpVerb;
  /** Path and query as the client sent them (`/api/v1/namespaces/a/pods?watch=true`). */
  readonly pathAndQuery: string;
  /**
   * Headers to pass on, names in lower case as node's http server gives them (content-type,
   * accept, …). Credentials and impersonation are ours: authorization and impersonate-* are dropped.
   */
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: Buffer | undefined;
  /** Make the request as this user (`Impersonate-User`); undefined = the client's own identity. */
  readonly impersonateUser?: string | undefined;
  /** Aborts the request and the response stream (e.g. the proxy's client went away). */
  readonly signal?: AbortSignal | undefined;
}

export interface ForwardResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  /** The response body as it arrives; a watch streams until the server or `signal` ends it. */
  readonly body: Readable;
}

/** Hop-by-hop and credential headers never passed on (RFC 9110 §7.6.1, plus who we are). */
const NOT_FORWARDED = /^(?:authorization|impersonate-.*|connection|keep-alive|proxy-.*|te|trailer|transfer-encoding|upgrade|host|content-length)$/iu;

/**
 * Sends `fr` to the API server. Resolves once response headers arrived, whatever the status;
 * rejects with a KubeApiError (status 0) only when no response came (connection, credentials).
 */
export async function forwardRequest(t: Transport, fr: ForwardRequest): Promise<ForwardResponse> {
  if (fr.impersonateUser === '') throw new TypeError('impersonateUser must not be empty when given');
  if (!fr.pathAndQuery.startsWith('/')) throw new TypeError('pathAndQuery must start with /');
  const started = performance.now();
  let status = 0;
  try {
    const auth = await t.authenticate();
    // The operator's kubeconfig may itself impersonate; requestHeaders replaces that only when a
    // run has its own user, otherwise the run acts exactly as the operator does.
    const ours = Object.entries(requestHeaders(t, auth, fr.headers.accept ?? '*/*', fr.impersonateUser)).map(([k, v]) => [k.toLowerCase(), v] as const);
    const headers: Record<string, string> = Object.fromEntries(ours);
    for (const [name, value] of Object.entries(fr.headers)) {
      const lower = name.toLowerCase();
      if (NOT_FORWARDED.test(lower) || lower === 'accept') continue;
      // The client's own user agent (kubectl, OpenAPI-Generator/python) shows in audit logs.
      if (lower === 'user-agent') headers[lower] = value;
      else if (!(lower in headers)) headers[lower] = value;
    }
    // No body timeout: a watch may stay quiet for minutes; the run's own deadline (its client
    // going away) ends it through `signal`.
    const res = await request(t.server + fr.pathAndQuery, {
      method: fr.method,
      headers,
      body: fr.body,
      dispatcher: auth.dispatcher,
      signal: fr.signal,
      bodyTimeout: 0,
    });
    status = res.statusCode;
    return { status, headers: res.headers, body: res.body };
  } catch (err) {
    if (err instanceof KubeApiError) throw err;
    throw new KubeApiError(`${fr.method} ${pathOnly(fr.pathAndQuery)}: ${errorWithCause(err)}`, {
      status: 0,
      reason: 'Unavailable',
      method: fr.method,
      path: pathOnly(fr.pathAndQuery),
      cause: err,
    });
  } finally {
    t.onRequest?.(fr.method, pathOnly(fr.pathAndQuery), status, performance.now() - started);
  }
}

function pathOnly(pathAndQuery: string): string {
  const q = pathAndQuery.indexOf('?');
  return q < 0 ? pathAndQuery : pathAndQuery.slice(0, q);
}
