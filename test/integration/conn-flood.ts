// Connection floods, as an unauthenticated client on the pod network can make them: `flood`
// holds a number of idle connections open (each one the server closes is opened again a second
// later); `pacedFlood` opens connections at a fixed rate from another source address, each held as
// long as the server lets it. `kubeletGet` probes the way the kubelet does meanwhile.
import { readdirSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { get as httpsGet } from 'node:https';
import { createConnection, type Socket } from 'node:net';

export interface Flood {
  /** Connections open right now (from the client's side). */
  open(): number;
  /** Connections the server closed within a second of accepting them. */
  closedAtOnce(): number;
  /** Connections opened in all. */
  opened(): number;
  stop(): void;
}

export function flood(host: string, port: number, connections: number, reopenAfterMs = 1_000): Flood {
  const sockets = new Set<Socket>();
  let stopped = false;
  let closedAtOnce = 0;
  let opened = 0;
  const one = (): void => {
    if (stopped) return;
    const started = Date.now();
    const socket = createConnection({ host, port });
    opened++;
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => {
      sockets.delete(socket);
      if (Date.now() - started < 1_000) closedAtOnce++;
      if (!stopped) setTimeout(one, reopenAfterMs).unref();
    });
  };
  for (let i = 0; i < connections; i++) one();
  return {
    open: () => sockets.size,
    closedAtOnce: () => closedAtOnce,
    opened: () => opened,
    stop: () => {
      stopped = true;
      for (const s of sockets) s.destroy();
    },
  };
}

/** File descriptors `pid` has open now (Linux). */
export function openFds(pid: number): number {
  return readdirSync(`/proc/${String(pid)}/fd`).length;
}

/** One GET: status and milliseconds, or the error and milliseconds. */
export async function timedGet(url: string, timeoutMs = 5_000): Promise<{ ok: boolean; ms: number; detail: string }> {
  const started = performance.now();
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    const body = await res.text();
    return { ok: res.status === 200, ms: performance.now() - started, detail: `${String(res.status)} ${body.trim()}` };
  } catch (err) {
    return { ok: false, ms: performance.now() - started, detail: err instanceof Error ? err.message : String(err) };
  }
}

/** What a paced flood's connections do once connected (each held until the server closes it). */
export type FloodMode =
  /** Say nothing. */
  | 'idle'
  /** Start a request and send its headers one byte at a time (slowloris). */
  | 'trickle'
  /** Send one whole request and keep the connection open after the answer. */
  | 'keep-alive';

export interface PacedFloodOptions {
  readonly host: string;
  readonly port: number;
  /** The client sockets' source address: another peer than the poller's 127.0.0.1. */
  readonly localAddress: string;
  readonly perSecond: number;
  /** Cycled through, one connection after the other. */
  readonly modes: readonly FloodMode[];
  /** Never more open at once than this (the test process's own descriptors); default 4000. */
  readonly maxOpen?: number;
}

export interface PacedFlood {
  /** Connections opened so far. */
  opened(): number;
  /** Connections the server closed within 100 ms of accepting them (refused at once). */
  refusedAtOnce(): number;
  /** Connections the server kept open longer: how long it let the longest stay, in ms. */
  longestHeldMs(): number;
  /** The most connections open at once, from this side. */
  maxOpen(): number;
  /** How often maxOpen held the pacer back (0 unless the server keeps everything open). */
  heldBack(): number;
  stop(): void;
}

/**
 * `perSecond` new connections every second from `localAddress`, each kept open as long as the
 * server lets it: a closed one is made up for by the next ones, so the rate stays the same
 * whatever the server does — the tenant pod that reopens every connection it loses.
 */
export function pacedFlood(o: PacedFloodOptions): PacedFlood {
  /** Each open socket and when it was opened. */
  const sockets = new Map<Socket, number>();
  const limit = o.maxOpen ?? 4_000;
  const started = Date.now();
  let opened = 0;
  let refusedAtOnce = 0;
  let longestHeldMs = 0;
  let maxOpen = 0;
  let heldBack = 0;
  let stopped = false;
  const request = `GET /healthz HTTP/1.1\r\nHost: ${o.host}\r\n`;
  const one = (mode: FloodMode): void => {
    const socket = createConnection({ host: o.host, port: o.port, localAddress: o.localAddress });
    const at = Date.now();
    opened++;
    sockets.set(socket, at);
    maxOpen = Math.max(maxOpen, sockets.size);
    let trickle: NodeJS.Timeout | undefined;
    socket.on('error', () => undefined);
    socket.on('data', () => undefined);
    socket.once('connect', () => {
      if (mode === 'keep-alive') socket.write(`${request}\r\n`);
      if (mode === 'trickle') {
        socket.write(`${request}X-Slow: `);
        trickle = setInterval(() => socket.write('a'), 250);
      }
    });
    socket.once('close', () => {
      clearInterval(trickle);
      sockets.delete(socket);
      const held = Date.now() - at;
      if (held < 100) refusedAtOnce++;
      else longestHeldMs = Math.max(longestHeldMs, held);
    });
  };
  // Catch up every 20 ms to where the rate says the count should be: timers on a loaded machine
  // fire late, and the rate must not sag with them.
  const pacer = setInterval(() => {
    const due = Math.floor(((Date.now() - started) * o.perSecond) / 1000);
    while (!stopped && opened < due) {
      if (sockets.size >= limit) {
        heldBack++;
        break;
      }
      one(o.modes[opened % o.modes.length] ?? 'idle');
    }
  }, 20);
  return {
    opened: () => opened,
    refusedAtOnce: () => refusedAtOnce,
    longestHeldMs: () => Math.max(longestHeldMs, ...[...sockets.values()].map((at) => Date.now() - at)),
    maxOpen: () => maxOpen,
    heldBack: () => heldBack,
    stop: () => {
      stopped = true;
      clearInterval(pacer);
      for (const s of sockets.keys()) s.destroy();
    },
  };
}

export interface PollResult {
  readonly ok: boolean;
  readonly ms: number;
  readonly detail: string;
}

/**
 * One GET as the kubelet probes: a new connection from the default source address (127.0.0.1
 * towards loopback), no keep-alive, given up after `timeoutMs`. HTTPS without verification, as
 * scrapers of a self-signed certificate do.
 */
export function kubeletGet(url: string, timeoutMs: number): Promise<PollResult> {
  const started = performance.now();
  const get = url.startsWith('https:') ? httpsGet : httpGet;
  return new Promise<PollResult>((resolve) => {
    const done = (ok: boolean, detail: string): void => {
      resolve({ ok, ms: performance.now() - started, detail });
    };
    const req = get(url, { agent: false, headers: { Connection: 'close' }, rejectUnauthorized: false, signal: AbortSignal.timeout(timeoutMs) }, (res) => {
      res.setEncoding('utf8');
      let body = '';
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => {
        done(res.statusCode === 200, `${String(res.statusCode)} ${body.slice(0, 60).trim()}`);
      });
      res.on('error', (err) => {
        done(false, err.message);
      });
    });
    req.on('error', (err) => {
      done(false, err.name === 'AbortError' ? `no answer within ${String(timeoutMs)} ms` : err.message);
    });
  });
}
