/** Flags of `npm run bench -- …`. */
import { parseArgs } from 'node:util';
import { CHART_NAMES, type ChartName } from './charts.js';
import { CONTENDERS, KNOWN_CONTENDERS, type ContenderName } from './contenders.js';
import { errorMessage } from '../src/lib/errors.js';

export interface BenchOptions {
  n: number;
  concurrency: number;
  idleSeconds: number;
  settleSeconds: number;
  contenders: ContenderName[];
  outDir: string | undefined;
  phaseTimeoutSeconds: number;
  binDir: string | undefined;
  /** Build helm-operator when it is not cached (false: skip operator-sdk instead). */
  build: boolean;
  helmOperatorBin: string | undefined;
  /** Keep the scratch dir (operator logs, control-plane logs) after the run. */
  keep: boolean;
  /** Only print the markdown of an earlier results-*.json. */
  render: string | undefined;
  /** Only print the medians over these earlier results-*.json (bench/medians.ts). */
  medians: string[] | undefined;
  /** The chart every contender installs (bench/charts.ts). */
  chart: ChartName;
  /** Where chartpilot's chart comes from: the directory, or a real OCI registry next to the control plane. */
  chartSource: 'local' | 'oci';
  /** chartpilot's --chart-refresh-interval with --chart-source oci. */
  chartRefreshSeconds: number;
  /** Which scenarios run, in this order (create first). */
  scenarios: BenchScenario[];
  /** chartpilot processes sharing the CRs (`run --shards`); 1 = one operator, no ring. */
  replicas: number;
  /** chartpilot's --helm-mode; undefined: its default. */
  helmMode: 'warm' | 'engine' | 'cli' | undefined;
  /** chartpilot's --helm-workers; undefined: its default (two per CPU, at most one per helm slot). */
  helmWorkers: number | undefined;
  /** Operators run inside a memory cgroup with this limit (MiB), as a pod's limit runs them; undefined: no limit. */
  memoryLimitMiB: number | undefined;
  /**
   * chartpilot only: its entry has valuesFrom, and CR i takes one value from Secret bench-ref-(i mod K)
   * (the 'reference-change' scenario changes bench-ref-0); undefined: specs as usual.
   */
  valuesFromSecrets: number | undefined;
  /** chartpilot only (chart configmap): its entry declares outputs read from the release's ConfigMap. */
  outputs: boolean;
}

/** Every scenario --scenarios may name; `restart` is opt-in. */
export const KNOWN_SCENARIOS = ['create', 'upgrade', 'idle', 'delete', 'restart', 'reference-change'] as const;
export type BenchScenario = (typeof KNOWN_SCENARIOS)[number];
const DEFAULT_SCENARIOS: readonly BenchScenario[] = ['create', 'upgrade', 'idle', 'delete'];

