import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { createConnection, type Socket } from 'node:net';
import type { Clock, TimerHandle } from '../../../src/lib/clock.js';
import { EventLoopWatchdog, PROBE_LIMITS, startHealthServer, type CheckResult } from '../../../src/observe/health-server.js';
import { DEFAULT_TIMEOUTS, ListenError, startHttpServer, type ConnectionLimits } from '../../../src/observe/http-server.js';

describe('health server', () => {
  let ready: CheckResult = 'informers have not synced';
  const started = startHealthServer(
    { host: '127.0.0.1', port: 0, text: '127.0.0.1:0' },
    { healthz: { ping: () => true }, readyz: { ping: () => true, informers: () => ready } },
  );
  after(async () => {
    await (await started).close();
  });
  const get = async (path: string): Promise<{ status: number; body: string }> => {
    const res = await fetch(`http://${(await started).address}${path}`);
    return { status: res.status, body: await res.text() };
  };

  it('answers ok on /healthz', async () => {
    assert.deepEqual(await get('/healthz'), { status: 200, body: 'ok\n' });
  });

  it('fails /readyz with the failing check named, until it passes', async () => {
    ready = 'informers have not synced';
    const failing = await get('/readyz');
    assert.equal(failing.status, 500);
    assert.equal(failing.body, '[+]ping ok\n[-]informers failed: informers have not synced\nreadyz check failed\n');
    ready = true;
    assert.deepEqual(await get('/readyz'), { status: 200, body: 'ok\n' });
  });

  it('supports verbose, exclude and single checks as controller-runtime does', async () => {
    ready = 'not yet';
    assert.equal((await get('/readyz?exclude=informers')).status, 200);
    assert.equal((await get('/readyz/ping')).status, 200);
    assert.equal((await get('/readyz/informers')).status, 500);
    assert.equal((await get('/readyz/nope')).status, 404);
    ready = true;
    assert.deepEqual(await get('/readyz?verbose'), { status: 200, body: '[+]ping ok\n[+]informers ok\nreadyz check passed\n' });
    assert.equal((await get('/livez')).status, 404);
  });
});

const LIMIT: ConnectionLimits = { maxConnections: 8, maxPerPeer: 8, timeouts: DEFAULT_TIMEOUTS };

describe('http server', () => {
  it('turns a taken port into a ListenError that names the flag value and the cause', async () => {
    const first = await startHttpServer('metrics server', { host: '127.0.0.1', port: 0, text: '127.0.0.1:0' }, (_req, res) => {
      res.end();
    }, LIMIT);
    try {
      await assert.rejects(
        startHttpServer('health probe server', { host: '127.0.0.1', port: first.port, text: `127.0.0.1:${first.port}` }, (_req, res) => {
          res.end();
        }, LIMIT),
        (err: unknown) =>
          err instanceof ListenError &&
          err.message === `cannot listen on 127.0.0.1:${first.port} for the health probe server: the address is already in use`,
      );
    } finally {
      await first.close();
    }
  });

  it('closes even with a keep-alive connection open', async () => {
    const server = await startHttpServer('metrics server', { host: '127.0.0.1', port: 0, text: '127.0.0.1:0' }, (_req, res) => {
      res.end('x');
    }, LIMIT);
    const res = await fetch(`http://${server.address}/`, { headers: { Connection: 'keep-alive' } });
    await res.text();
    await server.close();
    await assert.rejects(fetch(`http://${server.address}/`));
  });

  it('binds every interface when no host is given', async () => {
    const server = await startHttpServer('metrics server', { host: undefined, port: 0, text: ':0' }, (_req, res) => {
      res.end('x');
    }, LIMIT);
    try {
      assert.match(server.address, /^(\[::\]|0\.0\.0\.0):\d+$/);
      assert.equal(await (await fetch(`http://127.0.0.1:${server.port}/`)).text(), 'x');
    } finally {
      await server.close();
    }
  });
});

describe('EventLoopWatchdog', () => {
  /** A clock whose time the test sets freely; the test fires the one heartbeat timer by hand. */
  class HandClock implements Clock {
    time = 0;
    timer: { fn: () => void; at: number } | undefined;
    now(): number {
      return this.time;
    }
    setTimeout(fn: () => void, ms: number): TimerHandle {
      this.timer = { fn, at: this.time + ms };
      return 1;
    }
    clearTimeout(): void {
      this.timer = undefined;
    }
    /** Time jumps to `at` (as if the loop was busy until then) and the heartbeat runs. */
    fireAt(at: number): void {
      const t = this.timer;
      assert.ok(t);
      this.time = at;
      this.timer = undefined;
      t.fn();
    }
  }

  it('is healthy while heartbeats are on time, unhealthy while they run late, and recovers', () => {
    const clock = new HandClock();
    const w = new EventLoopWatchdog({ clock, intervalMs: 1_000, maxLagMs: 5_000 });
    w.start();
    clock.fireAt(1_000);
    clock.fireAt(2_000);
    assert.equal(w.check(), true);
    // The loop is busy: the heartbeat due at 3 s has not run by 9 s, and a probe slips in.
    clock.time = 9_000;
    assert.match(String(w.check()), /^event loop is 6000 ms behind \(limit 5000 ms\)$/);
    clock.fireAt(9_000); // the late heartbeat runs and records its lag
    assert.notEqual(w.check(), true, 'the last heartbeat was late');
    clock.fireAt(10_000); // the next one is on time
    assert.equal(w.check(), true);
    w.stop();
    assert.equal(clock.timer, undefined);
  });
});

