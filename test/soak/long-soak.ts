/**
 * The long churn soak (default 10 minutes, 100 names): a standalone script, not part of npm test.
 *
 *   npm run build && node dist/test/soak/long-soak.js [--minutes 10] [--pool 100] [--seed N]
 *       [--concurrency 10] [--max-rss-growth-mib 100]
 *
 * (Node 24: use node_modules/.bin/node where the system node is older.) Starts its own control
 * plane unless CHARTPILOT_TEST_KUBECONFIG names one. Runs the real operator binary, churns CRs of
 * the `settings` chart, waits for convergence, checks the same invariants as the short soak and
 * prints the numbers: operations, convergence time, helm calls, RSS over time. Exit code 0 when
 * every invariant holds, 1 otherwise.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { parseArgs } from 'node:util';
import { startControlPlane, stopControlPlane } from '../../devcluster/control-plane.js';
import { provision } from '../../devcluster/provision.js';
import { fixtureChart } from '../integration/fixtures.js';
import { operatorScenario } from '../integration/scenario.js';
import { waitFor } from '../integration/wait.js';
import { childProcesses, churn, helmCallCounts, leakedValuesDirs, settledRssKiB, waitConverged } from './churn.js';
import { isAlive, rssKiB } from './procfs.js';
import { errorMessage } from '../../src/lib/errors.js';

const say = (line: string): void => {
  process.stderr.write(`[long-soak ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
};

/** The two things the harness needs from a test context, for use outside node:test. */
function scriptContext(cleanups: (() => unknown)[]): TestContext {
  const ctx = {
    after: (fn: () => unknown) => {
      cleanups.push(fn);
    },
    diagnostic: (msg: string) => {
      say(msg);
    },
  };
  return ctx as unknown as TestContext;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      minutes: { type: 'string', default: '10' },
      pool: { type: 'string', default: '100' },
      seed: { type: 'string' },
      concurrency: { type: 'string', default: '10' },
      'max-rss-growth-mib': { type: 'string', default: '100' },
    },
  });
  const minutes = Number(values.minutes);
  const pool = Number(values.pool);
  const seed = values.seed === undefined ? Date.now() % 1_000_000 : Number(values.seed);
  const maxGrowthMiB = Number(values['max-rss-growth-mib']);
  if (!(minutes > 0 && Number.isInteger(pool) && pool > 0 && Number.isFinite(seed) && maxGrowthMiB > 0)) {
    say('bad arguments: --minutes > 0, --pool a positive integer, --seed a number, --max-rss-growth-mib > 0');
    return 2;
  }

  const cleanups: (() => unknown)[] = [];
  const t = scriptContext(cleanups);
  let cpDir: string | undefined;
  try {
    if (process.env.CHARTPILOT_TEST_KUBECONFIG === undefined) {
      const binDir = process.env.CHARTPILOT_TEST_BIN ?? (await provision({ log: () => undefined }));
      process.env.CHARTPILOT_TEST_BIN = binDir;
      cpDir = mkdtempSync(join(tmpdir(), 'chartpilot-long-soak-cp-'));
      const cp = await startControlPlane({ dir: cpDir, binDir });
      process.env.CHARTPILOT_TEST_KUBECONFIG = cp.kubeconfig;
      say(`control plane ${cp.version} up in ${(cp.startupMs / 1000).toFixed(1)} s`);
    }
    const tmp = mkdtempSync(join(tmpdir(), 'chartpilot-long-soak-tmp-'));
    cleanups.push(() => {
      rmSync(tmp, { recursive: true, force: true });
    });
    const { cluster, ns, kind: k, op } = await operatorScenario(t, {
      kind: 'LongSoak',
      chart: fixtureChart('settings'),
      namespace: 'long-soak',
      operator: { args: ['--max-concurrent-reconciles', String(Number(values.concurrency))], env: { TMPDIR: tmp } },
    });
    const pid = op.process.pid;
    if (pid === undefined) throw new Error('operator has no pid');
    say(`operator pid ${String(pid)}, namespace ${ns}, seed ${String(seed)}, pool ${String(pool)}, ${String(minutes)} min`);

    const rssStart = await settledRssKiB(pid, 4000, 3);
    const samples: { atS: number; rssMiB: number }[] = [];
    const churnStarted = Date.now();
    const model = await churn({
      cluster,
      kind: k,
      namespace: ns,
      pool,
      durationMs: minutes * 60_000,
      seed,
      pauseMs: [50, 300],
      log: say,
      onTick: () => {
        const r = rssKiB(pid);
        if (r !== undefined) samples.push({ atS: Math.round((Date.now() - churnStarted) / 1000), rssMiB: Math.round(r / 1024) });
      },
    });
    say(`churn done: ops ${JSON.stringify(model.ops)}, ${String(model.present.size)} CRs must exist`);

    const problems: string[] = [];
    let convergeMs = -1;
    try {
      convergeMs = await waitConverged(cluster, k, ns, model, 10 * 60_000, op);
    } catch (err) {
      problems.push(errorMessage(err));
    }
    try {
      await waitFor('no child processes of the idle operator', () => Promise.resolve(childProcesses(op).length === 0), { timeoutMs: 60_000 });
    } catch {
      problems.push(`helm processes left below the operator: ${childProcesses(op).join('; ')}`);
    }
    const leaked = leakedValuesDirs(tmp);
    if (leaked.length > 0) problems.push(`values directories left behind: ${leaked.join(', ')}`);
    const rssEnd = await settledRssKiB(pid, 15_000, 6);
    const growthMiB = (rssEnd - rssStart) / 1024;
    if (growthMiB > maxGrowthMiB) problems.push(`RSS grew by ${growthMiB.toFixed(0)} MiB (limit ${String(maxGrowthMiB)})`);
    if (!isAlive(pid)) problems.push('the operator died');
    // Second-half slope: a leak keeps climbing after the heap has warmed up.
    const half = samples.filter((s) => s.atS >= (minutes * 60) / 2);
    const first = half[0];
    const lastSample = half.at(-1);
    const slope = first !== undefined && lastSample !== undefined && lastSample.atS > first.atS
      ? ((lastSample.rssMiB - first.rssMiB) / (lastSample.atS - first.atS)) * 60
      : undefined;

    const report = {
      seed,
      minutes,
      pool,
      ops: model.ops,
      crsAtEnd: model.present.size,
      convergeSeconds: convergeMs < 0 ? null : Math.round(convergeMs / 1000),
      helmCalls: helmCallCounts(op),
      rssMiB: { start: Math.round(rssStart / 1024), end: Math.round(rssEnd / 1024), growth: Math.round(growthMiB), secondHalfSlopePerMin: slope === undefined ? null : Number(slope.toFixed(2)) },
      rssSamples: samples,
      otherTempEntries: readdirSync(tmp).filter((f) => !f.startsWith('chartpilot-helm-plugins-')),
      problems,
    };
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    say(problems.length === 0 ? 'PASS' : `FAIL (${String(problems.length)} problems)`);
    return problems.length === 0 ? 0 : 1;
  } finally {
    for (const fn of cleanups.reverse()) {
      try {
        await fn();
      } catch (err) {
        say(`cleanup failed: ${errorMessage(err)}`);
      }
    }
    if (cpDir !== undefined) await stopControlPlane(cpDir);
  }
}

process.exitCode = await main();
