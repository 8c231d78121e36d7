import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { describe, it } from 'node:test';
import { freePort, freePorts } from '../../../devcluster/ports.js';

const ephemeralStart = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/u)[0]);

describe('free ports for local servers', () => {
  it('are distinct, below the ephemeral range (no outgoing connection can take one after its server stops), and free', async () => {
    const ports = await freePorts(6);
    assert.equal(new Set(ports).size, 6, ports.join(' '));
    for (const port of [...ports, await freePort()]) {
      assert.ok(port >= 20_000 && port < ephemeralStart, `${String(port)} is below ${String(ephemeralStart)}`);
      await new Promise<void>((resolve, reject) => {
        const s = createServer();
        s.once('error', reject);
        s.listen(port, '127.0.0.1', () => s.close(() => { resolve(); }));
      });
    }
  });
});
