import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OperatorMetrics, registryOutcome } from '../../../src/observe/metrics.js';
import { DEFAULT_TIMEOUTS } from '../../../src/observe/http-server.js';
import { startMetricsServer } from '../../../src/observe/metrics-server.js';
import { resourceStateOf } from '../../../src/observe/resource-state.js';

/** The value of one sample line, e.g. `name{a="b"}`, from the text exposition. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** Sample lines (not comments) that carry `name="<name>"` — one CR's series when names are unique. */
function seriesOf(text: string, namespace: string, name: string): string[] {
  return text.split('\n').filter((l) => !l.startsWith('#') && l.includes(`namespace="${namespace}"`) && l.includes(`name="${name}"`));
}

const T0 = '2026-03-01T10:00:00Z';
const T1 = '2026-03-01T11:30:00Z';

function failedStatus(): unknown {
  return {
    observedGeneration: 2,
    conditions: [
      { type: 'Initialized', status: 'True', reason: 'Initialized', message: '', lastTransitionTime: T0 },
      { type: 'Deployed', status: 'True', reason: 'InstallSuccessful', message: 'notes with a secret value', lastTransitionTime: T0 },
      { type: 'ReleaseFailed', status: 'True', reason: 'UpgradeError', message: 'helm said: password=hunter2', lastTransitionTime: T1 },
      { type: 'Ready', status: 'False', reason: 'DeploymentNotAvailable', message: 'Deployment web: 0/1', lastTransitionTime: T1 },
    ],
    deployedRelease: { name: 'web', namespace: 'shop', revision: 3, chart: 'webapp', version: '1.4.2', appVersion: '2.0', deployedAt: T0 },
  };
}

const web = { kind: 'WebApp', namespace: 'shop', name: 'web' };
const created = { group: 'demo.example.com', version: 'v1', kind: 'WebApp', namespace: 'shop', name: 'web', createdAt: T0 };

/** `n` CRs in 50 namespaces, Deployed, every tenth not Ready (Initialized too: a type not exported). */
function fleetOf(m: OperatorMetrics, n: number): void {
  for (let i = 0; i < n; i++) {
    const ref = { kind: 'WebApp', namespace: `team-${i % 50}`, name: `app-${i}` };
    m.resourcePresent({ ...created, namespace: ref.namespace, name: ref.name });
    m.resourceStatus(ref, {
      conditions: [
        { type: 'Initialized', status: 'True', lastTransitionTime: T0 },
        { type: 'Deployed', status: 'True', lastTransitionTime: T0 },
        { type: 'Ready', status: i % 10 === 0 ? 'False' : 'True', lastTransitionTime: T1 },
      ],
      deployedRelease: { name: ref.name, revision: 1 + (i % 3), chart: 'webapp', version: '1.4.2', appVersion: '2.0', deployedAt: T1 },
    });
  }
}

