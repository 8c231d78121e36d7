/**
 * Step 20: one tenant pod cannot starve the probe or metrics port. Another address (127.0.0.2;
 * Linux loopback takes any 127/8 source) opens 200 connections a second, each held as long as the
 * server lets it, while a kubelet-style poller on 127.0.0.1 GETs /healthz every second with a 1 s
 * timeout: every poll must answer 200 in time. Then the same, shorter, for a scrape of /metrics
 * over HTTPS (as deploy/ serves it). The operator runs as the tests run it, with the servers'
 * default limits; the probe server binds every interface as the default `:8081` does (port 0 here).
 */
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { kubeletGet, openFds, pacedFlood, type FloodMode, type PollResult } from './conn-flood.js';
import { SAMPLE_CHART } from './fixtures.js';
import { waitForLog, type LogLine } from './operator-log.js';
import { setUp } from './scenario.js';

const FLOOD_FROM = '127.0.0.2';
const PER_SECOND = 200;

function portOf(line: LogLine): number {
  return Number(/:(\d+)$/.exec(String(line['address']))?.[1]);
}

interface Round {
  readonly polls: readonly PollResult[];
  readonly maxFds: number;
}

/**
 * Floods 127.0.0.1:`port` from FLOOD_FROM for `seconds`, polling `url` once a second (on the
 * second, as the kubelet's period does) with `timeoutMs`; reports what the flood saw.
 */
async function floodAndPoll(t: TestContext, what: string, o: { pid: number; port: number; url: string; seconds: number; timeoutMs: number; modes: readonly FloodMode[] }): Promise<Round> {
  const f = pacedFlood({ host: '127.0.0.1', port: o.port, localAddress: FLOOD_FROM, perSecond: PER_SECOND, modes: o.modes });
  t.after(() => {
    f.stop();
  });
  const polls: PollResult[] = [];
  let maxFds = 0;
  const start = Date.now();
  for (let i = 1; i <= o.seconds; i++) {
    // Pacing, not waiting for a condition: the poller's period.
    const left = start + i * 1_000 - Date.now();
    if (left > 0) await delay(left);
    maxFds = Math.max(maxFds, openFds(o.pid));
    polls.push(await kubeletGet(o.url, o.timeoutMs));
  }
  const opened = f.opened();
  f.stop();
  const answered = polls.filter((p) => p.ok && p.ms <= o.timeoutMs);
  t.diagnostic(
    `${what}: ${String(answered.length)}/${String(polls.length)} polls answered 200 within ${String(o.timeoutMs)} ms, worst ${Math.max(...polls.map((p) => p.ms)).toFixed(0)} ms; ` +
      `flood from ${FLOOD_FROM}: ${String(opened)} connections in ${String(o.seconds)} s, ${String(f.refusedAtOnce())} closed at once, ` +
      `longest held ${String(f.longestHeldMs())} ms, at most ${String(f.maxOpen())} open at once${f.heldBack() > 0 ? ` (held back ${String(f.heldBack())} times)` : ''}; ` +
      `operator file descriptors at most ${String(maxFds)}`,
  );
  const failed = polls.map((p, i) => ({ second: i + 1, ...p })).filter((p) => !p.ok || p.ms > o.timeoutMs);
  for (const p of failed) t.diagnostic(`  poll at ${String(p.second)} s: ${p.detail} after ${p.ms.toFixed(0)} ms`);
  // The flood really ran at its rate (a stalled flood would prove nothing).
  assert.ok(opened >= PER_SECOND * o.seconds * 0.9, `the flood opened ${String(opened)} connections, not ${String(PER_SECOND * o.seconds)}`);
  return { polls, maxFds };
}

describe('probes and metrics under a connection flood from another peer', () => {
  it('answers every kubelet poll of /healthz within 1 s, and every scrape within 2 s, while 127.0.0.2 opens 200 connections a second', { timeout: 6 * 60_000 }, async (t) => {
    const s = await setUp(t, { kind: 'ProbeFlood', chart: SAMPLE_CHART });
    const op = await s.start({ args: ['--health-probe-bind-address', ':0', '--metrics-bind-address', ':0', '--metrics-secure'] });
    const pid = op.process.pid ?? 0;
    const health = portOf(await waitForLog(op, 'health probe server listening'));
    const metrics = portOf(await waitForLog(op, 'metrics server listening'));

    const probes = await floodAndPoll(t, 'probe port', {
      pid,
      port: health,
      url: `http://127.0.0.1:${String(health)}/healthz`,
      seconds: 60,
      timeoutMs: 1_000,
      modes: ['idle', 'trickle', 'keep-alive'],
    });
    const scrapes = await floodAndPoll(t, 'metrics port (HTTPS)', {
      pid,
      port: metrics,
      url: `https://127.0.0.1:${String(metrics)}/metrics`,
      seconds: 20,
      timeoutMs: 2_000,
      modes: ['idle', 'trickle'],
    });
    assert.deepEqual(probes.polls.filter((p) => !p.ok || p.ms > 1_000).map((p) => p.detail), [], 'every /healthz poll answered 200 within 1 s');
    assert.deepEqual(scrapes.polls.filter((p) => !p.ok || p.ms > 2_000).map((p) => p.detail), [], 'every scrape answered 200 within 2 s');
  });
});