export const USAGE = `Usage: npm run bench -- [flags]

Runs floor (plain helm), operator-sdk's helm-operator and chartpilot one after another against a
fresh local control plane: create N releases, upgrade all N, idle, delete all N.

  --n N                       releases per contender (default 200)
  --concurrency C             helm parallelism / --max-concurrent-reconciles (default 10)
  --idle-seconds S            length of the idle window (default 300)
  --settle-seconds S          unmeasured pause before the idle window (default 15)
  --contenders a,b,c          subset and order of floor,operator-sdk,chartpilot (default all three);
                              floor-postrender (the floor through a post-renderer that only runs
                              cat) is opt-in
  --chart webapp|podinfo|configmap
                              the chart every contender installs: charts/webapp (default), or the
                              public podinfo chart 6.9.2, fetched once from the Go module proxy and
                              checked against a pinned sha256 (the shape of Flux's published benchmark),
                              or bench/charts/configmap (one ConfigMap: the 10,000-CR restart figure)
  --phase-timeout-seconds S   give up on a scenario after S (default max(600, 6×N))
  --out-dir DIR               where results-<timestamp>.{json,md} go (default bench/out)
  --bin-dir DIR               control-plane binaries (default: provision them, as npm test does)
  --helm-operator-bin PATH    use this helm-operator instead of the cached build
  --no-build                  don't build helm-operator; skip operator-sdk when it is not cached
  --smoke                     N=5, idle 10 s, settle 2 s; operator-sdk only if already cached
  --chart-source local|oci    chartpilot's chart: the --chart directory (default), or pushed to a real
                              OCI registry (devcluster/registry.ts) that chartpilot pulls it from;
                              idle then also counts registry requests per minute (operator-sdk and
                              the floor keep the local chart)
  --chart-refresh-seconds S   with --chart-source oci: chartpilot's --chart-refresh-interval (default 600)
  --scenarios a,b,c           which scenarios run, in order (default create,upgrade,idle,delete);
                              restart (opt-in, operators only): SIGTERM the operator with every CR
                              converged, start it again, and measure until it has checked every CR
                              (its "every resource checked since start" line): time, helm
                              processes, API requests by verb and resource, peak RSS, CPU.
                              The 10,000-CR figure: --n 10000 --contenders chartpilot
                              --scenarios create,restart
  --replicas R                chartpilot as R replicas sharing the CRs (run --shards, one ring,
                              POD_NAME chartpilot-0…R-1; default 1: one operator, no ring); the
                              results add each replica's CPU and peak RSS
  --helm-mode warm|engine|cli chartpilot's --helm-mode (default: its own, warm when chartpilot-helm is
                              in the bin dir); floor and chartpilot run chartpilot-helm when it is there
  --helm-workers W            chartpilot's --helm-workers: at most W warm workers (default: its own,
                              two per CPU, never more than the helm slots)
  --memory-limit-mib M        run each operator (with its helm processes) in a memory cgroup limited to
                              M MiB, as a pod's memory limit does (128: operator-sdk's scaffolded
                              limit); the results add the cgroup's peak, working set and OOM kills
  --values-from-secrets K     chartpilot only: its entry has valuesFrom and CR i takes one value from
                              Secret bench-ref-(i mod K), made before the create wave (compare a run
                              without the flag); scenario reference-change (opt-in) then rotates
                              bench-ref-0 and measures until exactly the CRs that reference it upgraded
  --outputs                   chartpilot only, chart configmap: its entry declares two outputs (CEL)
                              over the release's ConfigMap, evaluated on every look at a release
                              (compare a run without the flag); the run says how many CRs show them
  --keep                      keep the scratch dir (logs of every process) after the run
  --render FILE               print the markdown of an earlier results-*.json, run nothing
  --medians A.json,B.json,…   print the medians over earlier runs of one command (run them with the
                              contenders in alternating order), with each run's speed-ups; run nothing
  -h, --help                  this text
`;

export class UsageError extends Error {}

function positiveInt(flag: string, v: string | undefined, def: number, min = 1): number {
  if (v === undefined) return def;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new UsageError(`--${flag} must be an integer ≥ ${min}, got ${JSON.stringify(v)}`);
  return n;
}

function medianFiles(v: string): string[] {
  const files = v.split(',').map((f) => f.trim()).filter((f) => f !== '');
  if (files.length < 2) throw new UsageError(`--medians needs at least two results files, comma-separated, got ${JSON.stringify(v)}`);
  return files;
}

