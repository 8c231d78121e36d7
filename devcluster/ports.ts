/**
 * Free TCP ports on loopback, for local servers started next (the control plane, registry,
 * Prometheus, OLM's operators, test pods). Picked below the kernel's ephemeral range: a port
 * from `listen(0)` lies inside it, so once its server stops (an etcd restart in a fault test)
 * any outgoing connection of the machine may take it as its local port, and the restarted
 * server then fails with EADDRINUSE (seen in CI: etcd's peer port, minutes into the suite).
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';

/** Lowest port picked from: above the usual well-known and registered servers on a dev machine. */
const LOWEST = 20_000;

/** The first port of the kernel's ephemeral range (Linux's default when it cannot be read). */
function ephemeralStart(): number {
  try {
    const first = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/u)[0]);
    return Number.isSafeInteger(first) && first > 0 ? first : 32_768;
  } catch {
    return 32_768;
  }
}

function listenOn(port: number): Promise<Server | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => {
      resolve(undefined);
    });
    server.listen(port, '127.0.0.1', () => {
      resolve(server);
    });
  });
}

function portOf(server: Server): number {
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('unexpected listen address');
  return address.port;
}

/** `n` distinct free ports (held open together while picking, so none is given twice). */
export async function freePorts(n: number): Promise<number[]> {
  const top = ephemeralStart() - 1;
  const held: Server[] = [];
  try {
    for (let tries = 0; held.length < n && tries < 200 * n; tries++) {
      // A range too small to pick from (ephemeral ports start low): the kernel's choice, as before.
      const port = top - LOWEST < 1000 ? 0 : LOWEST + Math.floor(Math.random() * (top - LOWEST + 1));
      const server = await listenOn(port);
      if (server !== undefined) held.push(server);
    }
    if (held.length < n) throw new Error(`no ${String(n)} free TCP ports on 127.0.0.1 between ${String(LOWEST)} and ${String(top)}`);
    return held.map(portOf);
  } finally {
    await Promise.all(held.map((s) => new Promise<void>((res) => s.close(() => { res(); }))));
  }
}

export async function freePort(): Promise<number> {
  const [port] = await freePorts(1);
  if (port === undefined) throw new Error('no TCP port was given on 127.0.0.1');
  return port;
}
