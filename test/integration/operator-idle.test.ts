/**
 * An idle operator with deployed CRs runs no helm process and writes nothing, even though every
 * CR is re-checked each reconcile period (5 s here, so a minute holds 12 rounds) — also when every
 * helm action runs as a tenant's ServiceAccount (--default-service-account), which adds a
 * ServiceAccount watch and a check per reconcile, answered from its cache.
 */
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { crsOf, type Crs } from './crs.js';
import { SAMPLE_CHART } from './fixtures.js';
import type { RunningOperator } from './operator.js';
import { logLines } from './operator-log.js';
import { setUp } from './scenario.js';
import { waitFor } from './wait.js';

const IDLE_WINDOW_MS = 60_000;
const NAMES = ['a', 'b', 'c', 'd'];
const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** How many reconciles of each CR found nothing to do so far (`planned` with plan `none`). */
function noOpReconciles(op: RunningOperator, names: readonly string[]): number[] {
  const lines = logLines(op).filter((l) => l.msg === 'planned' && l.plan === 'none');
  return names.map((n) => lines.filter((l) => l.name === n).length);
}

async function metadataOf(cr: Crs, names: readonly string[]): Promise<string[]> {
  return Promise.all(names.map(async (n) => JSON.stringify((await cr.get(n))?.metadata)));
}

/** What the operator's /metrics counts: helm calls, and API requests that write. */
async function counters(metricsAt: string): Promise<{ helm: number; writes: number }> {
  const text = await (await fetch(`http://${metricsAt}/metrics`)).text();
  let helm = 0;
  let writes = 0;
  for (const line of text.split('\n')) {
    const m = /^(chartpilot_helm_calls_total|chartpilot_kube_requests_total)\{(.*)\} (\S+)$/.exec(line);
    if (m === null) continue;
    if (m[1] === 'chartpilot_helm_calls_total') helm += Number(m[3]);
    else if (WRITES.has(/method="([^"]*)"/.exec(m[2] ?? '')?.[1] ?? '')) writes += Number(m[3]);
  }
  return { helm, writes };
}

interface Idle {
  readonly label: string;
  readonly op: RunningOperator;
  readonly cr: Crs;
  readonly metricsAt: string;
  readonly metadata: string[];
}

/** An operator with four deployed CRs, once a whole reconcile round of every CR wrote nothing. */
async function settled(t: TestContext, label: string, kind: string, tenant: boolean): Promise<Idle> {
  const s = await setUp(t, { kind, chart: SAMPLE_CHART });
  if (tenant) {
    await s.cluster.kubectl(['create', 'serviceaccount', 'tenant', '-n', s.ns]);
    await s.cluster.kubectl(['create', 'rolebinding', 'tenant-admin', '-n', s.ns, '--clusterrole=admin', `--serviceaccount=${s.ns}:tenant`]);
  }
  const op = await s.start({
    args: ['--reconcile-period', '5s', '--log-level', 'debug', '--metrics-bind-address', '127.0.0.1:0', ...(tenant ? ['--default-service-account', 'tenant'] : [])],
  });
  const cr = crsOf(s.cluster, s.kind, s.ns, op);
  for (const n of NAMES) await cr.apply(n, { message: n });
  for (const n of NAMES) await cr.deployed(n);
  const metricsAt = await waitFor('metrics address', () => {
    const address = logLines(op).find((l) => l.msg === 'metrics server listening')?.address;
    return Promise.resolve(typeof address === 'string' ? address : undefined);
  });

  // Idle means a whole reconcile of every CR wrote nothing. A no-op reconcile logs `planned`
  // first and may write status after; the next one starts only once it is done. So: metadata
  // read before a no-op reconcile began and again after it ended must be the same.
  let seen = await metadataOf(cr, NAMES);
  let from = noOpReconciles(op, NAMES);
  const metadata = await waitFor(
    `${label}: a reconcile round of every CR that writes nothing`,
    async () => {
      if (!noOpReconciles(op, NAMES).every((count, i) => count >= (from[i] ?? 0) + 2)) return undefined;
      const now = await metadataOf(cr, NAMES);
      const idle = now.every((m, i) => m === seen[i]);
      seen = now;
      from = noOpReconciles(op, NAMES);
      return idle ? now : undefined;
    },
    { timeoutMs: 60_000 },
  );
  return { label, op, cr, metricsAt, metadata };
}

describe('idle operator', () => {
  it('starts no helm process and makes no API write over a minute of idling, as itself or as a tenant', async (t) => {
    const runs = await Promise.all([settled(t, 'as the operator', 'Idle', false), settled(t, 'as a tenant', 'IdleTenant', true)]);
    const before = await Promise.all(runs.map(async (r) => ({ calls: r.op.helmCalls().length, reconciles: countPlanned(r.op), metrics: await counters(r.metricsAt) })));
    for (const b of before) assert.ok(b.metrics.helm >= NAMES.length && b.metrics.writes > 0, `the counters count (installs did both): ${JSON.stringify(b.metrics)}`);

    // A measurement window, not a wait for a condition: the claim is about what does NOT happen.
    await delay(IDLE_WINDOW_MS);

    for (const [i, r] of runs.entries()) {
      const b = before[i];
      assert.ok(b);
      const newCalls = r.op.helmCalls().slice(b.calls);
      assert.deepEqual(newCalls, [], `${r.label}: helm calls while idle: ${newCalls.join(' | ')}`);
      assert.deepEqual(await counters(r.metricsAt), b.metrics, `${r.label}: helm calls or API writes counted while idle`);
      const after = await metadataOf(r.cr, NAMES);
      NAMES.forEach((n, j) => {
        assert.equal(after[j], r.metadata[j], `${r.label}: ${n} was written to while idle`);
      });
      const reconciles = countPlanned(r.op) - b.reconciles;
      assert.ok(reconciles >= NAMES.length * 8, `${r.label}: expected periodic reconciles while idle, saw ${reconciles}`);
    }
  });
});

function countPlanned(op: RunningOperator): number {
  return (op.logs().match(/"msg":"planned"/g) ?? []).length;
}
