/**
 * The small listener behind the metrics and health endpoints (node:http, node:https or node:http2,
 * no framework: two read-only GET endpoints do not need one). Listening is awaited, so a taken
 * port is a start-up error with a clear message rather than an unhandled 'error' event later.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createSecureServer } from 'node:http2';
import type { AddressInfo, Server as NetServer, Socket } from 'node:net';
import type { Server as TlsServer } from 'node:tls';
import { errorMessage } from '../lib/errors.js';

/** Where to listen; `host` undefined = every interface (Go's `:8080`). Matches cli/args BindAddress. */
export interface ListenAddress {
  readonly host: string | undefined;
  readonly port: number;
  /** As the user wrote it, for messages. */
  readonly text: string;
}

export class ListenError extends Error {
  override readonly name = 'ListenError';
  constructor(
    readonly what: string,
    readonly address: ListenAddress,
    options: { cause: unknown },
  ) {
    const code = (options.cause as NodeJS.ErrnoException | undefined)?.code;
    const why =
      code === 'EADDRINUSE'
        ? 'the address is already in use'
        : code === 'EACCES'
          ? 'permission denied (ports below 1024 need privileges)'
          : code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND'
            ? 'no local interface has that address'
            : options.cause instanceof Error
              ? options.cause.message
              : String(options.cause);
    super(`cannot listen on ${address.text} for the ${what}: ${why}`, options);
  }
}

export type Handler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

export interface RunningServer {
  /** The bound address as `host:port` (`[v6]:port`), with the real port when 0 was asked for. */
  readonly address: string;
  readonly port: number;
  /** Stops listening and cuts open connections (keep-alive scrapers would otherwise hold it open). */
  close(): Promise<void>;
}

/** A certificate chain and its private key, PEM. */
export interface Credentials {
  readonly cert: string;
  readonly key: string;
}

/** Serve HTTPS instead of HTTP. */
export interface TlsSettings {
  readonly credentials: Credentials;
  /** Offer HTTP/2 by ALPN (HTTP/1.1 stays available); off by default, as in controller-runtime. */
  readonly http2: boolean;
}

export interface RunningTlsServer extends RunningServer {
  /** Serves new connections with other credentials (a renewed certificate); open ones keep theirs. */
  setCredentials(credentials: Credentials): void;
}

export function formatAddress(info: AddressInfo): string {
  return info.family === 'IPv6' ? `[${info.address}]:${info.port}` : `${info.address}:${info.port}`;
}

/**
 * Probes and scrapes are tiny and quick: a slow, stuck or idle client must not pin a socket (a file
 * descriptor the process shares with every helm call) for longer than a few seconds.
 */
export const CONNECTION_TIMEOUTS = {
  /** The request line and headers must arrive within this. */
  headersMs: 5_000,
  /** The whole request must arrive within this. */
  requestMs: 10_000,
  /** An idle keep-alive connection between requests is closed after this (Node's default too). */
  keepAliveMs: 5_000,
  /** A connection with no traffic at all (e.g. one that never starts a TLS handshake) is cut after this. */
  idleMs: 10_000,
  /** The TLS handshake must finish within this (Node's default is 120 s). */
  handshakeMs: 5_000,
} as const;

/** How many connections one server holds open at most; more are closed as soon as accepted. */
export interface ConnectionLimit {
  readonly maxConnections: number;
  /** Default CONNECTION_TIMEOUTS.idleMs (tests shorten it). */
  readonly idleMs?: number;
}

export function startHttpServer(what: string, address: ListenAddress, handler: Handler, limit: ConnectionLimit): Promise<RunningServer> {
  const server = createServer(guarded(handler));
  server.requestTimeout = CONNECTION_TIMEOUTS.requestMs;
  server.headersTimeout = CONNECTION_TIMEOUTS.headersMs;
  server.keepAliveTimeout = CONNECTION_TIMEOUTS.keepAliveMs;
  return listen(server, what, address, limit);
}

/**
 * HTTPS with TLS 1.2 or newer. Without HTTP/2 only `http/1.1` is offered by ALPN (controller-
 * runtime's default since the HTTP/2 rapid-reset CVEs); with it, `h2` too, HTTP/1.1 still allowed.
 */
export async function startHttpsServer(
  what: string,
  address: ListenAddress,
  handler: Handler,
  tls: TlsSettings,
  limit: ConnectionLimit,
): Promise<RunningTlsServer> {
  const options = { ...tls.credentials, minVersion: 'TLSv1.2' as const, handshakeTimeout: CONNECTION_TIMEOUTS.handshakeMs };
  let server: TlsServer;
  if (tls.http2) {
    // The compatibility API hands the handler request/response objects shaped like node:http's.
    server = createSecureServer({ ...options, allowHTTP1: true }, guarded(handler) as never);
  } else {
    const https = createHttpsServer({ ...options, ALPNProtocols: ['http/1.1'] }, guarded(handler));
    https.requestTimeout = CONNECTION_TIMEOUTS.requestMs;
    https.headersTimeout = CONNECTION_TIMEOUTS.headersMs;
    https.keepAliveTimeout = CONNECTION_TIMEOUTS.keepAliveMs;
    server = https;
  }
  const running = await listen(server, what, address, limit);
  return {
    ...running,
    setCredentials: (credentials) => {
      server.setSecureContext({ ...credentials, minVersion: 'TLSv1.2' });
    },
  };
}

function guarded(handler: Handler): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    Promise.resolve(handler(req, res)).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end(`internal error: ${errorMessage(err)}\n`);
    });
  };
}

async function listen(server: NetServer, what: string, address: ListenAddress, limit: ConnectionLimit): Promise<RunningServer> {
  // Beyond the cap Node closes a connection right after accepting it, so a flood of connections
  // costs this process at most maxConnections file descriptors (helm calls need the rest).
  server.maxConnections = limit.maxConnections;
  // Every connection, HTTP/1 or HTTP/2, so close() can cut keep-alive scrapers of either kind.
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    // The raw socket, before any TLS or HTTP: covers a client that connects and says nothing,
    // and HTTP/2 sessions, which the HTTP/1 timeouts above do not reach.
    socket.setTimeout(limit.idleMs ?? CONNECTION_TIMEOUTS.idleMs, () => socket.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    const onError = (err: unknown): void => {
      reject(new ListenError(what, address, { cause: err }));
    };
    server.once('error', onError);
    server.listen({ port: address.port, ...(address.host === undefined ? {} : { host: address.host }) }, () => {
      server.off('error', onError);
      resolve();
    });
  });
  const info = server.address() as AddressInfo;
  let closing: Promise<void> | undefined;
  return {
    address: formatAddress(info),
    port: info.port,
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
        for (const socket of sockets) socket.destroy();
      });
      return closing;
    },
  };
}

/** Answers only GET and HEAD; true when the request was refused. */
export function refuseNonGet(req: IncomingMessage, res: ServerResponse): boolean {
  if (req.method === 'GET' || req.method === 'HEAD') return false;
  res.writeHead(405, { Allow: 'GET, HEAD', 'Content-Type': 'text/plain; charset=utf-8' });
  res.end('method not allowed\n');
  return true;
}

export function pathOf(req: IncomingMessage): { path: string; query: URLSearchParams } {
  const url = new URL(req.url ?? '/', 'http://localhost');
  return { path: url.pathname, query: url.searchParams };
}

export function notFound(res: ServerResponse): void {
  res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' });
  res.end('404 page not found\n');
}
