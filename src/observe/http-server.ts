/**
 * The small listener behind the metrics and health endpoints (node:http, node:https or node:http2,
 * no framework: two read-only GET endpoints do not need one). Listening is awaited, so a taken
 * port is a start-up error with a clear message rather than an unhandled 'error' event later.
 */
import { createServer, type IncomingMessage, type ServerOptions, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createSecureServer } from 'node:http2';
import type { AddressInfo, Server as NetServer, Socket } from 'node:net';
import type { Server as TlsServer } from 'node:tls';
import { errorMessage } from '../lib/errors.js';
import { peerOf, PeerConnections, type AdmissionLimits } from './peer-admission.js';

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
 * How long a connection may take at each stage, so that a slow, stuck or idle client cannot pin
 * a socket (a file descriptor the process shares with every helm call, and a slot under the cap).
 */
export interface ConnectionTimeouts {
  /** The request line and headers must arrive within this. */
  readonly headersMs: number;
  /** The whole request must arrive within this. */
  readonly requestMs: number;
  /**
   * An idle keep-alive connection between requests is closed after this (the Keep-Alive header
   * says so), plus Node's grace against a client reusing it at that very moment: a second, or
   * keepAliveMs again when that is shorter.
   */
  readonly keepAliveMs: number;
  /** A connection with no traffic at all (e.g. one that never starts a TLS handshake) is cut after this. */
  readonly idleMs: number;
  /** The TLS handshake must finish within this (Node's default is 120 s). */
  readonly handshakeMs: number;
  /**
   * How often Node looks for connections past headersMs or requestMs: they are only cut when it
   * looks (its default is every 30 s, which would let a client sending a header byte now and then
   * keep its connection that long).
   */
  readonly checkEveryMs: number;
}

/** For requests that may take a while to answer (scrapes: rendering, a token review, a large body). */
export const DEFAULT_TIMEOUTS: ConnectionTimeouts = {
  headersMs: 5_000,
  requestMs: 10_000,
  keepAliveMs: 5_000,
  idleMs: 10_000,
  handshakeMs: 5_000,
  checkEveryMs: 1_000,
};

/** Which connections one server keeps (peer-admission.ts), and for how long. */
export interface ConnectionLimits extends AdmissionLimits {
  readonly timeouts: ConnectionTimeouts;
}

export function startHttpServer(what: string, address: ListenAddress, handler: Handler, limits: ConnectionLimits): Promise<RunningServer> {
  const server = createServer(http1Options(limits.timeouts), guarded(handler));
  return listen(server, what, address, limits);
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
  limits: ConnectionLimits,
): Promise<RunningTlsServer> {
  const options = { ...tls.credentials, minVersion: 'TLSv1.2' as const, handshakeTimeout: limits.timeouts.handshakeMs };
  let server: TlsServer;
  if (tls.http2) {
    // The compatibility API hands the handler request/response objects shaped like node:http's.
    server = createSecureServer({ ...options, allowHTTP1: true }, guarded(handler) as never);
  } else {
    server = createHttpsServer({ ...options, ...http1Options(limits.timeouts), ALPNProtocols: ['http/1.1'] }, guarded(handler));
  }
  const running = await listen(server, what, address, limits);
  return {
    ...running,
    setCredentials: (credentials) => {
      server.setSecureContext({ ...credentials, minVersion: 'TLSv1.2' });
    },
  };
}

/** node:http's own timeouts; given at creation, since the checking interval can only be set then. */
function http1Options(t: ConnectionTimeouts): ServerOptions {
  return {
    headersTimeout: t.headersMs,
    requestTimeout: t.requestMs,
    connectionsCheckingInterval: t.checkEveryMs,
    keepAliveTimeout: t.keepAliveMs,
    keepAliveTimeoutBuffer: Math.min(1_000, t.keepAliveMs),
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

async function listen(server: NetServer, what: string, address: ListenAddress, limits: ConnectionLimits): Promise<RunningServer> {
  // Every admitted connection, HTTP/1 or HTTP/2, by peer: so close() can cut keep-alive scrapers
  // of either kind, and so that one peer cannot hold every slot.
  const held = new PeerConnections<Socket>(limits);
  // Node's own cap, below any JavaScript, as a last bound should connections arrive faster than
  // they are closed; the peer shares below keep the count under maxConnections otherwise (a
  // refused socket stops counting as soon as it is destroyed).
  server.maxConnections = limits.maxConnections * 2;
  server.on('connection', (socket: Socket) => {
    const peer = peerOf(socket.remoteAddress);
    const offer = peer === undefined ? { admitted: false } : held.offer(peer, socket);
    if (!offer.admitted || peer === undefined) {
      // Over its peer's share, or over the cap with no heavier peer to take a slot from: closed
      // at once, before TLS or HTTP read anything from it.
      socket.destroy();
      return;
    }
    offer.evicted?.destroy();
    socket.once('close', () => {
      held.release(peer, socket);
    });
    // The raw socket, before any TLS or HTTP: covers a client that connects and says nothing,
    // and HTTP/2 sessions, which the HTTP/1 timeouts above do not reach.
    socket.setTimeout(limits.timeouts.idleMs, () => socket.destroy());
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
        for (const socket of held.all()) socket.destroy();
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