describe('http server connection limits', () => {
  interface Conn {
    readonly socket: Socket;
    /** When the server closed it (ms since connecting), undefined while open. */
    closedAfter(): number | undefined;
  }
  /** A raw TCP connection from `from` (Linux loopback takes any 127/8 source): another peer each. */
  function connect(port: number, from = '127.0.0.1'): Promise<Conn> {
    return new Promise((resolve, reject) => {
      let closedAt: number | undefined;
      const at = Date.now();
      const socket = createConnection({ host: '127.0.0.1', port, localAddress: from }, () => {
        resolve({ socket, closedAfter: () => (closedAt === undefined ? undefined : closedAt - at) });
      });
      socket.on('error', reject);
      socket.on('data', () => undefined);
      socket.on('close', () => (closedAt = Date.now()));
    });
  }
  const open = (cs: readonly Conn[]): boolean[] => cs.map((c) => c.closedAfter() === undefined);
  /** One GET from `from` on a connection of its own: the body, or '' when refused. */
  const getFrom = (port: number, from: string): Promise<string> =>
    new Promise((resolve) => {
      const c = createConnection({ host: '127.0.0.1', port, localAddress: from }, () => {
        c.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      });
      let got = '';
      c.on('data', (d: Buffer) => (got += d.toString()));
      c.on('error', () => undefined);
      c.on('close', () => {
        resolve(got.endsWith('\r\n\r\nx') ? 'x' : '');
      });
    });
  const serve = (limits: ConnectionLimits) => startHttpServer('metrics server', { host: '127.0.0.1', port: 0, text: '127.0.0.1:0' }, (_req, res) => {
    res.end('x');
  }, limits);

  it('closes a peer\'s connections beyond its share at once, while another peer is still served', async () => {
    const server = await serve({ maxConnections: 8, maxPerPeer: 3, timeouts: DEFAULT_TIMEOUTS });
    const conns: Conn[] = [];
    try {
      for (let i = 0; i < 6; i++) conns.push(await connect(server.port));
      await waitUntil(() => conns.filter((c) => c.closedAfter() !== undefined).length >= 3);
      assert.deepEqual(open(conns), [true, true, true, false, false, false]);
      assert.ok(conns.slice(3).every((c) => (c.closedAfter() ?? Infinity) < 1_000), 'refused at once, not timed out');
      assert.equal(await getFrom(server.port, '127.0.0.1'), '', 'the full peer gets nothing more');
      assert.equal(await getFrom(server.port, '127.0.0.2'), 'x', 'another peer is served');
      for (const c of conns) c.socket.destroy();
      await waitUntil(async () => (await getFrom(server.port, '127.0.0.1')) === 'x');
    } finally {
      for (const c of conns) c.socket.destroy();
      await server.close();
    }
  });

  it('at the overall cap, lets a new peer in by closing the oldest connection of the peer holding the most', async () => {
    const server = await serve({ maxConnections: 4, maxPerPeer: 3, timeouts: DEFAULT_TIMEOUTS });
    const conns: Conn[] = [];
    try {
      for (const from of ['127.0.0.3', '127.0.0.3', '127.0.0.3', '127.0.0.4']) conns.push(await connect(server.port, from));
      await waitUntil(async () => (await getFrom(server.port, '127.0.0.1')) === 'x');
      await waitUntil(() => conns[0]?.closedAfter() !== undefined);
      assert.deepEqual(open(conns), [false, true, true, true]);
    } finally {
      for (const c of conns) c.socket.destroy();
      await server.close();
    }
  });

  it('cuts a connection that sends nothing after the idle timeout', async () => {
    const server = await serve({ maxConnections: 3, maxPerPeer: 3, timeouts: { ...DEFAULT_TIMEOUTS, idleMs: 200 } });
    try {
      const c = await connect(server.port);
      await waitUntil(() => c.closedAfter() !== undefined);
      assert.ok((c.closedAfter() ?? Infinity) < 2_000, `closed after ${String(c.closedAfter())} ms`);
    } finally {
      await server.close();
    }
  });

  it('the probe server drops a slow request, an idle keep-alive and a silent connection within a second', async () => {
    const server = await startHealthServer({ host: '127.0.0.1', port: 0, text: '127.0.0.1:0' }, { healthz: {}, readyz: {} });
    const timers: NodeJS.Timeout[] = [];
    try {
      const silent = await connect(server.port);
      // A header byte every 100 ms: the socket is never idle, only the headers timeout ends it.
      const slow = await connect(server.port);
      slow.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ');
      timers.push(setInterval(() => slow.socket.write('a'), 100));
      const kept = await connect(server.port);
      kept.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      await waitUntil(() => [silent, slow, kept].every((c) => c.closedAfter() !== undefined));
      for (const [what, c] of Object.entries({ silent, slow, kept })) {
        assert.ok((c.closedAfter() ?? Infinity) < 1_000, `${what} closed after ${String(c.closedAfter())} ms`);
      }
      assert.ok(PROBE_LIMITS.timeouts.headersMs < 1_000 && PROBE_LIMITS.timeouts.idleMs < 1_000);
    } finally {
      for (const t of timers) clearInterval(t);
      await server.close();
    }
  });
});

async function waitUntil(ok: () => boolean | Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}
