import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { countSeries, metricsPortOf, summarizeProbe, type Scrape } from '../../../bench/metrics-probe.js';
import { OperatorMetrics } from '../../../src/observe/metrics.js';

const T0 = '2026-03-01T10:00:00Z';

/** The operator's real registry with `n` Deployed and Ready CRs, as the bench's scrape sees it (every CR's series: --resource-metrics all). */
async function exposition(n: number): Promise<string> {
  const m = new OperatorMetrics({ build: { version: '1' }, defaultMetrics: false, resourceDetail: 'all' });
  for (let i = 0; i < n; i++) {
    const ref = { kind: 'ConfigChartpilot', namespace: 'bench-chartpilot', name: `web-${String(i).padStart(4, '0')}` };
    m.resourcePresent({ ...ref, group: 'bench.chartpilot.io', version: 'v1', createdAt: T0 });
    m.resourceStatus(ref, {
      conditions: [
        { type: 'Deployed', status: 'True', lastTransitionTime: T0 },
        { type: 'Ready', status: 'True', lastTransitionTime: T0 },
      ],
      deployedRelease: { name: ref.name, revision: 2, chart: 'configmap', version: '0.1.0', appVersion: '1', deployedAt: T0 },
    });
  }
  return (await m.render()).body;
}

describe('bench /metrics probe: counting series', () => {
  it('counts the per-CR series of the operator\'s own exposition: 6 chartpilot_* and resource_created_at_seconds per CR', async () => {
    const none = countSeries(await exposition(0));
    const text = await exposition(25);
    const c = countSeries(text);
    assert.equal(c.crs, 25);
    assert.equal(c.chartpilotCrSeries, 25 * 6);
    assert.equal(c.crSeries, 25 * 7);
    // Everything else does not grow with the CRs: with none, the registry's fixed series; with
    // some, also the two aggregates (one kind, namespace and Ready status; one chart version).
    assert.equal(c.series - c.crSeries, none.series + 2);
    assert.equal(c.series, text.split('\n').filter((l) => l !== '' && !l.startsWith('#')).length);
    assert.ok(c.chartpilotSeries >= c.chartpilotCrSeries);
  });

  it('counts a series as a CR\'s only with kind, namespace and name; the queue\'s name label is not a CR', () => {
    const text = [
      '# HELP chartpilot_workqueue_lane_depth Depth per lane',
      '# TYPE chartpilot_workqueue_lane_depth gauge',
      'chartpilot_workqueue_lane_depth{name="cr",lane="change"} 0',
      'chartpilot_resource_condition{kind="A",namespace="n",name="x",type="Ready",status="True"} 1',
      'chartpilot_release_info{kind="A",namespace="n",name="x",chart="c",chart_version="1",app_version="say \\"hi\\", {ok}"} 1',
      'chartpilot_release_info{kind="A",namespace="m",name="x",chart="c",chart_version="1",app_version=""} 1 1700000000000',
      'resource_created_at_seconds{name="x",namespace="n",group="g",version="v1",kind="A"} 1.7e9',
      'process_cpu_seconds_total 3.5',
      'chartpilot_helm_call_duration_seconds_bucket{action="install",le="+Inf"} 4',
      '',
    ].join('\n');
    assert.deepEqual(countSeries(text), { series: 7, chartpilotSeries: 5, chartpilotCrSeries: 3, crSeries: 4, crs: 2 });
  });

  it('counts nothing in an empty or non-metrics body', () => {
    assert.deepEqual(countSeries(''), { series: 0, chartpilotSeries: 0, chartpilotCrSeries: 0, crSeries: 0, crs: 0 });
    assert.equal(countSeries('<html>Unauthorized</html>\n').series, 0);
  });
});

describe('bench /metrics probe: the summary', () => {
  const scrape = (ms: number, status = 200, bytes = 1000): Scrape => ({ status, ms, bytes });

  it('reports median and max over the answered scrapes, the first apart, per-CR series over N and CPU per scrape', () => {
    const counts = { series: 7100, chartpilotSeries: 6050, chartpilotCrSeries: 6000, crSeries: 7000, crs: 1000 };
    const p = summarizeProbe([scrape(400), scrape(50), scrape(30), scrape(60), scrape(40, 200, 800_000)], counts, 1000, { scraping: 0.25, quiet: 0.05 });
    assert.equal(p.scrapes, 5);
    assert.equal(p.ok, 5);
    assert.equal(p.medianMs, 50);
    assert.equal(p.maxMs, 400);
    assert.equal(p.firstMs, 400);
    assert.equal(p.bytes, 800_000);
    assert.equal(p.chartpilotSeriesPerCr, 6);
    assert.equal(p.seriesPerCr, 7);
    assert.equal(p.crsSeen, 1000);
    assert.equal(p.operatorCpuMsPerScrape, 50);
    assert.equal(p.operatorCpuMsPerScrapeNet, 40);
    assert.equal(p.error, undefined);
  });

  it('does not report a negative net CPU when the quiet window cost more than the scrapes', () => {
    const p = summarizeProbe([scrape(10), scrape(10)], undefined, 1, { scraping: 0.02, quiet: 0.03 });
    assert.equal(p.operatorCpuMsPerScrape, 10);
    assert.equal(p.operatorCpuMsPerScrapeNet, 0);
  });

  it('leaves refused scrapes out of the times and names the first refusal', () => {
    const p = summarizeProbe([scrape(5, 401, 0), scrape(20), scrape(10)], undefined, 10, { scraping: 0.01, quiet: 0 });
    assert.equal(p.ok, 2);
    assert.equal(p.medianMs, 10);
    assert.equal(p.maxMs, 20);
    assert.equal(p.error, 'GET /metrics answered 401');
  });

  it('has no figure, and no NaN for the results file, when nothing was answered', () => {
    const p = summarizeProbe([], undefined, 1000, { scraping: Number.NaN, quiet: Number.NaN }, 'the TokenRequest returned no token');
    assert.equal(p.ok, 0);
    assert.equal(p.medianMs, null);
    assert.equal(p.maxMs, null);
    assert.equal(p.chartpilotSeriesPerCr, null);
    assert.equal(p.operatorCpuMsPerScrape, null);
    assert.equal(p.operatorCpuMsPerScrapeNet, null);
    assert.equal(p.error, 'the TokenRequest returned no token');
    assert.doesNotMatch(JSON.stringify(p), /NaN/);
  });

  it('reads the bound port from the operator\'s log line', () => {
    const line = JSON.stringify({ level: 30, msg: 'metrics server listening', address: '127.0.0.1:40123', scheme: 'https' });
    assert.equal(metricsPortOf(line), 40123);
    assert.equal(metricsPortOf(JSON.stringify({ msg: 'metrics server listening', address: '[::1]:8443' })), 8443);
    assert.equal(metricsPortOf(undefined), undefined);
    assert.equal(metricsPortOf('not json'), undefined);
  });
});
