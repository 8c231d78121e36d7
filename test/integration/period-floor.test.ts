/**
 * #25 item 4: `reconcile-period: 1ms` on CRs is raised to the 5 s minimum with a Warning Event,
 * so it makes no hot loop: the operator's own count of API requests over a window stays at what
 * a 5 s period costs.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { eventsFor } from './crs.js';
import { SAMPLE_CHART } from './fixtures.js';
import { logLines } from './operator-log.js';
import { operatorScenario } from './scenario.js';
import { waitFor } from './wait.js';

const NAMES = ['p1', 'p2', 'p3', 'p4', 'p5'];
const WINDOW_MS = 20_000;

/** Every API request the operator made so far, by its own metric. */
async function apiRequests(metricsAt: string): Promise<number> {
  const text = await (await fetch(`http://${metricsAt}/metrics`)).text();
  let total = 0;
  for (const m of text.matchAll(/^chartpilot_kube_requests_total\{.*\} (\S+)$/gm)) total += Number(m[1]);
  return total;
}

describe('period floors', () => {
  it('turns a 1ms reconcile-period annotation into the 5 s minimum, with a Warning Event, and no hot loop', { timeout: 5 * 60_000 }, async (t) => {
    const { cluster, ns, op, cr } = await operatorScenario(t, {
      kind: 'Hot',
      chart: SAMPLE_CHART,
      operator: { args: ['--metrics-bind-address', '127.0.0.1:0'] },
    });
    const metricsAt = await waitFor('metrics address', () => {
      const address = logLines(op).find((l) => l.msg === 'metrics server listening')?.['address'];
      return Promise.resolve(typeof address === 'string' ? address : undefined);
    });
    for (const n of NAMES) await cr.apply(n, { message: n }, { 'helm.sdk.operatorframework.io/reconcile-period': '1ms' });
    for (const n of NAMES) await cr.deployed(n);
    await waitFor('the ReconcilePeriodRaised warning', async () =>
      (await eventsFor(cluster, ns, 'p1')).some((e) => e.type === 'Warning' && e.reason === 'ReconcilePeriodRaised' && /below the minimum of 5s/.test(e.message)),
    );
    await delay(5_000); // past the deploy's own follow-ups

    const before = await apiRequests(metricsAt);
    await delay(WINDOW_MS);
    const requests = (await apiRequests(metricsAt)) - before;
    const perSecond = requests / (WINDOW_MS / 1000);
    t.diagnostic(`${String(NAMES.length)} CRs at reconcile-period 1ms: ${String(requests)} API requests in ${String(WINDOW_MS / 1000)} s (${perSecond.toFixed(1)}/s)`);
    // A 5 s period: 4 reconciles per CR in the window, each a LIST of release records and little
    // else. A 1 ms period would be thousands.
    assert.ok(requests <= NAMES.length * (WINDOW_MS / 5_000) * 4, `${String(requests)} requests`);
  });
});