/** undefined for --help. */
export function parseBenchArgs(argv: string[]): BenchOptions | undefined {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      options: {
        n: { type: 'string' },
        concurrency: { type: 'string' },
        'idle-seconds': { type: 'string' },
        'settle-seconds': { type: 'string' },
        contenders: { type: 'string' },
        'phase-timeout-seconds': { type: 'string' },
        'out-dir': { type: 'string' },
        'bin-dir': { type: 'string' },
        'helm-operator-bin': { type: 'string' },
        'no-build': { type: 'boolean' },
        smoke: { type: 'boolean' },
        keep: { type: 'boolean' },
        render: { type: 'string' },
        medians: { type: 'string' },
        chart: { type: 'string' },
        'chart-source': { type: 'string' },
        'chart-refresh-seconds': { type: 'string' },
        scenarios: { type: 'string' },
        replicas: { type: 'string' },
        'helm-mode': { type: 'string' },
        'helm-workers': { type: 'string' },
        'memory-limit-mib': { type: 'string' },
        'values-from-secrets': { type: 'string' },
        outputs: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (err) {
    throw new UsageError(errorMessage(err));
  }
  if (values.help === true) return undefined;
  const smoke = values.smoke === true;
  const n = positiveInt('n', values.n, smoke ? 5 : 200);
  const contenders = (values.contenders ?? CONTENDERS.join(',')).split(',').map((s) => s.trim()).filter((s) => s !== '');
  for (const c of contenders) {
    if (!(KNOWN_CONTENDERS as readonly string[]).includes(c)) throw new UsageError(`unknown contender ${JSON.stringify(c)} (known: ${KNOWN_CONTENDERS.join(', ')})`);
  }
  const chart = values.chart ?? 'webapp';
  if (!(CHART_NAMES as readonly string[]).includes(chart)) throw new UsageError(`--chart must be one of ${CHART_NAMES.join(', ')}, got ${JSON.stringify(chart)}`);
  const chartSource = values['chart-source'] ?? 'local';
  if (chartSource !== 'local' && chartSource !== 'oci') throw new UsageError(`--chart-source must be local or oci, got ${JSON.stringify(chartSource)}`);
  if (new Set(contenders).size !== contenders.length || contenders.length === 0) throw new UsageError('--contenders must name each contender at most once');
  const scenarios = values.scenarios === undefined ? [...DEFAULT_SCENARIOS] : values.scenarios.split(',').map((x) => x.trim()).filter((x) => x !== '');
  for (const x of scenarios) {
    if (!(KNOWN_SCENARIOS as readonly string[]).includes(x)) throw new UsageError(`unknown scenario ${JSON.stringify(x)} (known: ${KNOWN_SCENARIOS.join(', ')})`);
  }
  if (scenarios[0] !== 'create' || new Set(scenarios).size !== scenarios.length) {
    throw new UsageError('--scenarios must start with create (the others need the releases it makes) and name each scenario at most once');
  }
  if (values['memory-limit-mib'] !== undefined && values.replicas !== undefined && values.replicas !== '1') {
    throw new UsageError('--memory-limit-mib runs one operator process per contender: it cannot be combined with --replicas');
  }
  const valuesFromSecrets = values['values-from-secrets'] === undefined ? undefined : positiveInt('values-from-secrets', values['values-from-secrets'], 1);
  if (valuesFromSecrets !== undefined && contenders.some((c) => c !== 'chartpilot')) {
    throw new UsageError('--values-from-secrets is chartpilot\'s valuesFrom: run it with --contenders chartpilot (compare with a run without the flag)');
  }
  if (values.outputs === true && (contenders.some((c) => c !== 'chartpilot') || chart !== 'configmap')) {
    throw new UsageError('--outputs is chartpilot\'s outputs over the configmap chart: run it with --contenders chartpilot --chart configmap');
  }
  if (scenarios.includes('reference-change') && valuesFromSecrets === undefined) throw new UsageError('the reference-change scenario needs --values-from-secrets K');
  const helmMode = values['helm-mode'];
  if (helmMode !== undefined && helmMode !== 'warm' && helmMode !== 'engine' && helmMode !== 'cli') throw new UsageError(`--helm-mode must be warm, engine or cli, got ${JSON.stringify(helmMode)}`);
  return {
    n,
    concurrency: positiveInt('concurrency', values.concurrency, 10),
    idleSeconds: positiveInt('idle-seconds', values['idle-seconds'], smoke ? 10 : 300),
    settleSeconds: positiveInt('settle-seconds', values['settle-seconds'], smoke ? 2 : 15, 0),
    contenders: contenders as ContenderName[],
    outDir: values['out-dir'],
    phaseTimeoutSeconds: positiveInt('phase-timeout-seconds', values['phase-timeout-seconds'], Math.max(600, 6 * n)),
    binDir: values['bin-dir'],
    build: values['no-build'] !== true && !smoke,
    helmOperatorBin: values['helm-operator-bin'],
    keep: values.keep === true,
    render: values.render,
    medians: values.medians === undefined ? undefined : medianFiles(values.medians),
    chart: chart as ChartName,
    chartSource,
    chartRefreshSeconds: positiveInt('chart-refresh-seconds', values['chart-refresh-seconds'], 600),
    scenarios: scenarios as BenchScenario[],
    replicas: positiveInt('replicas', values.replicas, 1),
    helmMode,
    helmWorkers: values['helm-workers'] === undefined ? undefined : positiveInt('helm-workers', values['helm-workers'], 1),
    memoryLimitMiB: values['memory-limit-mib'] === undefined ? undefined : positiveInt('memory-limit-mib', values['memory-limit-mib'], 0, 16),
    valuesFromSecrets,
    outputs: values.outputs === true,
  };
}
