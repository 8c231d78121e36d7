import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseBenchArgs, UsageError } from '../../../bench/args.js';
import type { ContenderName } from '../../../bench/contenders.js';
import { checkSameTerms, median, medianRows, mediansMarkdown, MediansError } from '../../../bench/medians.js';
import type { BenchResults, ContenderResult } from '../../../bench/report.js';
import type { ScenarioName, ScenarioResult } from '../../../bench/scenario.js';

function scenario(name: ScenarioName, seconds: number, cpu: number, operatorCpu: number): ScenarioResult {
  return {
    scenario: name, converged: true, done: 100, wallSeconds: seconds + 10, deployedSeconds: seconds, settledSeconds: seconds + 20,
    cpuSeconds: cpu, cpuOperatorSeconds: operatorCpu, helmProcesses: 0, apiRequests: 0, apiWrites: 0, loadAverage: 2, machineBusySeconds: 0,
  } as ScenarioResult;
}

/** A run of N=100 where each contender's create takes the given seconds (CPU 10 s, operator 4 s). */
function run(order: ContenderName[], createSeconds: Partial<Record<ContenderName, number>>, over: Partial<BenchResults['parameters']> = {}): BenchResults {
  const contenders: ContenderResult[] = order.map((name) => ({
    name,
    status: 'ok',
    scenarios: [scenario('create', createSeconds[name] ?? 1, 10, name === 'floor' ? 0 : 4)],
    overall: { peakRssMiB: 100, peakTreeRssMiB: 300, peakTreePssMiB: 200 },
  }));
  return {
    startedAt: '2026-11-28T02:00:00.000Z', finishedAt: '2026-11-28T02:10:00.000Z', command: 'npm run bench',
    parameters: { n: 100, concurrency: 10, idleSeconds: 60, settleSeconds: 5, contenders: order, chart: 'webapp 0.1.0', ...over },
    machine: { cores: 2, cpuModel: 'x', memoryMiB: 1, kernel: 'k' },
    versions: { node: 'v24', helm: 'v4', kubernetes: 'v1', helmOperator: 'v1.42', chartpilot: '0.1.0 (abc)' },
    contenders, ratios: {},
  };
}

describe('bench medians', () => {
  it('takes the median of the values that exist: the middle one, or the mean of the middle two', () => {
    assert.equal(median([3, 1, 2]), 2);
    assert.equal(median([4, 1, 3, 2]), 2.5);
    assert.equal(median([null, 5, undefined, Number.NaN]), 5);
    assert.equal(median([]), null);
  });

  it('takes speed-ups within each run, then their median, not the ratio of the medians', () => {
    // Run by run: operator-sdk ÷ chartpilot = 2/1, 3/2, 30/10 → 2, 1.5, 3 → median 2; the ratio
    // of the medians would say 3/2 = 1.5, mixing seconds from runs at different loads.
    const runs = [
      run(['floor', 'operator-sdk', 'chartpilot'], { floor: 1, 'operator-sdk': 2, chartpilot: 1 }),
      run(['chartpilot', 'operator-sdk', 'floor'], { floor: 1, 'operator-sdk': 3, chartpilot: 2 }),
      run(['floor', 'operator-sdk', 'chartpilot'], { floor: 20, 'operator-sdk': 30, chartpilot: 10 }),
    ];
    const rows = medianRows(runs);
    const speedUp = rows.find((r) => r.label === 'create: operator-sdk ÷ chartpilot, time (> 1: chartpilot faster)');
    assert.deepEqual(speedUp?.values, [2, 1.5, 3]);
    assert.equal(speedUp.median, 2);
    const vsFloor = rows.find((r) => r.label === 'create: floor ÷ chartpilot, time (> 1: chartpilot faster)');
    assert.deepEqual(vsFloor?.values, [1, 0.5, 2]);
    assert.equal(vsFloor.median, 1);
    const seconds = rows.find((r) => r.label === 'create: chartpilot, wall time until all Deployed');
    assert.deepEqual(seconds?.values, [1, 2, 10]);
    assert.equal(seconds.median, 2);
  });

  it('gives helm\'s CPU per call as the contender\'s CPU less its operator\'s, and none for operator-sdk', () => {
    const rows = medianRows([run(['floor', 'operator-sdk', 'chartpilot'], {}), run(['chartpilot', 'operator-sdk', 'floor'], {})]);
    assert.equal(rows.find((r) => r.label === 'create: chartpilot, helm\'s CPU per call')?.median, 60); // (10 − 4) s / 100 calls
    assert.equal(rows.find((r) => r.label === 'create: floor, helm\'s CPU per call')?.median, 100);
    assert.equal(rows.find((r) => r.label === 'create: operator-sdk, helm\'s CPU per call'), undefined);
  });

  it('refuses runs on other terms, naming the parameter, but not another contender order', () => {
    const a = run(['floor', 'operator-sdk', 'chartpilot'], {});
    assert.doesNotThrow(() => { checkSameTerms([a, run(['chartpilot', 'operator-sdk', 'floor'], {})]); });
    assert.throws(() => { checkSameTerms([a, run(['floor', 'operator-sdk', 'chartpilot'], {}, { n: 200 })]); },
      (err: unknown) => err instanceof MediansError && /run 2 .* differs from run 1 in n: 200 against 100/.test(err.message));
    assert.throws(() => { checkSameTerms([a, run(['floor', 'chartpilot'], {})]); }, (err: unknown) => err instanceof MediansError && /in contenders/.test(err.message));
    assert.throws(() => { checkSameTerms([a, run(['floor', 'operator-sdk', 'chartpilot'], {}, { chart: 'podinfo 6.9.2' })]); }, /in chart/);
    assert.throws(() => { checkSameTerms([a]); }, /at least two/);
  });

  it('prints each run\'s order and the medians in bold', () => {
    const md = mediansMarkdown([run(['floor', 'operator-sdk', 'chartpilot'], { chartpilot: 1 }), run(['chartpilot', 'operator-sdk', 'floor'], { chartpilot: 3 })]);
    assert.match(md, /\| 1 \| 2026-11-28 02:00:00 \| floor, operator-sdk, chartpilot \|/);
    assert.match(md, /\| 2 \| [^|]+ \| chartpilot, operator-sdk, floor \|/);
    assert.match(md, /\| create: chartpilot, wall time until all Deployed \(s\) \| 1\.0 \| 3\.0 \| \*\*2\.0\*\* \|/);
  });

  it('is reached with --medians and at least two files', () => {
    assert.deepEqual(parseBenchArgs(['--medians', 'a.json, b.json,c.json'])?.medians, ['a.json', 'b.json', 'c.json']);
    assert.equal(parseBenchArgs([])?.medians, undefined);
    assert.throws(() => parseBenchArgs(['--medians', 'a.json']), UsageError);
  });
});
