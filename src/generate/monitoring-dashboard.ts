/**
 * A Grafana dashboard for an operator built on chartpilot: the fleet of resources, one resource's
 * history (the `namespace` and `name` variables), and the operator's health. Plain dashboard JSON
 * (schemaVersion 39): import it, or put it in a ConfigMap for Grafana's sidecar.
 */
import type { MonitoringOptions } from './monitoring.js';

export interface DashboardTarget {
  readonly expr: string;
  readonly legendFormat?: string;
  readonly refId: string;
  readonly instant?: boolean;
  readonly format?: 'table' | 'time_series';
}

export interface DashboardPanel {
  readonly id: number;
  readonly type: 'row' | 'stat' | 'timeseries' | 'table' | 'state-timeline';
  readonly title: string;
  readonly description?: string;
  readonly gridPos: { readonly x: number; readonly y: number; readonly w: number; readonly h: number };
  readonly datasource?: { readonly type: 'prometheus'; readonly uid: string };
  readonly targets?: readonly DashboardTarget[];
  readonly fieldConfig?: unknown;
  readonly options?: unknown;
}

interface PanelSpec {
  readonly type: Exclude<DashboardPanel['type'], 'row'>;
  readonly title: string;
  readonly description: string;
  readonly w: number;
  readonly h?: number;
  readonly unit?: string;
  readonly queries: readonly { readonly expr: string; readonly legend?: string }[];
}

const DATASOURCE = { type: 'prometheus', uid: '${datasource}' } as const;
const ONE = 'namespace="$namespace", name="$name"';

function fleet(): PanelSpec[] {
  return [
    {
      type: 'stat',
      title: 'Resources',
      description: 'Custom resources the operator serves',
      w: 4,
      queries: [{ expr: 'sum(chartpilot_resources)' }],
    },
    {
      type: 'stat',
      title: 'Not Ready',
      description: 'Resources whose Ready condition is not True',
      w: 4,
      queries: [{ expr: 'sum(chartpilot_resources{ready=~"False|Unknown"}) or vector(0)' }],
    },
    {
      type: 'stat',
      title: 'Releases failing',
      description: 'Resources whose last Helm action failed (ReleaseFailed)',
      w: 4,
      queries: [{ expr: 'count(chartpilot_resource_condition{type="ReleaseFailed", status="True"} == 1) or vector(0)' }],
    },
    {
      type: 'timeseries',
      title: 'Resources by Ready status',
      description: 'How many resources are Ready (True), not (False) or unknown',
      w: 12,
      queries: [{ expr: 'sum by (ready) (chartpilot_resources)', legend: 'Ready={{ready}}' }],
    },
    {
      type: 'table',
      title: 'Resources with a problem',
      description: 'Conditions that need someone: a failed release, not reconcilable, chart unavailable, paused, not Ready',
      w: 12,
      h: 8,
      queries: [
        {
          expr: 'chartpilot_resource_condition{type=~"ReleaseFailed|Irreconcilable|ChartUnavailable|Paused", status="True"} == 1 or chartpilot_resource_condition{type="Ready", status!="True"} == 1',
        },
      ],
    },
    {
      type: 'table',
      title: 'Deployed charts',
      description: 'Resources per kind, chart and chart version',
      w: 12,
      h: 8,
      queries: [{ expr: 'sum by (kind, chart, chart_version) (chartpilot_releases)' }],
    },
    {
      type: 'timeseries',
      title: 'Drift repairs in the last hour',
      description: 'Objects set back to what the chart says, by kind of resource and kind of object',
      w: 24,
      queries: [{ expr: 'sum by (kind, object_kind) (increase(chartpilot_drift_repairs_total[1h]))', legend: '{{kind}} {{object_kind}}' }],
    },
  ];
}

function oneResource(): PanelSpec[] {
  return [
    {
      type: 'state-timeline',
      title: 'Conditions of $namespace/$name',
      description: 'Each condition and its status over time (by default only while the resource needs attention: not Ready, failed, paused…; --resource-metrics all for every resource)',
      w: 24,
      queries: [{ expr: `chartpilot_resource_condition{${ONE}}`, legend: '{{type}}={{status}}' }],
    },
    {
      type: 'stat',
      title: 'Revision',
      description: 'Helm revision of the deployed release',
      w: 4,
      queries: [{ expr: `chartpilot_release_revision{${ONE}}` }],
    },
    {
      type: 'stat',
      title: 'Since the last deploy',
      description: 'Time since the last successful install or upgrade',
      w: 4,
      unit: 's',
      queries: [{ expr: `time() - chartpilot_release_last_deployed_timestamp_seconds{${ONE}}` }],
    },
    {
      type: 'stat',
      title: 'Since Ready changed',
      description: 'Time since the Ready condition last changed status',
      w: 4,
      unit: 's',
      queries: [{ expr: `time() - chartpilot_resource_ready_transition_timestamp_seconds{${ONE}}` }],
    },
    {
      type: 'table',
      title: 'Chart',
      description: 'Chart, version and app version of the deployed release',
      w: 12,
      queries: [{ expr: `chartpilot_release_info{${ONE}}` }],
    },
    {
      type: 'timeseries',
      title: 'Drift repairs of $namespace/$name',
      description: 'Repairs in the last hour, by kind of object',
      w: 24,
      queries: [{ expr: `sum by (object_kind) (increase(chartpilot_drift_repairs_total{${ONE}}[1h]))`, legend: '{{object_kind}}' }],
    },
  ];
}

