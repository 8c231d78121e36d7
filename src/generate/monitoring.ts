/**
 * The alerts an application's owner wants from an operator built on chartpilot, as a
 * PrometheusRule (the Prometheus Operator) or a plain rule file (promtool, a plain Prometheus):
 * from the per-CR series (observe/resource-metrics.ts) and the operator's own metrics. Each alert
 * names the CR or the controller in its description and links its section of the runbooks page
 * (docs/operations/runbooks.md).
 */
import { stringify } from 'yaml';
import { packageVersion } from './deploy.js';

/** The runbooks page, in the repository: one section per alert, named after it. */
export const RUNBOOKS_PAGE = 'docs/operations/runbooks.md';

/** Where runbook_url points unless --runbook-url says otherwise: this version's runbooks page. */
export const DEFAULT_RUNBOOK_URL = `https://github.com/chartpilot/chartpilot/blob/v${packageVersion()}/${RUNBOOKS_PAGE}`;

export interface MonitoringOptions {
  /** The operator's name: rule object name, the `operator` label of every alert. */
  readonly name: string;
  readonly namespace: string;
  /**
   * The scrape job's name, for the alerts about the operator itself (absent, not leading). The
   * Prometheus Operator names a ServiceMonitor's job after the Service: `<name>-metrics-service`.
   */
  readonly job: string;
  /** Replaces every rule's `for:` (e.g. `5s` in tests); undefined keeps each rule's own. */
  readonly forOverride?: string | undefined;
  /** The document the runbook anchors are in. */
  readonly runbookUrl: string;
}

export interface AlertRule {
  readonly alert: string;
  readonly expr: string;
  readonly for: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: { readonly summary: string; readonly description: string; readonly runbook_url: string };
}

export interface RuleGroup {
  readonly name: string;
  readonly rules: readonly AlertRule[];
}

/** A Prometheus duration, as `for:` takes it (`30s`, `1h30m`). */
const DURATION = /^(?:\d+(?:ms|s|m|h|d|w|y))+$/u;

