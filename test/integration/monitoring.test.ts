// Level 4 with a real Prometheus (Debian's package, devcluster/prometheus.ts): it scrapes the
// operator over HTTPS with a ServiceAccount token as docs/operations/monitoring.md says, loads the rules of
// `chartpilot generate monitoring --for 5s`, and is asked what an application's owner would ask.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { execa } from 'execa';
import { startPrometheus, type Prometheus, type Sample } from '../../devcluster/prometheus.js';
import type { DashboardPanel } from '../../src/generate/monitoring-dashboard.js';
import { Annotations } from '../../src/engines/helm/names.js';
import { condition, crsOf } from './crs.js';
import { BIN, fixtureChart } from './fixtures.js';
import type { TestCluster } from './harness.js';
import { serviceAccountToken } from './identity.js';
import { setUp } from './scenario.js';
import { scrapeHttps } from './scrape.js';
import { waitFor } from './wait.js';
import { freePort } from '../../devcluster/ports.js';

const JOB = 'chartpilot';

/** The real CLI, as a user runs it. */
async function generate(cluster: TestCluster, args: readonly string[]): Promise<string> {
  return (await execa(process.execPath, [BIN, 'generate', 'monitoring', ...args], { env: cluster.env })).stdout;
}

/** A reader of /metrics for Prometheus: a ServiceAccount bound to a ClusterRole allowing get /metrics (the generated metrics-reader). */
async function scraperToken(t: TestContext, cluster: TestCluster, ns: string): Promise<string> {
  const role = `${ns}-metrics-reader`;
  await cluster.kubectl(['create', 'serviceaccount', 'prometheus', '-n', ns]);
  await cluster.kubectl(['create', 'clusterrole', role, '--verb=get', '--non-resource-url=/metrics']);
  await cluster.kubectl(['create', 'clusterrolebinding', role, `--clusterrole=${role}`, `--serviceaccount=${ns}:prometheus`]);
  t.after(async () => {
    await cluster.kubectl(['delete', 'clusterrolebinding,clusterrole', role, '--ignore-not-found'], { allowFail: true });
  });
  return serviceAccountToken(cluster, ns, 'prometheus');
}

const seriesOf = (samples: readonly Sample[], name: string): Sample[] => samples.filter((s) => s.metric['name'] === name);