function operatorHealth(job: string): PanelSpec[] {
  const j = `job="${job}"`;
  return [
    { type: 'stat', title: 'Operator up', description: `Targets of job ${job} that answer`, w: 4, queries: [{ expr: `sum(up{${j}})` }] },
    {
      type: 'stat',
      title: 'Leading',
      description: 'Replicas holding the leader election lease (1 expected)',
      w: 4,
      queries: [{ expr: `sum(leader_election_master_status{${j}})` }],
    },
    {
      type: 'timeseries',
      title: 'Memory',
      description: 'Resident memory of each operator process',
      w: 16,
      unit: 'bytes',
      queries: [{ expr: `process_resident_memory_bytes{${j}}`, legend: '{{instance}}' }],
    },
    {
      type: 'timeseries',
      title: 'Reconciles by result',
      description: 'Reconciles per second, by controller and result',
      w: 12,
      unit: 'ops',
      queries: [{ expr: 'sum by (controller, result) (rate(controller_runtime_reconcile_total[5m]))', legend: '{{controller}} {{result}}' }],
    },
    {
      type: 'timeseries',
      title: 'Reconcile errors',
      description: 'Failed reconciles per second, by controller',
      w: 12,
      unit: 'ops',
      queries: [{ expr: 'sum by (controller) (rate(controller_runtime_reconcile_errors_total[5m]))', legend: '{{controller}}' }],
    },
    {
      type: 'timeseries',
      title: 'Helm actions by outcome',
      description: 'Helm calls per second, by action and outcome',
      w: 12,
      unit: 'ops',
      queries: [{ expr: 'sum by (action, outcome) (rate(chartpilot_helm_calls_total[5m]))', legend: '{{action}} {{outcome}}' }],
    },
    {
      type: 'timeseries',
      title: 'Helm action duration (p90)',
      description: 'How long helm calls take, by action',
      w: 12,
      unit: 's',
      queries: [{ expr: 'histogram_quantile(0.9, sum by (action, le) (rate(chartpilot_helm_call_duration_seconds_bucket[5m])))', legend: '{{action}}' }],
    },
    {
      type: 'timeseries',
      title: 'Queue depth per lane',
      description: 'Resources waiting for a worker, by controller and lane (change, delete, followUp)',
      w: 12,
      queries: [{ expr: 'sum by (name, lane) (chartpilot_workqueue_lane_depth)', legend: '{{name}} {{lane}}' }],
    },
    {
      type: 'timeseries',
      title: 'Queue wait per lane (p90)',
      description: 'How long resources wait before a worker takes them',
      w: 12,
      unit: 's',
      queries: [{ expr: 'histogram_quantile(0.9, sum by (name, lane, le) (rate(chartpilot_workqueue_lane_wait_seconds_bucket[5m])))', legend: '{{name}} {{lane}}' }],
    },
  ];
}

/** Lays out rows of panels left to right, wrapping at Grafana's 24 columns. */
function layout(rows: readonly { readonly title: string; readonly panels: readonly PanelSpec[] }[]): DashboardPanel[] {
  const out: DashboardPanel[] = [];
  let id = 1;
  let y = 0;
  for (const row of rows) {
    out.push({ id: id++, type: 'row', title: row.title, gridPos: { x: 0, y, w: 24, h: 1 } });
    y += 1;
    let x = 0;
    let rowHeight = 0;
    for (const p of row.panels) {
      const h = p.h ?? 6;
      if (x + p.w > 24) {
        x = 0;
        y += rowHeight;
        rowHeight = 0;
      }
      out.push({
        id: id++,
        type: p.type,
        title: p.title,
        description: p.description,
        gridPos: { x, y, w: p.w, h },
        datasource: DATASOURCE,
        targets: p.queries.map((q, i) => ({
          expr: q.expr,
          refId: String.fromCharCode(65 + i),
          ...(q.legend === undefined ? {} : { legendFormat: q.legend }),
          ...(p.type === 'table' ? { instant: true, format: 'table' as const } : {}),
        })),
        fieldConfig: { defaults: p.unit === undefined ? {} : { unit: p.unit }, overrides: [] },
        options: {},
      });
      x += p.w;
      rowHeight = Math.max(rowHeight, h);
    }
    y += rowHeight;
  }
  return out;
}

/** The dashboard as an object (what tests walk) — `dashboardJson` is its text. */
export function dashboard(o: MonitoringOptions): { title: string; uid: string; panels: DashboardPanel[]; [key: string]: unknown } {
  const variable = (name: string, label: string, query: string): unknown => ({
    name,
    label,
    type: 'query',
    datasource: DATASOURCE,
    query: { query, refId: `${name}-var` },
    definition: query,
    refresh: 2,
    sort: 1,
    includeAll: false,
    multi: false,
  });
  return {
    title: `${o.name}: resources and operator`,
    uid: `${o.name}-overview`.slice(0, 40),
    description: `Resources served by the operator ${o.name} (chartpilot), one resource's history, and the operator's health. Generated by chartpilot generate monitoring.`,
    tags: ['chartpilot', o.name],
    schemaVersion: 39,
    version: 1,
    editable: true,
    time: { from: 'now-6h', to: 'now' },
    refresh: '30s',
    templating: {
      list: [
        { name: 'datasource', label: 'Data source', type: 'datasource', query: 'prometheus' },
        // resource_created_at_seconds: every CR has it, also those without per-CR series (--resource-metrics attention).
        variable('namespace', 'Namespace', 'label_values(resource_created_at_seconds, namespace)'),
        variable('name', 'Resource', 'label_values(resource_created_at_seconds{namespace="$namespace"}, name)'),
      ],
    },
    panels: layout([
      { title: 'Fleet', panels: fleet() },
      { title: 'Resource $namespace/$name', panels: oneResource() },
      { title: 'Operator', panels: operatorHealth(o.job) },
    ]),
  };
}

export function dashboardJson(o: MonitoringOptions): string {
  return `${JSON.stringify(dashboard(o), null, 2)}\n`;
}
