import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseBenchArgs, UsageError, type BenchOptions } from '../../../bench/args.js';
import { BENCH_CHARTS } from '../../../bench/charts.js';
import { BENCH_OUTPUTS } from '../../../bench/contenders.js';
import { parseWatches } from '../../../src/config/watches.js';
import { stringify } from 'yaml';

function options(argv: string[]): BenchOptions {
  const o = parseBenchArgs(argv);
  assert.ok(o !== undefined, 'expected options, got --help');
  return o;
}

describe('bench arguments: --chart', () => {
  it('defaults to charts/webapp, the chart every earlier run used', () => {
    assert.equal(options([]).chart, 'webapp');
    assert.equal(options(['--smoke']).chart, 'webapp');
  });

  it('takes webapp or podinfo, in either flag form, alongside the other flags', () => {
    assert.equal(options(['--chart', 'podinfo']).chart, 'podinfo');
    assert.equal(options(['--chart=webapp']).chart, 'webapp');
    const o = options(['--chart', 'podinfo', '--n', '1000', '--concurrency', '10', '--contenders', 'chartpilot', '--chart-source', 'oci']);
    assert.deepEqual([o.chart, o.n, o.concurrency, o.contenders, o.chartSource], ['podinfo', 1000, 10, ['chartpilot'], 'oci']);
  });

  it('refuses any other chart, naming the known ones', () => {
    for (const bad of ['nginx', 'Podinfo', '', 'charts/webapp']) {
      assert.throws(() => parseBenchArgs(['--chart', bad]), (err: unknown) =>
        err instanceof UsageError && err.message === `--chart must be one of webapp, podinfo, configmap, got ${JSON.stringify(bad)}`, bad);
    }
    assert.throws(() => parseBenchArgs(['--chart']), UsageError);
  });

  it('gives each chart its own CRD kinds and an upgrade spec that differs from the create spec', () => {
    assert.deepEqual(Object.values(BENCH_CHARTS).map((c) => c.kindPrefix), ['WebApp', 'Podinfo', 'Config']);
    for (const c of Object.values(BENCH_CHARTS)) assert.notDeepEqual(c.specs.upgrade, c.specs.create, c.name);
    assert.deepEqual(BENCH_CHARTS.podinfo.specs.create, { replicaCount: 1, ui: { message: 'bench revision 1' } });
    assert.deepEqual(BENCH_CHARTS.podinfo.specs.upgrade, { replicaCount: 1, ui: { message: 'bench revision 2' } });
  });
});

describe('bench arguments: --contenders', () => {
  it('runs floor, operator-sdk and chartpilot by default; floor-postrender only when named', () => {
    assert.deepEqual(options([]).contenders, ['floor', 'operator-sdk', 'chartpilot']);
    assert.deepEqual(options(['--contenders', 'floor,floor-postrender,chartpilot']).contenders, ['floor', 'floor-postrender', 'chartpilot']);
  });

  it('refuses an unknown contender, naming the known ones', () => {
    assert.throws(() => parseBenchArgs(['--contenders', 'floor,flux']), (err: unknown) =>
      err instanceof UsageError && err.message === 'unknown contender "flux" (known: floor, floor-postrender, operator-sdk, chartpilot)');
  });
});

describe('bench arguments: --scenarios', () => {
  it('runs create, upgrade, idle and delete by default; restart only when named, after create', () => {
    assert.deepEqual(options([]).scenarios, ['create', 'upgrade', 'idle', 'delete']);
    assert.deepEqual(options(['--scenarios', 'create,restart']).scenarios, ['create', 'restart']);
    assert.deepEqual(options(['--scenarios', 'create, upgrade ,restart,delete']).scenarios, ['create', 'upgrade', 'restart', 'delete']);
  });

  it('refuses an unknown scenario, one named twice, or a list that does not start with create', () => {
    assert.throws(() => parseBenchArgs(['--scenarios', 'create,failover']), (err: unknown) =>
      err instanceof UsageError && err.message === 'unknown scenario "failover" (known: create, upgrade, idle, delete, restart, reference-change)');
    for (const bad of ['restart', 'upgrade,create', 'create,restart,restart', '']) {
      assert.throws(() => parseBenchArgs(['--scenarios', bad]), (err: unknown) =>
        err instanceof UsageError && err.message.startsWith('--scenarios must start with create'), bad);
    }
  });
});

describe('bench arguments: --replicas', () => {
  it('runs one chartpilot process by default; --replicas R shares the CRs among R (run --shards)', () => {
    assert.equal(options([]).replicas, 1);
    assert.equal(options(['--replicas', '3', '--contenders', 'chartpilot']).replicas, 3);
    assert.throws(() => parseBenchArgs(['--replicas', '0']), (err: unknown) => err instanceof UsageError && err.message === '--replicas must be an integer ≥ 1, got "0"');
  });

  it("passes --helm-workers W to chartpilot only when given (else chartpilot's own default)", () => {
    assert.equal(options([]).helmWorkers, undefined);
    assert.equal(options(['--helm-workers', '4']).helmWorkers, 4);
    assert.throws(() => parseBenchArgs(['--helm-workers', '0']), (err: unknown) => err instanceof UsageError && err.message === '--helm-workers must be an integer ≥ 1, got "0"');
  });
});

describe('bench arguments: --values-from-secrets', () => {
  it('is chartpilot only, and the reference-change scenario needs it', () => {
    assert.equal(parseBenchArgs(['--contenders', 'chartpilot', '--values-from-secrets', '10'])?.valuesFromSecrets, 10);
    assert.throws(() => parseBenchArgs(['--values-from-secrets', '10']), /--values-from-secrets is chartpilot's valuesFrom/);
    assert.throws(() => parseBenchArgs(['--contenders', 'chartpilot', '--scenarios', 'create,reference-change']), /reference-change scenario needs --values-from-secrets/);
    assert.equal(parseBenchArgs(['--contenders', 'chartpilot', '--values-from-secrets', '4', '--scenarios', 'create,reference-change'])?.scenarios.at(-1), 'reference-change');
  });
});

describe('bench arguments: --outputs', () => {
  it('is chartpilot only, over the configmap chart, and its outputs load as the operator loads them', async () => {
    assert.equal(options(['--contenders', 'chartpilot', '--chart', 'configmap', '--outputs']).outputs, true);
    assert.equal(options(['--contenders', 'chartpilot', '--chart', 'configmap']).outputs, false);
    assert.throws(() => parseBenchArgs(['--chart', 'configmap', '--outputs']), /--outputs is chartpilot's outputs over the configmap chart/);
    assert.throws(() => parseBenchArgs(['--contenders', 'chartpilot', '--outputs']), /--outputs is chartpilot's outputs over the configmap chart/);
    const loaded = await parseWatches(stringify([{ group: 'bench.example.com', version: 'v1', kind: 'Bench', chart: 'chart', outputs: BENCH_OUTPUTS }]), '/bench', {}, () => Promise.resolve(undefined));
    assert.ok(loaded.ok, loaded.ok ? '' : loaded.problems.join('\n'));
    assert.deepEqual(loaded.entries[0]?.status?.outputs.map((o) => o.name), Object.keys(BENCH_OUTPUTS));
  });
});
