// A flood of idle TCP connections held open against a port, as an unauthenticated client on the
// pod network can make: each connection that the server closes is opened again a second later.
import { readdirSync } from 'node:fs';
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