export function monitoringOptionProblems(o: Partial<MonitoringOptions>): string[] {
  const problems: string[] = [];
  if (o.forOverride !== undefined && !DURATION.test(o.forOverride)) {
    problems.push(`--for "${o.forOverride}" is not a Prometheus duration (e.g. 5s, 10m, 1h30m)`);
  }
  if (o.job !== undefined && (o.job === '' || /["\\\n]/u.test(o.job))) problems.push(`--job "${o.job}" is not a usable job name (no quotes, backslashes or newlines)`);
  if (o.runbookUrl !== undefined && !/^https?:\/\/\S+$/u.test(o.runbookUrl)) problems.push(`--runbook-url "${o.runbookUrl}" is not an http(s) URL`);
  return problems;
}

/** The anchor of an alert's section of the runbooks page: its heading is "## <Alert>", one word. */
export function runbookAnchor(alert: string): string {
  return alert.toLowerCase();
}

const CR = '{{ $labels.kind }} {{ $labels.namespace }}/{{ $labels.name }}';

/** The alerts, each with the `for:` it has unless overridden. */
export function alertRules(o: MonitoringOptions): RuleGroup[] {
  const job = `job="${o.job}"`;
  const rule = (alert: string, severity: 'warning' | 'critical', forDefault: string, expr: string, summary: string, description: string): AlertRule => ({
    alert,
    expr,
    for: o.forOverride ?? forDefault,
    labels: { severity, operator: o.name },
    annotations: { summary, description, runbook_url: `${o.runbookUrl}#${runbookAnchor(alert)}` },
  });
  const condition = (type: string, status = 'True'): string => `chartpilot_resource_condition{type="${type}",status="${status}"} == 1`;
  const resources: AlertRule[] = [
    rule(
      'ReleaseFailed',
      'warning',
      '10m',
      condition('ReleaseFailed'),
      `${CR}: its Helm release keeps failing`,
      `The last helm install or upgrade of ${CR} failed and has not succeeded since; the previous release stays deployed. kubectl describe it: its ReleaseFailed condition and events say why.`,
    ),
    rule(
      'ResourceNotReady',
      'warning',
      '15m',
      // Not Unknown: that is a kind whose readiness is not tracked (watchDependentResources: false), for good.
      `(${condition('Ready', 'False')}) and on (kind, namespace, name) (${condition('Deployed')}) unless on (kind, namespace, name) (${condition('Paused')})`,
      `${CR} is deployed but not Ready`,
      `${CR} was deployed, but its workloads have not been Ready for a while. Its Ready condition names the object that is not ready and why.`,
    ),
    rule(
      'ResourceIrreconcilable',
      'warning',
      '10m',
      condition('Irreconcilable'),
      `${CR} cannot be reconciled as it is`,
      `chartpilot cannot act on ${CR} (a bad spec or annotation, a missing ServiceAccount, a release record it did not write). Its Irreconcilable condition says what to fix.`,
    ),
    rule(
      'ChartUnavailable',
      'warning',
      '10m',
      condition('ChartUnavailable'),
      `${CR}: its chart cannot be pulled`,
      `The chart of ${CR}'s kind cannot be had from its registry; the deployed release is left as it is and no upgrade happens. The ChartUnavailable condition names the reference and the error.`,
    ),
    rule(
      'DriftRepairedRepeatedly',
      'warning',
      '0s',
      'sum by (kind, namespace, name, object_kind) (increase(chartpilot_drift_repairs_total[1h])) > 3',
      `${CR}: a {{ $labels.object_kind }} keeps being set back`,
      `chartpilot repaired a {{ $labels.object_kind }} of ${CR} {{ $value | humanize }} times in the last hour: something else keeps changing a field the chart sets (an HPA, an injector, a person). Its DriftRepaired events name the object and fields.`,
    ),
  ];
  const operator: AlertRule[] = [
    rule(
      'ReconcileErrors',
      'warning',
      '15m',
      'sum by (controller) (rate(controller_runtime_reconcile_errors_total[5m])) / sum by (controller) (rate(controller_runtime_reconcile_total[5m])) > 0.1',
      'chartpilot controller {{ $labels.controller }}: many reconciles fail',
      'More than 10% of the reconciles of controller {{ $labels.controller }} failed over the last 5 minutes ({{ $value | humanizePercentage }}). The operator log says which resources and why.',
    ),
    rule(
      'OperatorAbsent',
      'critical',
      '5m',
      `absent(up{${job}} == 1)`,
      `chartpilot operator ${o.name} is not scraped`,
      `No target of job ${o.job} is up: the operator ${o.name} in ${o.namespace} is down, or Prometheus cannot scrape it. Nothing reconciles its resources meanwhile.`,
    ),
    rule(
      'OperatorNotLeading',
      'critical',
      '5m',
      `max(leader_election_master_status{${job}}) < 1`,
      `chartpilot operator ${o.name}: no replica leads`,
      `Every replica of ${o.name} in ${o.namespace} stands by: none holds the leader election lease, so nothing reconciles.`,
    ),
    rule(
      'QueueStalled',
      'warning',
      '10m',
      'sum by (name) (workqueue_depth) > 0 and sum by (name) (rate(workqueue_work_duration_seconds_count[5m])) == 0',
      'chartpilot controller {{ $labels.name }}: its work queue does not move',
      'Resources wait in the work queue of controller {{ $labels.name }} ({{ $value }} now) but no reconcile has finished in 5 minutes: every worker is busy (hung helm calls?) or stuck.',
    ),
  ];
  return [
    { name: `${o.name}.resources`, rules: resources },
    { name: `${o.name}.operator`, rules: operator },
  ];
}

const HEADER = (o: MonitoringOptions): string => `# Alerts for the resources the operator ${o.name} serves, and for the operator itself
# (chartpilot generate monitoring). Each alert's runbook_url is a section of ${o.runbookUrl}.
`;

/** Plain Prometheus rule file: `rule_files:` of prometheus.yml, `promtool check rules`. */
export function ruleFileYaml(o: MonitoringOptions): string {
  return `${HEADER(o)}${stringify({ groups: alertRules(o) }, { lineWidth: 0 })}`;
}

/** A PrometheusRule for the Prometheus Operator (needs its CRDs, hence an optional part). */
export function prometheusRuleYaml(o: MonitoringOptions): string {
  const doc = {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: {
      name: `${o.name}-alerts`,
      namespace: o.namespace,
      labels: { 'app.kubernetes.io/name': o.name, 'app.kubernetes.io/component': 'monitoring' },
    },
    spec: { groups: alertRules(o) },
  };
  return `${HEADER(o)}# kube-prometheus-stack selects rules by a label such as release: <its release>; add it.
${stringify(doc, { lineWidth: 0 })}`;
}
