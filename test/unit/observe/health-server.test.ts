import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { createConnection, type Socket } from 'node:net';
import type { Clock, TimerHandle } from '../../../src/lib/clock.js';
import { EventLoopWatchdog, startHealthServer, type CheckResult } from '../../../src/observe/health-server.js';
import { ListenError, startHttpServer } from '../../../src/observe/http-server.js';

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

const LIMIT = { maxConnections: 8 };

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
  /** Opens a raw TCP connection; resolves once connected, and records when the server closed it. */
  function connect(port: number): Promise<{ socket: Socket; closed: () => boolean }> {
    return new Promise((resolve, reject) => {
      let closed = false;
      const socket = createConnection({ host: '127.0.0.1', port }, () => {
        resolve({ socket, closed: () => closed });
      });
      socket.on('error', reject);
      socket.on('close', () => (closed = true));
    });
  }

  it('closes connections beyond the cap as soon as they are accepted, and serves again once below it', async () => {
    const server = await startHttpServer('metrics server', { host: '127.0.0.1', port: 0, text: '127.0.0.1:0' }, (_req, res) => {
      res.end('x');
    }, { maxConnections: 3 });
    const open: { socket: Socket; closed: () => boolean }[] = [];
    try {
      for (let i = 0; i < 8; i++) open.push(await connect(server.port));
      await waitUntil(() => open.filter((c) => c.closed()).length >= 5);
      assert.deepEqual(open.map((c) => c.closed()), [false, false, false, true, true, true, true, true]);
      // A scrape while the cap is taken is refused too: that is the point of the cap.
      await assert.rejects(fetch(`http://${server.address}/`));
      for (const c of open) c.socket.destroy();
      await waitUntil(async () => (await fetch(`http://${server.address}/`).then((r) => r.text(), () => '')) === 'x');
    } finally {
      for (const c of open) c.socket.destroy();
      await server.close();
    }
  });

  it('cuts a connection that sends nothing after the idle timeout', async () => {
    const server = await startHttpServer('metrics server', { host: '127.0.0.1', port: 0, text: '127.0.0.1:0' }, (_req, res) => {
      res.end('x');
    }, { maxConnections: 3, idleMs: 200 });
    try {
      const started = Date.now();
      const c = await connect(server.port);
      await waitUntil(() => c.closed());
      assert.ok(Date.now() - started < 2_000, `closed after ${String(Date.now() - started)} ms`);
    } finally {
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
