/**
 * Keeps `npm run bench` from rotting: the real harness (own control plane, floor and chartpilot,
 * operator-sdk too if its binary is already cached) in smoke mode, N=5 and a few seconds of idle.
 * Checks the harness produced complete, sane figures; the figures themselves are not asserted
 * (they are measured by a real run, see bench/RESULTS.md).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { BenchResults } from '../../bench/report.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const TIMEOUT_MS = 170_000;

function runBench(args: string[]): Promise<{ code: number | null; output: string }> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  delete env.NODE_TEST_CONTEXT;
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, [join(ROOT, 'dist/bench/run.js'), ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c: Buffer) => { output += c.toString('utf8'); });
    child.stderr.on('data', (c: Buffer) => { output += c.toString('utf8'); });
    // TERM, not KILL: the bench then stops its operator and its control plane itself.
    const timer = setTimeout(() => { child.kill('SIGTERM'); }, TIMEOUT_MS - 10_000);
    child.on('error', rej);
    child.on('close', (code) => {
      clearTimeout(timer);
      res({ code, output });
    });
  });
}

describe('npm run bench (smoke mode)', () => {
  it('measures floor and chartpilot through create, upgrade, idle and delete', { timeout: TIMEOUT_MS }, async (t) => {
    const out = mkdtempSync(join(tmpdir(), 'chartpilot-bench-smoke-'));
    t.after(() => { rmSync(out, { recursive: true, force: true }); });
    const binDir = process.env.CHARTPILOT_TEST_BIN;
    const { code, output } = await runBench(['--smoke', '--idle-seconds', '6', '--out-dir', out, ...(binDir === undefined ? [] : ['--bin-dir', binDir])]);
    assert.equal(code, 0, `bench exited with ${String(code)}:\n${output}`);

    const files = readdirSync(out).sort();
    assert.equal(files.length, 2, `expected results-*.json and .md, got ${files.join(', ')}`);
    const json = files.find((f) => f.endsWith('.json')) ?? '';
    const md = readFileSync(join(out, files.find((f) => f.endsWith('.md')) ?? ''), 'utf8');
    const results = JSON.parse(readFileSync(join(out, json), 'utf8')) as BenchResults;

    assert.equal(results.parameters.n, 5);
    assert.ok(results.machine.cores > 0 && results.machine.memoryMiB > 0);
    assert.match(results.versions.kubernetes, /^v1\./);
    assert.match(results.versions.helm, /^v\d/);
    const ran = results.contenders.filter((c) => c.status === 'ok').map((c) => c.name);
    assert.ok(ran.includes('floor') && ran.includes('chartpilot'), `contenders that ran: ${ran.join(', ')}\n${output}`);
    for (const c of results.contenders.filter((x) => x.status === 'ok')) {
      assert.deepEqual(c.scenarios.map((s) => s.scenario), ['create', 'upgrade', 'idle', 'delete'], c.name);
      for (const s of c.scenarios) {
        assert.ok(s.converged, `${c.name} ${s.scenario} did not converge: ${s.detail ?? ''}`);
        assert.ok(s.wallSeconds > 0 && s.apiRequests >= 0, `${c.name} ${s.scenario}: ${JSON.stringify(s)}`);
      }
      const create = c.scenarios[0];
      assert.ok(create !== undefined && create.cpuSeconds > 0, `${c.name}: no CPU measured for create`);
      assert.ok(create.apiWrites > 0, `${c.name}: no API writes measured for create`);
      const idle = c.scenarios.find((s) => s.scenario === 'idle');
      assert.ok(idle?.perMinute !== undefined, `${c.name}: idle has no per-minute figures`);
      // The audit log's attribution over the equal window, which ends at settled for create and upgrade.
      for (const s of c.scenarios.filter((x) => x.scenario === 'create' || x.scenario === 'upgrade')) {
        assert.ok(s.settledSeconds !== undefined && s.settledSeconds >= s.wallSeconds, `${c.name} ${s.scenario}: settled ${String(s.settledSeconds)}`);
        assert.ok((s.writes?.contender ?? 0) >= 5 && (s.writes?.controlPlane ?? 0) > 0, `${c.name} ${s.scenario}: ${JSON.stringify(s.writes)}`);
        assert.ok((s.timeline?.gaps.length ?? 0) > 0, `${c.name} ${s.scenario}: no timeline`);
      }
      assert.equal(create.writes?.helmByKey['create secrets'], c.name === 'operator-sdk' ? undefined : 5, `${c.name}: one release record per release`);
    }
    const cp = results.contenders.find((c) => c.name === 'chartpilot');
    const floorWrites = results.contenders.find((c) => c.name === 'floor')?.scenarios[0]?.writes;
    assert.equal(floorWrites?.operator, 0, 'the floor has no operator');
    // chartpilot writes a Ready condition: its lag behind the Deployments is measured per CR.
    assert.equal(cp?.scenarios[0]?.readyLag?.count, 5, `chartpilot create Ready lag: ${JSON.stringify(cp?.scenarios[0]?.readyLag)}`);
    // chartpilot's /metrics, scraped over HTTPS with a reader's token after create and after upgrade.
    for (const s of cp.scenarios.filter((x) => x.scenario === 'create' || x.scenario === 'upgrade')) {
      const m = s.metrics;
      assert.ok(m !== undefined, `chartpilot ${s.scenario}: no /metrics probe`);
      assert.equal(m.ok, m.scrapes, `chartpilot ${s.scenario}: /metrics scrapes not all answered: ${JSON.stringify(m)}`);
      assert.ok(m.scrapes >= 5 && m.medianMs !== null && m.maxMs !== null && m.medianMs <= m.maxMs, `chartpilot ${s.scenario}: ${JSON.stringify(m)}`);
      assert.equal(m.crsSeen, 5, `chartpilot ${s.scenario}: every CR has its series`);
      // Converged, every CR is Ready: by default (--resource-metrics attention) each has only
      // operator-sdk's resource_created_at_seconds; the chartpilot_* ones are the aggregates.
      assert.ok(m.seriesPerCr === 1 && m.chartpilotSeriesPerCr === 0 && m.chartpilotSeries > 0 && m.series > m.chartpilotSeries && m.bytes > 1000, `chartpilot ${s.scenario}: ${JSON.stringify(m)}`);
      assert.ok(m.operatorCpuMsPerScrape !== null && m.operatorCpuMsPerScrapeNet !== null && m.operatorCpuMsPerScrapeNet <= m.operatorCpuMsPerScrape,
        `chartpilot ${s.scenario}: operator CPU ${String(m.operatorCpuMsPerScrapeNet)} / ${String(m.operatorCpuMsPerScrape)}`);
    }
    assert.equal(results.contenders.find((c) => c.name === 'floor')?.scenarios[0]?.metrics, undefined, 'the floor has no /metrics');
    assert.match(md, /GET \/metrics after convergence/);
    assert.match(md, /Ready lag per CR/);
    assert.match(md, /per-CR timeline/);
    const floorCreate = results.contenders.find((c) => c.name === 'floor')?.scenarios[0];
    // By construction: one helm process per release.
    assert.equal(floorCreate?.helmProcesses, 5);
    assert.ok((cp.overall?.peakRssMiB ?? 0) > 10, `chartpilot peak RSS: ${String(cp.overall?.peakRssMiB)}`);
    assert.ok(results.ratios['chartpilot/floor']?.create?.wallSeconds !== undefined, 'no chartpilot/floor ratio');
    assert.match(md, /## create[\s\S]*## upgrade[\s\S]*## idle[\s\S]*## delete/);
  });
});