describe('monitoring with a real Prometheus', () => {
  it('scrapes the per-CR series over HTTPS with a token, fires ReleaseFailed and resolves it, and every dashboard query has data', async (t) => {
    const s = await setUp(t, { kind: 'Mon', chart: fixtureChart('bad-render') });
    const { cluster, ns, kind } = s;
    const token = await scraperToken(t, cluster, ns);
    const port = await freePort();
    const op = await s.start({
      args: [
        '--metrics-secure',
        '--metrics-require-rbac',
        `--metrics-bind-address=127.0.0.1:${String(port)}`,
        '--leader-elect',
        '--leader-election-namespace',
        ns,
        '--leader-election-id',
        'monitoring',
      ],
    });
    assert.equal((await scrapeHttps(port)).status, 401, 'no token, no metrics');

    const rules = await generate(cluster, ['--format', 'rule-file', '--for', '5s', '--job', JOB]);
    const dashboardText = await generate(cluster, ['--format', 'grafana', '--job', JOB]);
    const prom: Prometheus = await startPrometheus({ dir: mkdtempSync(join(tmpdir(), 'chartpilot-prometheus-')), job: JOB, target: `127.0.0.1:${String(port)}`, token, rules: { 'rules.yml': rules } });
    t.after(() => prom.destroy());
    await waitFor('Prometheus to scrape the operator', async () => (await prom.target())?.health === 'up', { timeoutMs: 30_000 });

    const crs = crsOf(cluster, kind, ns, op);
    await crs.apply('good', { color: 'blue' });
    await crs.until('good', 'Ready', (c) => condition(c, 'Ready')?.status === 'True');

    // A failing release: the series is in Prometheus within a scrape of the status saying so.
    await crs.apply('broken', { explode: true });
    await crs.until('broken', 'ReleaseFailed', (c) => condition(c, 'ReleaseFailed')?.status === 'True');
    const seenAt = Date.now();
    const failing = `chartpilot_resource_condition{namespace="${ns}",name="broken",type="ReleaseFailed",status="True"}`;
    await waitFor('the ReleaseFailed series in Prometheus', async () => (await prom.query(failing)).length === 1, { timeoutMs: 15_000, intervalMs: 100 });
    const lagMs = Date.now() - seenAt;
    t.diagnostic(`ReleaseFailed in Prometheus ${String(lagMs)} ms after kubectl saw the condition (scrape interval 1 s)`);
    assert.ok(lagMs < 3_000, `the failure reached Prometheus ${String(lagMs)} ms after the status said so: more than one scrape (1 s) plus the status' way to the operator's cache`);
    const [series] = await prom.query(failing);
    assert.deepEqual(
      { kind: series?.metric['kind'], job: series?.metric['job'], value: series?.value },
      { kind: kind.kind, job: JOB, value: 1 },
    );

    // The shipped alert fires (for: shortened by the generator's flag) and names the CR.
    const fired = await waitFor(
      'ReleaseFailed firing',
      async () => (await prom.alerts()).find((a) => a.labels['alertname'] === 'ReleaseFailed' && a.labels['name'] === 'broken' && a.state === 'firing'),
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    assert.match(fired.annotations['description'] ?? '', new RegExp(`${kind.kind} ${ns}/broken`));
    assert.match(fired.annotations['runbook_url'] ?? '', /\/docs\/operations\/runbooks\.md#releasefailed$/);

    // A drift repair is counted per object kind.
    await cluster.kubectl(['patch', 'configmap', 'good-bad-render', '-n', ns, '--type=merge', '-p', '{"data":{"color":"red"}}']);
    await waitFor(
      'a drift repair counted',
      async () => ((await prom.query(`chartpilot_drift_repairs_total{namespace="${ns}",name="good",object_kind="ConfigMap"}`))[0]?.value ?? 0) >= 1,
      { timeoutMs: 30_000 },
    );

    // Every dashboard query returns data, variables substituted: this namespace and a CR. With the
    // default --resource-metrics (attention) a CR's own history is there while it needs attention,
    // so the good CR is paused meanwhile (Paused=True: it needs someone) to show its release.
    await crs.apply('good', { color: 'blue' }, { [Annotations.pauseReconcile]: 'true' });
    await crs.until('good', 'Paused', (c) => condition(c, 'Paused')?.status === 'True');
    const dashboard = JSON.parse(dashboardText) as { panels: DashboardPanel[]; templating: { list: { name: string; definition?: string }[] } };
    const substitute = (expr: string, name = 'good'): string => expr.replaceAll('$namespace', ns).replaceAll('$name', name);
    const empty: string[] = [];
    await waitFor(
      'every dashboard query to return data',
      async () => {
        empty.length = 0;
        for (const p of dashboard.panels) {
          for (const target of p.targets ?? []) {
            const found = (await prom.query(substitute(target.expr, 'broken'))).length > 0 || (await prom.query(substitute(target.expr, 'good'))).length > 0;
            if (!found) empty.push(`${p.title}: ${target.expr}`);
          }
        }
        // Grafana's label_values(metric, label) is, in PromQL, the label's values among metric's series.
        for (const v of dashboard.templating.list) {
          const m = /^label_values\((.*), (\w+)\)$/.exec(v.definition ?? '');
          if (m === null) continue;
          const values = (await prom.query(`count by (${m[2] ?? ''}) (${substitute(m[1] ?? '')})`)).map((x) => x.metric[m[2] ?? '']);
          if (!values.includes(v.name === 'namespace' ? ns : 'good')) empty.push(`variable ${v.name}: ${v.definition ?? ''}`);
        }
        return empty.length === 0;
      },
      { timeoutMs: 30_000, intervalMs: 1_000 },
    ).catch((err: unknown) => {
      throw new Error(`${String(err)}\nwithout data:\n${empty.join('\n')}`);
    });

    // Resumed, it needs no attention: its per-CR history goes.
    await crs.apply('good', { color: 'blue' });
    await crs.until('good', 'resumed', (c) => condition(c, 'Paused')?.status !== 'True' && condition(c, 'Ready')?.status === 'True');
    await waitFor('the resumed CR\'s condition series to go', async () => (await prom.query(`chartpilot_resource_condition{namespace="${ns}",name="good"}`)).length === 0, { timeoutMs: 15_000 });

    // At most a few series per CR, from the real endpoint; the Ready one has none but operator-sdk's
    // resource_created_at_seconds and its drift repairs (a counter, kept whatever its state).
    const perCr = await prom.query(`count by (name) ({namespace="${ns}", name!="", __name__=~"chartpilot_.*|resource_created_at_seconds"})`);
    t.diagnostic(`series per CR: ${perCr.map((x) => `${x.metric['name'] ?? ''}=${String(x.value)}`).join(', ')}`);
    for (const x of perCr) assert.ok(x.value <= 8, `${x.metric['name'] ?? ''} has ${String(x.value)} series`);
    assert.equal(perCr.find((x) => x.metric['name'] === 'good')?.value, 2, 'the Ready CR: resource_created_at_seconds and its ConfigMap repairs');
    const fleet = await prom.query(`chartpilot_resources{namespace="${ns}"}`);
    t.diagnostic(`chartpilot_resources: ${fleet.map((x) => `ready=${x.metric['ready'] ?? ''}: ${String(x.value)}`).join(', ')}`);
    assert.equal(fleet.reduce((sum, x) => sum + x.value, 0), 2, 'both CRs counted');
    assert.equal(fleet.find((x) => x.metric['ready'] === 'True')?.value, 1, 'the good one as Ready');

    // Fixed: the CR becomes Ready, the failure series goes and the alert resolves.
    await crs.apply('broken', { color: 'green' });
    await crs.until('broken', 'Ready', (c) => condition(c, 'Ready')?.status === 'True' && condition(c, 'ReleaseFailed') === undefined);
    await waitFor('the ReleaseFailed series to go', async () => (await prom.query(failing)).length === 0, { timeoutMs: 15_000 });
    await waitFor(
      'ReleaseFailed resolved',
      async () => !(await prom.alerts()).some((a) => a.labels['alertname'] === 'ReleaseFailed' && a.labels['name'] === 'broken'),
      { timeoutMs: 15_000, intervalMs: 500 },
    );
    // Healed, it needs no attention: its per-CR series go, and the count moves to Ready=True.
    await waitFor('the healed CR\'s condition series to go', async () => (await prom.query(`chartpilot_resource_condition{namespace="${ns}",name="broken"}`)).length === 0, { timeoutMs: 15_000 });
    await waitFor('both CRs counted Ready', async () => (await prom.query(`chartpilot_resources{namespace="${ns}",ready="True"}`))[0]?.value === 2, { timeoutMs: 15_000 });

    // A deleted CR's series go with it.
    await crs.delete('good');
    await crs.gone('good');
    await waitFor('the deleted CR\'s series to go', async () => seriesOf(await prom.query(`{namespace="${ns}", __name__=~"chartpilot_.*"}`), 'good').length === 0, {
      timeoutMs: 15_000,
    });
  });
});