describe('per-CR series', () => {
  it('exports each condition with its status, the release and the timestamps, and nothing of messages or values', async () => {
    const m = new OperatorMetrics({ build: { version: '1' }, defaultMetrics: false });
    m.resourceStatus(web, failedStatus());
    const { body } = await m.render();
    const l = 'kind="WebApp",namespace="shop",name="web"';
    assert.equal(sample(body, `chartpilot_resource_condition{${l},type="ReleaseFailed",status="True"}`), 1);
    assert.equal(sample(body, `chartpilot_resource_condition{${l},type="Deployed",status="True"}`), 1);
    assert.equal(sample(body, `chartpilot_resource_condition{${l},type="Ready",status="False"}`), 1);
    // Initialized is not one of the exported types; absent conditions have no series.
    assert.doesNotMatch(body, /type="Initialized"/);
    assert.doesNotMatch(body, /type="Paused"/);
    assert.equal(sample(body, `chartpilot_release_info{${l},chart="webapp",chart_version="1.4.2",app_version="2.0"}`), 1);
    assert.equal(sample(body, `chartpilot_release_revision{${l}}`), 3);
    assert.equal(sample(body, `chartpilot_release_last_deployed_timestamp_seconds{${l}}`), Date.parse(T0) / 1000);
    assert.equal(sample(body, `chartpilot_resource_ready_transition_timestamp_seconds{${l}}`), Date.parse(T1) / 1000);
    assert.doesNotMatch(body, /hunter2|secret value|UpgradeError|DeploymentNotAvailable/);
  });

  it('moves a condition to its new status without leaving the old one behind, and follows a new revision', async () => {
    const m = new OperatorMetrics({ build: { version: '1' }, defaultMetrics: false, resourceDetail: 'all' });
    m.resourceStatus(web, failedStatus());
    m.resourceStatus(web, {
      conditions: [
        { type: 'Deployed', status: 'True', reason: 'UpgradeSuccessful', message: '', lastTransitionTime: T0 },
        { type: 'Ready', status: 'True', reason: 'AllResourcesReady', message: '', lastTransitionTime: T1 },
      ],
      deployedRelease: { name: 'web', revision: 4, chart: 'webapp', version: '1.5.0', appVersion: '2.1', deployedAt: T1 },
    });
    const { body } = await m.render();
    const l = 'kind="WebApp",namespace="shop",name="web"';
    assert.equal(sample(body, `chartpilot_resource_condition{${l},type="Ready",status="True"}`), 1);
    assert.equal(sample(body, `chartpilot_resource_condition{${l},type="Ready",status="False"}`), undefined);
    assert.equal(sample(body, `chartpilot_resource_condition{${l},type="ReleaseFailed",status="True"}`), undefined);
    assert.equal(sample(body, `chartpilot_release_info{${l},chart="webapp",chart_version="1.4.2",app_version="2.0"}`), undefined);
    assert.equal(sample(body, `chartpilot_release_info{${l},chart="webapp",chart_version="1.5.0",app_version="2.1"}`), 1);
    assert.equal(sample(body, `chartpilot_release_revision{${l}}`), 4);
    assert.equal(sample(body, `chartpilot_release_last_deployed_timestamp_seconds{${l}}`), Date.parse(T1) / 1000);
  });

  it('removes every series of a CR, drift repairs included, when it goes', async () => {
    const m = new OperatorMetrics({ build: { version: '1' }, defaultMetrics: false });
    const other = { ...web, name: 'other' };
    m.resourcePresent(created);
    m.resourceStatus(web, failedStatus());
    m.resourceStatus(other, failedStatus());
    m.driftRepaired(web, 'Deployment');
    m.driftRepaired(web, 'Deployment');
    m.driftRepaired(web, 'ConfigMap');
    let { body } = await m.render();
    assert.equal(sample(body, 'chartpilot_drift_repairs_total{kind="WebApp",namespace="shop",name="web",object_kind="Deployment"}'), 2);
    assert.equal(sample(body, 'chartpilot_drift_repairs_total{kind="WebApp",namespace="shop",name="web",object_kind="ConfigMap"}'), 1);
    m.resourceGone(created);
    ({ body } = await m.render());
    assert.deepEqual(seriesOf(body, 'shop', 'web'), []);
    assert.ok(seriesOf(body, 'shop', 'other').length > 0, 'a neighbour keeps its series');
  });

  it('by default exports per-CR series only for CRs that need attention, and counts every CR in the aggregates', async () => {
    const m = new OperatorMetrics({ build: { version: '1' }, defaultMetrics: false });
    const healthy = (revision: number, version: string): unknown => ({
      conditions: [
        { type: 'Deployed', status: 'True', reason: 'UpgradeSuccessful', message: '', lastTransitionTime: T0 },
        { type: 'Reconciling', status: 'False', reason: 'Succeeded', message: '', lastTransitionTime: T1 },
        { type: 'Ready', status: 'True', reason: 'AllResourcesReady', message: '', lastTransitionTime: T1 },
      ],
      deployedRelease: { name: 'x', revision, chart: 'webapp', version, appVersion: '2.0', deployedAt: T1 },
    });
    const fine = { ...web, name: 'fine' };
    const paused = { ...web, name: 'paused' };
    const fresh = { ...web, name: 'fresh' };
    m.resourceStatus(web, failedStatus());
    m.resourceStatus(fine, healthy(2, '1.4.2'));
    m.resourceStatus(paused, { conditions: [{ type: 'Ready', status: 'True' }, { type: 'Paused', status: 'True' }] });
    m.resourceStatus(fresh, undefined);
    let { body } = await m.render();
    assert.ok(seriesOf(body, 'shop', 'web').length >= 5, 'a failed CR keeps its per-CR series (the alerts read them)');
    assert.ok(seriesOf(body, 'shop', 'paused').length > 0, 'a paused CR has its series');
    assert.deepEqual(seriesOf(body, 'shop', 'fine'), [], 'a Ready CR with nothing wrong has no per-CR series');
    assert.deepEqual(seriesOf(body, 'shop', 'fresh'), []);
    assert.equal(sample(body, 'chartpilot_resources{kind="WebApp",namespace="shop",ready="True"}'), 2);
    assert.equal(sample(body, 'chartpilot_resources{kind="WebApp",namespace="shop",ready="False"}'), 1);
    assert.equal(sample(body, 'chartpilot_resources{kind="WebApp",namespace="shop",ready="None"}'), 1);
    assert.equal(sample(body, 'chartpilot_releases{kind="WebApp",chart="webapp",chart_version="1.4.2"}'), 2);

    // The failed one heals, the healthy one starts failing: the series follow, the counts move.
    m.resourceStatus(web, healthy(4, '1.5.0'));
    m.resourceStatus(fine, { ...(healthy(2, '1.4.2') as object), conditions: [{ type: 'Ready', status: 'False', lastTransitionTime: T1 }] });
    ({ body } = await m.render());
    assert.deepEqual(seriesOf(body, 'shop', 'web'), [], 'healed: its series are gone');
    assert.ok(seriesOf(body, 'shop', 'fine').some((l) => l.includes('type="Ready",status="False"')));
    assert.equal(sample(body, 'chartpilot_releases{kind="WebApp",chart="webapp",chart_version="1.5.0"}'), 1);
    assert.equal(sample(body, 'chartpilot_releases{kind="WebApp",chart="webapp",chart_version="1.4.2"}'), 1);

    // Gone: out of the counts; a count that reaches 0 leaves no series at 0 behind.
    m.resourceGone({ ...created, name: 'fresh' });
    m.resourceGone({ ...created, name: 'web' });
    ({ body } = await m.render());
    assert.equal(sample(body, 'chartpilot_resources{kind="WebApp",namespace="shop",ready="None"}'), undefined);
    assert.equal(sample(body, 'chartpilot_releases{kind="WebApp",chart="webapp",chart_version="1.5.0"}'), undefined);
    assert.equal(sample(body, 'chartpilot_resources{kind="WebApp",namespace="shop",ready="True"}'), 1);
  });

  it('an upgrade of a Ready CR (Reconciling=True) creates no per-CR series', async () => {
    const m = new OperatorMetrics({ build: { version: '1' }, defaultMetrics: false });
    m.resourceStatus(web, { conditions: [{ type: 'Ready', status: 'True' }, { type: 'Reconciling', status: 'True' }, { type: 'Deployed', status: 'True' }] });
    assert.deepEqual(seriesOf((await m.render()).body, 'shop', 'web'), []);
  });

  it('by default, 1000 CRs of which a tenth are not Ready cost 1.7 series per CR', async () => {
    const m = new OperatorMetrics({ build: { version: '1' }, defaultMetrics: false });
    const empty = (await m.render()).body.split('\n').filter((l) => l !== '' && !l.startsWith('#')).length;
    const n = 1000;
    fleetOf(m, n);
    const lines = (await m.render()).body.split('\n').filter((l) => l !== '' && !l.startsWith('#')).length;
    // Every CR: resource_created_at_seconds; the 100 not Ready: Deployed, Ready, info, revision, two
    // timestamps (6 each); aggregates: 50 chartpilot_resources (team-0, -10, … -40 hold only the
    // CRs not Ready, the other 45 namespaces only Ready ones) and 1 chartpilot_releases.
    assert.equal(lines - empty, n + 100 * 6 + 50 + 1);
  });

  it('reads an Ansible kind\'s conditions and its last successful run', () => {
    const s = resourceStateOf({
      conditions: [
        { type: 'Running', status: 'False', reason: 'Successful', lastTransitionTime: T0 },
        { type: 'Successful', status: 'True', reason: 'Successful', lastTransitionTime: T0 },
        { type: 'Ready', status: 'True', reason: 'AllResourcesReady', lastTransitionTime: T1 },
      ],
      chartpilot: { inputs: 'abc', ranAt: T1, inventory: [] },
    });
    assert.deepEqual([...s.conditions], [
      ['Running', 'False'],
      ['Successful', 'True'],
      ['Ready', 'True'],
    ]);
    assert.equal(s.lastDeployedAt, Date.parse(T1) / 1000);
    assert.equal(s.release, undefined);
  });

  it('takes any status shape without throwing', () => {
    for (const status of [undefined, null, 'x', [], { conditions: 'no' }, { conditions: [null, 1, { type: 5 }] }, { deployedRelease: [] }]) {
      const s = resourceStateOf(status);
      assert.equal(s.conditions.size, 0);
    }
  });

  it('labels registry requests by outcome', () => {
    assert.deepEqual(
      [200, 304, 401, 403, 404, 429, 400, 502, 0].map(registryOutcome),
      ['ok', 'not_modified', 'unauthorized', 'unauthorized', 'not_found', 'rate_limited', 'client_error', 'server_error', 'unreachable'],
    );
  });

  // Cardinality and cost at 1000 CRs, measured on the registry alone (no HTTP, no cluster): the
  // figure docs/operations/monitoring.md and docs/architecture/performance.md report. The bound is generous for a shared 2-core CI machine.
  it('with --resource-metrics all: 7 series per CR, and GET /metrics with 1000 CRs answers well under a second', async () => {
    const m = new OperatorMetrics({ build: { version: '1' }, defaultMetrics: false, resourceDetail: 'all' });
    const n = 1000;
    fleetOf(m, n);
    // What a scrape waits for: GET /metrics on the operator's metrics server (plain HTTP on loopback).
    const server = await startMetricsServer({ host: '127.0.0.1', port: 0, text: '127.0.0.1:0' }, m, { maxConnections: 8, maxPerPeer: 8, timeouts: DEFAULT_TIMEOUTS });
    const wall: number[] = [];
    const cpu: number[] = [];
    let body = '';
    try {
      for (let i = 0; i < 7; i++) {
        const start = performance.now();
        const used = process.cpuUsage();
        const res = await fetch(`http://${server.address}/metrics`);
        body = await res.text();
        const spent = process.cpuUsage(used);
        wall.push(performance.now() - start);
        cpu.push((spent.user + spent.system) / 1000);
        assert.equal(res.status, 200);
      }
    } finally {
      await server.close();
    }
    const lines = body.split('\n').filter((l) => l !== '' && !l.startsWith('#')).length;
    const perCr = body.split('\n').filter((l) => l.includes('name="app-')).length / n;
    const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[3] ?? Number.NaN;
    // Deployed, Ready, info, revision, two timestamps: 6 (+ operator-sdk's resource_created_at_seconds).
    assert.equal(perCr, 7);
    // CPU time (server and client are this process), not wall time: on a shared machine the wall
    // clock says how busy the neighbours are.
    assert.ok(median(cpu) < 500, `GET /metrics with ${n} CRs took ${median(cpu).toFixed(1)} ms of CPU`);
    console.log(
      `# 1000 CRs: ${perCr} series per CR (6 chartpilot_* + resource_created_at_seconds), ${lines} sample lines, ${body.length} bytes; GET /metrics median ${median(wall).toFixed(1)} ms wall, ${median(cpu).toFixed(1)} ms CPU (max ${Math.max(...wall).toFixed(1)} ms wall)`,
    );
  });
});
