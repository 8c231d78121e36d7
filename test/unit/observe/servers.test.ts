import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { ListenError } from '../../../src/observe/http-server.js';
import { createLogger } from '../../../src/observe/logger.js';
import { OperatorMetrics } from '../../../src/observe/metrics.js';
import { startServers } from '../../../src/observe/servers.js';
import type { CheckResult } from '../../../src/observe/health-server.js';

function capture(): { log: ReturnType<typeof createLogger>; lines: { msg: string; address?: string }[] } {
  const lines: { msg: string; address?: string }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString().split('\n')) if (l !== '') lines.push(JSON.parse(l) as { msg: string; address?: string });
      cb();
    },
  });
  return { log: createLogger('info', sink), lines };
}

const local = { host: '127.0.0.1', port: 0, text: '127.0.0.1:0' };

describe('startServers', () => {
  it('logs the real address of each server and serves readiness from the given check', async () => {
    const { log, lines } = capture();
    let ready: CheckResult = 'starting: checking the cluster';
    const servers = await startServers({
      metrics: new OperatorMetrics({ build: { version: '1' }, defaultMetrics: false }),
      metricsAddress: local,
      healthAddress: local,
      ready: () => ready,
      log,
    });
    try {
      const metricsAt = lines.find((l) => l.msg === 'metrics server listening')?.address ?? '';
      const probesAt = lines.find((l) => l.msg === 'health probe server listening')?.address ?? '';
      assert.match(metricsAt, /^127\.0\.0\.1:[1-9]\d*$/);
      assert.match(probesAt, /^127\.0\.0\.1:[1-9]\d*$/);
      assert.equal((await fetch(`http://${metricsAt}/metrics`)).status, 200);
      assert.equal((await fetch(`http://${probesAt}/healthz`)).status, 200);
      const notReady = await fetch(`http://${probesAt}/readyz`);
      assert.equal(notReady.status, 500);
      assert.match(await notReady.text(), /\[-\]informers failed: starting: checking the cluster/);
      ready = true;
      assert.equal((await fetch(`http://${probesAt}/readyz`)).status, 200);
    } finally {
      await servers.close();
    }
  });

  it('starts nothing for disabled addresses', async () => {
    const { log, lines } = capture();
    const servers = await startServers({
      metrics: new OperatorMetrics({ build: { version: '1' }, defaultMetrics: false }),
      metricsAddress: undefined,
      healthAddress: undefined,
      ready: () => true,
      log,
    });
    await servers.close();
    assert.deepEqual(lines, []);
  });

  it('closes the metrics server when the probe address cannot be bound', async () => {
    const { log, lines } = capture();
    const metrics = new OperatorMetrics({ build: { version: '1' }, defaultMetrics: false });
    const blocker = await startServers({ metrics, metricsAddress: local, healthAddress: undefined, ready: () => true, log });
    const port = Number((lines[0]?.address ?? '').split(':')[1]);
    try {
      await assert.rejects(
        startServers({ metrics, metricsAddress: local, healthAddress: { host: '127.0.0.1', port, text: `127.0.0.1:${port}` }, ready: () => true, log }),
        ListenError,
      );
      const second = lines[1]?.address ?? '';
      assert.match(second, /^127\.0\.0\.1:\d+$/);
      await assert.rejects(fetch(`http://${second}/metrics`), 'the metrics server that did start was closed');
    } finally {
      await blocker.close();
    }
  });
});
