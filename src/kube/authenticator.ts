/**
 * Credentials per request, one connection pool for all of them: a TLS handshake per request would
 * be the alternative. The pool is renewed now and then so rotated certificate files are picked up,
 * and at once when an exec plugin hands out a different client certificate.
 */
import { Agent, ProxyAgent, type Dispatcher } from 'undici';
import { KubeApiError } from './errors.js';
import type { Authenticated } from './http.js';
import type { Credentials, KubeConnection } from './kubeconfig.js';
import { systemWallClock, type WallClock } from '../lib/clock.js';
import { errorWithCause } from '../lib/errors.js';

export const DISPATCHER_MAX_AGE_MS = 15 * 60_000;

export interface AuthenticatorOptions {
  /** Pool age is judged on it; wall time, as certificate files rotate by it. */
  readonly clock?: WallClock;
  /** Builds a pool for the connection's TLS settings and these credentials (tests substitute it). */
  readonly newDispatcher?: (conn: KubeConnection, creds: Credentials) => Dispatcher;
}

interface Pool {
  readonly dispatcher: Dispatcher;
  readonly createdAt: number;
  readonly cert: Credentials['cert'];
  readonly key: Credentials['key'];
}

export class Authenticator {
  private readonly clock: WallClock;
  private readonly newDispatcher: (conn: KubeConnection, creds: Credentials) => Dispatcher;
  private pool: Pool | undefined;

  constructor(
    private readonly conn: KubeConnection,
    opts: AuthenticatorOptions = {},
  ) {
    this.clock = opts.clock ?? systemWallClock;
    this.newDispatcher = opts.newDispatcher ?? tlsDispatcher;
  }

  /** Fresh credentials and the shared pool; a failure is a KubeApiError (status 0, Unauthorized). */
  async authenticate(): Promise<Authenticated> {
    let creds: Credentials;
    let dispatcher: Dispatcher;
    try {
      creds = await this.conn.credentials();
      dispatcher = this.dispatcherFor(creds);
    } catch (cause) {
      throw new KubeApiError(`cannot authenticate to ${this.conn.server}: ${errorWithCause(cause)}`, { status: 0, reason: 'Unauthorized', cause });
    }
    return { headers: { ...creds.headers }, dispatcher };
  }

  private dispatcherFor(creds: Credentials): Dispatcher {
    const now = this.clock.now();
    const pool = this.pool;
    if (pool !== undefined && now - pool.createdAt <= DISPATCHER_MAX_AGE_MS && pool.cert === creds.cert && pool.key === creds.key) return pool.dispatcher;
    this.pool = { dispatcher: this.newDispatcher(this.conn, creds), createdAt: now, cert: creds.cert, key: creds.key };
    // Graceful: close() lets in-flight requests and open watches on the old pool finish.
    if (pool !== undefined) void pool.dispatcher.close().catch(() => undefined);
    return this.pool.dispatcher;
  }
}

/** A pool with the kubeconfig's TLS settings, the credentials' client certificate, and its proxy if any. */
function tlsDispatcher(conn: KubeConnection, creds: Credentials): Dispatcher {
  const connect = { ...conn.tls(), ...(creds.cert === undefined ? {} : { cert: creds.cert }), ...(creds.key === undefined ? {} : { key: creds.key }) };
  if (conn.proxyUrl !== undefined) return new ProxyAgent({ uri: conn.proxyUrl, requestTls: connect });
  return new Agent({ connect });
}
