/**
 * Churn soak, short form (well under 3 minutes): random create / update / delete of CRs among 20
 * names for 80 s, then convergence and the invariants a long-running operator must keep — releases
 * match CRs exactly, nothing pending, no orphaned objects, no helm process or values file left
 * behind, memory flat. The 10-minute form is test/soak/long-soak.ts (not part of npm test).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fixtureChart } from './fixtures.js';
import { operatorScenario } from './scenario.js';
import { waitFor } from './wait.js';
import { isAlive } from '../soak/procfs.js';
import { childProcesses, churn, helmCallCounts, leakedValuesDirs, settledRssKiB, waitConverged } from '../soak/churn.js';

const MiB = 1024;

describe('churn soak (short)', () => {
  it('keeps releases, objects, processes, temp files and memory in line with 80 s of random churn', { timeout: 10 * 60_000 }, async (t) => {
    // A private TMPDIR: values files of other operators running on this machine must not count.
    const tmp = mkdtempSync(join(tmpdir(), 'chartpilot-soak-tmp-'));
    t.after(() => {
      rmSync(tmp, { recursive: true, force: true });
    });
    const { cluster, ns, kind: k, op } = await operatorScenario(t, {
      kind: 'Soak',
      chart: fixtureChart('settings'),
      // cli mode: what this soak counts (a helm process per call, each gone when idle) is that
      // path's; warm workers stay as children by design (test/integration/warm-helm.test.ts).
      operator: { args: ['--max-concurrent-reconciles', '4', '--helm-mode', 'cli'], env: { TMPDIR: tmp } },
    });
    const pid = op.process.pid;
    assert.ok(pid !== undefined);

    const seed = Number(process.env.CHARTPILOT_SOAK_SEED ?? Date.now() % 1_000_000);
    t.diagnostic(`seed ${String(seed)} (set CHARTPILOT_SOAK_SEED to replay)`);
    // RSS right after start-up (informers synced, helm version probed), before any CR.
    const rssCold = await settledRssKiB(pid, 4000, 3);
    // V8 sizes its heap to the work during the first tens of seconds (the 10-minute soak shows
    // RSS climbing for ~3 minutes, then flat): the leak check compares against a warmed-up
    // baseline, taken after a first 20 s of churn.
    const warm = await churn({ cluster, kind: k, namespace: ns, pool: 20, durationMs: 20_000, seed, pauseMs: [100, 500] });
    const rssStart = await settledRssKiB(pid, 4000, 3);

    const startedChurn = Date.now();
    const model = await churn({ cluster, kind: k, namespace: ns, pool: 20, durationMs: 60_000, seed: seed + 1, pauseMs: [100, 500], from: warm });
    const churnMs = Date.now() - startedChurn;
    t.diagnostic(`churn: 20 s warm-up + ${String(Math.round(churnMs / 1000))} s, ops ${JSON.stringify(model.ops)}, ${String(model.present.size)} CRs at the end`);

    const convergeMs = await waitConverged(cluster, k, ns, model, 150_000, op);
    t.diagnostic(`converged ${String(Math.round(convergeMs / 1000))} s after the churn stopped; helm calls ${JSON.stringify(helmCallCounts(op))}`);

    // Idle now: no helm process may be left running below the operator.
    await waitFor('no child processes of the idle operator', () => Promise.resolve(childProcesses(op).length === 0), { timeoutMs: 30_000 });
    assert.deepEqual(leakedValuesDirs(tmp), [], 'every values directory was removed');
    const otherTemp = readdirSync(tmp).filter((f) => !f.startsWith('chartpilot-helm-plugins-'));
    t.diagnostic(`other entries in the operator's TMPDIR: ${JSON.stringify(otherTemp)}`);

    const rssEnd = await settledRssKiB(pid, 10_000, 5);
    const growth = rssEnd - rssStart;
    t.diagnostic(`RSS cold ${String(Math.round(rssCold / MiB))} MiB, warm ${String(Math.round(rssStart / MiB))} MiB, end ${String(Math.round(rssEnd / MiB))} MiB (${growth >= 0 ? '+' : ''}${String(Math.round(growth / MiB))} MiB)`);
    assert.ok(growth < 50 * MiB, `operator RSS grew by ${String(Math.round(growth / MiB))} MiB over a short churn`);
    assert.ok(isAlive(pid), 'the operator is still running');
  });
});
