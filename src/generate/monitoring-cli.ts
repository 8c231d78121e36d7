/**
 * `chartpilot generate monitoring`: flags in, alerts and a dashboard out. Errors are InputError,
 * which cli.ts maps to exit code 2.
 */
import { parseArgs } from 'node:util';
import { ExitCode } from '../lib/exit-codes.js';
import { DEFAULTS, deployOptionProblems } from './deploy.js';
import { InputError } from './errors.js';
import { metricsNames } from './metrics.js';
import { dashboardJson } from './monitoring-dashboard.js';
import { DEFAULT_RUNBOOK_URL, monitoringOptionProblems, prometheusRuleYaml, ruleFileYaml, type MonitoringOptions } from './monitoring.js';
import { writeFiles } from './write-files.js';

/** What cli.ts's CommandIo provides (declared here too: importing cli.ts would be a cycle). */
export interface MonitoringIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (line: string) => void;
}

const FORMATS = ['prometheus-rule', 'rule-file', 'grafana'] as const;
type Format = (typeof FORMATS)[number];

export const MONITORING_HELP = `Usage: chartpilot generate monitoring [flags]

Alerts for the resources the operator serves and for the operator itself, and a Grafana dashboard
(the resources, one resource's history, the operator's health), from chartpilot's metrics:
ReleaseFailed, ResourceNotReady, ResourceIrreconcilable, ChartUnavailable, DriftRepairedRepeatedly,
ReconcileErrors, OperatorAbsent, OperatorNotLeading, QueueStalled. Each alert names the resource
(or controller) and links its runbook section (the runbooks page, a section per alert).

Flags:
  --format <f>                 prometheus-rule (default: a PrometheusRule for the Prometheus
                               Operator), rule-file (plain Prometheus rule_files / promtool), or
                               grafana (the dashboard JSON)
  --output-dir <dir>           write all three there instead (prometheus-rule.yaml, rules.yml,
                               grafana-dashboard.json)
  --name <name>                the operator's name (default ${DEFAULTS.name})
  --namespace <ns>             the operator's namespace (default ${DEFAULTS.namespace})
  --job <job>                  the scrape job of the operator's metrics, for OperatorAbsent and
                               OperatorNotLeading (default <name>-metrics-service: the Prometheus
                               Operator names a ServiceMonitor's job after its Service)
  --for <duration>             replace every alert's for: (e.g. 5s to see alerts fire in a test)
  --runbook-url <url>          the document holding the runbook sections (default
                               ${DEFAULT_RUNBOOK_URL})
  -h, --help                   show this help`;

export function monitoringCommand(argv: readonly string[], io: MonitoringIo): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        format: { type: 'string' },
        'output-dir': { type: 'string' },
        name: { type: 'string' },
        namespace: { type: 'string' },
        job: { type: 'string' },
        for: { type: 'string' },
        'runbook-url': { type: 'string' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    throw new InputError([err instanceof Error ? (err.message.split('\n')[0] ?? err.message) : String(err)]);
  }
  const name = values.name ?? DEFAULTS.name;
  const o: MonitoringOptions = {
    name,
    namespace: values.namespace ?? DEFAULTS.namespace,
    job: values.job ?? metricsNames(name).service,
    forOverride: values.for,
    runbookUrl: values['runbook-url'] ?? DEFAULT_RUNBOOK_URL,
  };
  const format = values.format ?? 'prometheus-rule';
  const problems = [...deployOptionProblems({ name: o.name, namespace: o.namespace }), ...monitoringOptionProblems(o)];
  if (!(FORMATS as readonly string[]).includes(format)) problems.push(`--format "${format}" is not one of ${FORMATS.join(', ')}`);
  if (problems.length > 0) throw new InputError(problems);
  const outDir = values['output-dir'];
  if (outDir !== undefined) return writeFiles(outDir, monitoringFiles(o), io).then(() => ExitCode.ok);
  io.stdout(render(o, format as Format));
  return Promise.resolve(ExitCode.ok);
}

function render(o: MonitoringOptions, format: Format): string {
  switch (format) {
    case 'prometheus-rule':
      return prometheusRuleYaml(o);
    case 'rule-file':
      return ruleFileYaml(o);
    case 'grafana':
      return dashboardJson(o);
  }
}

/** The monitoring files by name, as `--output-dir`, `generate all` and `new` write them. */
export function monitoringFiles(o: MonitoringOptions): Map<string, string> {
  return new Map([
    ['prometheus-rule.yaml', prometheusRuleYaml(o)],
    ['rules.yml', ruleFileYaml(o)],
    ['grafana-dashboard.json', dashboardJson(o)],
  ]);
}
