/**
 * Step 2 proof: an idle operator with deployed CRs runs no helm process and writes nothing, even
 * though every CR is re-checked each reconcile period (5 s here, so a minute holds 12 rounds).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { newNamespace, testCluster } from './harness.js';
import { SAMPLE_CHART, applyCr, condition, installCrd, startOperator, testKind, waitForCr, getCr } from './operator-harness.js';

const IDLE_WINDOW_MS = 60_000;

describe('idle operator', () => {
  it('starts no helm process and changes no CR over a minute of idling', async (t) => {
    const cluster = await testCluster();
    const k = testKind('Idle');
    await installCrd(cluster, k);
    const ns = await newNamespace(t, 'idle');
    const op = await startOperator(t, cluster, {
      namespaces: [ns],
      watches: [{ kind: k, chart: SAMPLE_CHART }],
      args: ['--reconcile-period', '5s', '--log-level', 'debug'],
    });
    const names = ['a', 'b', 'c', 'd'];
    for (const n of names) await applyCr(cluster, k, ns, n, { message: n });
    const before = new Map<string, string>();
    for (const n of names) {
      await waitForCr(cluster, k, ns, n, 'Deployed', (cr) => condition(cr, 'Deployed')?.status === 'True', op);
    }
    // Let the first requeue round pass so the cache holds the operator's own status writes.
    await delay(6_000);
    for (const n of names) before.set(n, JSON.stringify((await getCr(cluster, k, ns, n))?.metadata));
    const callsBefore = op.helmCalls().length;
    const reconcilesBefore = (op.logs().match(/"msg":"planned"/g) ?? []).length;

    // A measurement window, not a wait for a condition: the claim is about what does NOT happen.
    await delay(IDLE_WINDOW_MS);

    const newCalls = op.helmCalls().slice(callsBefore);
    assert.deepEqual(newCalls, [], `helm calls while idle: ${newCalls.join(' | ')}`);
    for (const n of names) {
      assert.equal(JSON.stringify((await getCr(cluster, k, ns, n))?.metadata), before.get(n), `${n} was written to while idle`);
    }
    const reconciles = (op.logs().match(/"msg":"planned"/g) ?? []).length - reconcilesBefore;
    assert.ok(reconciles >= names.length * 8, `expected periodic reconciles while idle, saw ${reconciles}`);
  });
});
