/**
 * An idle operator with deployed CRs runs no helm process and writes nothing, even though every
 * CR is re-checked each reconcile period (5 s here, so a minute holds 12 rounds).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import type { Crs } from './crs.js';
import { SAMPLE_CHART } from './fixtures.js';
import type { RunningOperator } from './operator.js';
import { logLines } from './operator-log.js';
import { operatorScenario } from './scenario.js';
import { waitFor } from './wait.js';

const IDLE_WINDOW_MS = 60_000;

/** How many reconciles of each CR found nothing to do so far (`planned` with plan `none`). */
function noOpReconciles(op: RunningOperator, names: readonly string[]): number[] {
  const lines = logLines(op).filter((l) => l.msg === 'planned' && l.plan === 'none');
  return names.map((n) => lines.filter((l) => l.name === n).length);
}

async function metadataOf(cr: Crs, names: readonly string[]): Promise<string[]> {
  return Promise.all(names.map(async (n) => JSON.stringify((await cr.get(n))?.metadata)));
}

describe('idle operator', () => {
  it('starts no helm process and changes no CR over a minute of idling', async (t) => {
    const { op, cr } = await operatorScenario(t, {
      kind: 'Idle',
      chart: SAMPLE_CHART,
      operator: { args: ['--reconcile-period', '5s', '--log-level', 'debug'] },
    });
    const names = ['a', 'b', 'c', 'd'];
    for (const n of names) await cr.apply(n, { message: n });
    for (const n of names) await cr.deployed(n);

    // Idle means a whole reconcile of every CR wrote nothing. A no-op reconcile logs `planned`
    // first and may write status after; the next one starts only once it is done. So: metadata
    // read before a no-op reconcile began and again after it ended must be the same.
    let seen = await metadataOf(cr, names);
    let from = noOpReconciles(op, names);
    const before = await waitFor(
      'a reconcile round of every CR that writes nothing',
      async () => {
        if (!noOpReconciles(op, names).every((count, i) => count >= (from[i] ?? 0) + 2)) return undefined;
        const now = await metadataOf(cr, names);
        const idle = now.every((m, i) => m === seen[i]);
        seen = now;
        from = noOpReconciles(op, names);
        return idle ? now : undefined;
      },
      { timeoutMs: 60_000 },
    );
    const callsBefore = op.helmCalls().length;
    const reconcilesBefore = (op.logs().match(/"msg":"planned"/g) ?? []).length;

    // A measurement window, not a wait for a condition: the claim is about what does NOT happen.
    await delay(IDLE_WINDOW_MS);

    const newCalls = op.helmCalls().slice(callsBefore);
    assert.deepEqual(newCalls, [], `helm calls while idle: ${newCalls.join(' | ')}`);
    const after = await metadataOf(cr, names);
    names.forEach((n, i) => {
      assert.equal(after[i], before[i], `${n} was written to while idle`);
    });
    const reconciles = (op.logs().match(/"msg":"planned"/g) ?? []).length - reconcilesBefore;
    assert.ok(reconciles >= names.length * 8, `expected periodic reconciles while idle, saw ${reconciles}`);
  });
});
