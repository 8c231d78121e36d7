import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { OperatorMetrics } from '../../../src/observe/metrics.js';
import { residentBytesOf } from '../../../src/observe/process-memory.js';
import { DEFAULT_TIMEOUTS } from '../../../src/observe/http-server.js';
import { startMetricsServer } from '../../../src/observe/metrics-server.js';

/** The value of one sample line, e.g. `name{a="b"}`, from the text exposition. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('OperatorMetrics', () => {
  it('exposes every reconcile result at zero once a controller is registered', async () => {
    const m = new OperatorMetrics({ build: { version: '1.2.3' }, defaultMetrics: false });
    m.registerController('nginx');
    m.maxConcurrentReconciles('nginx', 4);
    const { body } = await m.render();
    for (const result of ['success', 'error', 'requeue', 'requeue_after']) {
      assert.equal(sample(body, `controller_runtime_reconcile_total{controller="nginx",result="${result}"}`), 0, result);
    }
    assert.equal(sample(body, 'controller_runtime_reconcile_errors_total{controller="nginx"}'), 0);
    assert.equal(sample(body, 'controller_runtime_max_concurrent_reconciles{controller="nginx"}'), 4);
    assert.equal(sample(body, 'controller_runtime_active_workers{controller="nginx"}'), 0);
    assert.equal(sample(body, 'helm_operator_build_info{commit="",version="1.2.3"}'), 1);
  });

  it('counts Ansible runs as ansible-operator labels them, and by trigger', async () => {
    const m = new OperatorMetrics({ build: { version: '1' }, defaultMetrics: false });
    const gvk = 'cache.example.com/v1alpha1, Kind=Memcached';
    m.ansibleRun(gvk, { trigger: 'first', succeeded: true, seconds: 2.5 });
    m.ansibleRun(gvk, { trigger: 'drift', succeeded: false, seconds: 1 });
    m.ansibleRun(gvk, { trigger: 'drift', succeeded: true, seconds: 1 });
    const { body } = await m.render();
    assert.equal(sample(body, `ansible_operator_reconcile_result{GVK="${gvk}",result="succeeded"}`), 2);
    assert.equal(sample(body, `ansible_operator_reconcile_result{GVK="${gvk}",result="failed"}`), 1);
    assert.equal(sample(body, `ansible_operator_reconciles_count{GVK="${gvk}"}`), 3);
    assert.equal(sample(body, `ansible_operator_reconciles_sum{GVK="${gvk}"}`), 4.5);
    assert.equal(sample(body, `chartpilot_ansible_runs_total{GVK="${gvk}",trigger="drift",result="failed"}`), 1);
  });

  it('exports resource_created_at_seconds per watched CR and drops it when the CR goes', async () => {
    const m = new OperatorMetrics({ build: { version: '1' }, defaultMetrics: false });
    const web = { group: 'cache.example.com', version: 'v1alpha1', kind: 'Memcached', namespace: 'shop', name: 'web', createdAt: '2026-01-02T03:04:05Z' };
    const series = 'resource_created_at_seconds{name="web",namespace="shop",group="cache.example.com",version="v1alpha1",kind="Memcached"}';
    m.resourcePresent(web);
    m.resourcePresent({ ...web, name: 'cluster-wide', namespace: undefined, createdAt: undefined });
    let { body } = await m.render();
    assert.equal(sample(body, series), Date.parse('2026-01-02T03:04:05Z') / 1000);
    assert.equal(sample(body, 'resource_created_at_seconds{name="cluster-wide",namespace="",group="cache.example.com",version="v1alpha1",kind="Memcached"}'), 0);
    m.resourceGone(web);
    ({ body } = await m.render());
    assert.equal(sample(body, series), undefined);
    assert.match(body, /name="cluster-wide"/);
  });

  it('counts reconciles, errors and their durations per controller', async () => {
    const m = new OperatorMetrics({ build: { version: '1', commit: 'abc' }, defaultMetrics: false });
    m.reconciled('nginx', 'requeue_after', 120);
    m.reconciled('nginx', 'error', 3_000);
    m.reconciled('redis', 'success', 10);
    const { body } = await m.render();
    assert.equal(sample(body, 'controller_runtime_reconcile_total{controller="nginx",result="requeue_after"}'), 1);
    assert.equal(sample(body, 'controller_runtime_reconcile_total{controller="nginx",result="error"}'), 1);
    assert.equal(sample(body, 'controller_runtime_reconcile_errors_total{controller="nginx"}'), 1);
    assert.equal(sample(body, 'controller_runtime_reconcile_total{controller="redis",result="success"}'), 1);
    assert.equal(sample(body, 'controller_runtime_reconcile_time_seconds_count{controller="nginx"}'), 2);
    assert.equal(sample(body, 'controller_runtime_reconcile_time_seconds_sum{controller="nginx"}'), 3.12);
    assert.equal(sample(body, 'controller_runtime_reconcile_time_seconds_bucket{le="0.15",controller="nginx"}'), 1);
    assert.equal(sample(body, 'helm_operator_build_info{commit="abc",version="1"}'), 1);
  });

  it('turns work queue hooks into workqueue_* series and active workers', async () => {
    const m = new OperatorMetrics({ build: { version: '1' }, defaultMetrics: false });
    const q = m.queueMetrics('nginx');
    q.onAdd?.('ns/a');
    q.onAdd?.('ns/b');
    q.onDepth?.(2);
    q.onQueueLatency?.(5);
    q.onQueueLatency?.(7);
    q.onDepth?.(0);
    q.onWorkDuration?.(1500);
    q.onRetry?.('ns/a');
    const { body } = await m.render();
    assert.equal(sample(body, 'workqueue_adds_total{name="nginx"}'), 2);
    assert.equal(sample(body, 'workqueue_depth{name="nginx"}'), 0);
    assert.equal(sample(body, 'workqueue_retries_total{name="nginx"}'), 1);
    assert.equal(sample(body, 'workqueue_queue_duration_seconds_count{name="nginx"}'), 2);
    assert.equal(sample(body, 'workqueue_work_duration_seconds_sum{name="nginx"}'), 1.5);
    assert.equal(sample(body, 'controller_runtime_active_workers{controller="nginx"}'), 1, 'two taken, one finished');
  });

  it('counts helm calls by action, outcome and error kind, and API requests by method and code', async () => {
    const m = new OperatorMetrics({ build: { version: '1' }, defaultMetrics: false });
    m.helmCall({ action: 'upgrade', release: 'r', namespace: 'n', durationMs: 2_000, outcome: 'success' });
    m.helmCall({ action: 'upgrade', release: 'r', namespace: 'n', durationMs: 100, outcome: 'error', errorKind: 'timeout' });
    m.kubeRequest('GET', 200, 3);
    m.kubeRequest('GET', 200, 4);
    m.kubeRequest('PUT', 409, 4);
    m.kubeRequest('WATCH', 0, 4);
    const { body } = await m.render();
    assert.equal(sample(body, 'chartpilot_helm_calls_total{action="upgrade",outcome="success",error_kind=""}'), 1);
    assert.equal(sample(body, 'chartpilot_helm_calls_total{action="upgrade",outcome="error",error_kind="timeout"}'), 1);
    assert.equal(sample(body, 'chartpilot_helm_call_duration_seconds_count{action="upgrade"}'), 2);
    assert.equal(sample(body, 'chartpilot_kube_requests_total{method="GET",code="200"}'), 2);
    assert.equal(sample(body, 'chartpilot_kube_requests_total{method="PUT",code="409"}'), 1);
    assert.equal(sample(body, 'chartpilot_kube_requests_total{method="WATCH",code="<error>"}'), 1);
    assert.ok(!body.includes('release="r"'), 'no per-release labels: cardinality stays bounded');
  });

  it('reports leadership per lease', async () => {
    const m = new OperatorMetrics({ build: { version: '1' }, defaultMetrics: false });
    m.leader('chartpilot-abc', false);
    assert.equal(sample((await m.render()).body, 'leader_election_master_status{name="chartpilot-abc"}'), 0);
    m.leader('chartpilot-abc', true);
    assert.equal(sample((await m.render()).body, 'leader_election_master_status{name="chartpilot-abc"}'), 1);
  });

  it('reports how many releases the keeper holds at each scrape', async () => {
    const m = new OperatorMetrics({ build: { version: '1' }, defaultMetrics: false });
    let releases = 5;
    m.releaseKeeper(() => releases);
    assert.equal(sample((await m.render()).body, 'chartpilot_release_keeper_releases'), 5);
    releases = 2;
    assert.equal(sample((await m.render()).body, 'chartpilot_release_keeper_releases'), 2);
  });

  it('reports what the dependent caches hold at each scrape', async () => {
    const m = new OperatorMetrics({ build: { version: '1' }, defaultMetrics: false });
    let stats = { owned: 12, unbucketed: 3, buckets: 341, swaps: 0 };
    m.dependentCaches(() => stats);
    let body = (await m.render()).body;
    assert.equal(sample(body, 'chartpilot_dependent_cached_objects{watch="owned"}'), 12);
    assert.equal(sample(body, 'chartpilot_dependent_cached_objects{watch="unbucketed"}'), 3);
    assert.equal(sample(body, 'chartpilot_dependent_watch_buckets'), 341);
    assert.equal(sample(body, 'chartpilot_dependent_watch_swaps_total'), 0);
    stats = { owned: 9, unbucketed: 0, buckets: 256, swaps: 2 };
    body = (await m.render()).body;
    assert.equal(sample(body, 'chartpilot_dependent_cached_objects{watch="owned"}'), 9);
    assert.equal(sample(body, 'chartpilot_dependent_watch_buckets'), 256);
    assert.equal(sample(body, 'chartpilot_dependent_watch_swaps_total'), 2);
  });

  it('reports the helm engine at each scrape: its resident memory as /proc says, calls in flight, starts', async () => {
    const m = new OperatorMetrics({ build: { version: '1' }, defaultMetrics: false });
    let stats: { pid: number | undefined; inFlight: number; starts: number } = { pid: process.pid, inFlight: 3, starts: 1 };
    m.helmEngine(() => stats, residentBytesOf);
    let body = (await m.render()).body;
    const rss = sample(body, 'chartpilot_helm_engine_resident_memory_bytes') ?? 0;
    // This process stands in for the engine: what /proc says, within what it grew meanwhile.
    assert.ok(Math.abs(rss - process.memoryUsage.rss()) < 64 * 1024 * 1024, `${String(rss)} vs ${String(process.memoryUsage.rss())}`);
    assert.equal(sample(body, 'chartpilot_helm_engine_calls_in_flight'), 3);
    assert.equal(sample(body, 'chartpilot_helm_engine_starts_total'), 1);
    stats = { pid: undefined, inFlight: 0, starts: 2 };
    body = (await m.render()).body;
    assert.equal(sample(body, 'chartpilot_helm_engine_resident_memory_bytes'), 0, 'no engine, no memory');
    assert.equal(sample(body, 'chartpilot_helm_engine_starts_total'), 2);
    assert.equal(residentBytesOf(2 ** 22 + 1), 0, 'a pid that is no process');
  });

  it('keeps separate registries per instance and includes process metrics by default', async () => {
    const a = new OperatorMetrics({ build: { version: 'a' } });
    const b = new OperatorMetrics({ build: { version: 'b' } });
    a.reconciled('x', 'success', 1);
    const body = (await b.render()).body;
    assert.equal(sample(body, 'controller_runtime_reconcile_total{controller="x",result="success"}'), undefined);
    assert.match(body, /^process_cpu_seconds_total /m);
    assert.match(body, /^process_resident_memory_bytes /m);
    assert.match(body, /^nodejs_heap_size_used_bytes /m);
  });
});

describe('metrics server', () => {
  const m = new OperatorMetrics({ build: { version: '9' }, defaultMetrics: false });
  const started = startMetricsServer({ host: '127.0.0.1', port: 0, text: '127.0.0.1:0' }, m, { maxConnections: 8, maxPerPeer: 8, timeouts: DEFAULT_TIMEOUTS });
  after(async () => {
    await (await started).close();
  });

  it('serves the text exposition on /metrics at the bound port', async () => {
    const server = await started;
    assert.match(server.address, /^127\.0\.0\.1:\d+$/);
    assert.notEqual(server.port, 0);
    const res = await fetch(`http://${server.address}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    assert.match(await res.text(), /^helm_operator_build_info\{commit="",version="9"\} 1$/m);
  });

  it('answers 404 elsewhere and 405 to writes', async () => {
    const server = await started;
    assert.equal((await fetch(`http://${server.address}/`)).status, 404);
    assert.equal((await fetch(`http://${server.address}/metrics`, { method: 'POST' })).status, 405);
  });
});
