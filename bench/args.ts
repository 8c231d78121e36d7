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
  /** The chart every contender installs (bench/charts.ts). */
  chart: ChartName;
  /** Where chartpilot's chart comes from: the directory, or a real OCI registry next to the control plane. */
  chartSource: 'local' | 'oci';
  /** chartpilot's --chart-refresh-interval with --chart-source oci. */
  chartRefreshSeconds: number;
  /** chartpilot's --helm-mode; undefined: its default. */
  helmMode: 'warm' | 'cli' | undefined;
}

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
  --chart webapp|podinfo      the chart every contender installs: charts/webapp (default), or the
                              public podinfo chart 6.9.2, fetched once from the Go module proxy and
                              checked against a pinned sha256 (the shape of Flux's published benchmark)
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
  --helm-mode warm|cli        chartpilot's --helm-mode (default: its own, warm when chartpilot-helm is
                              in the bin dir); floor and chartpilot run chartpilot-helm when it is there
  --keep                      keep the scratch dir (logs of every process) after the run
  --render FILE               print the markdown of an earlier results-*.json, run nothing
  -h, --help                  this text
`;

export class UsageError extends Error {}

function positiveInt(flag: string, v: string | undefined, def: number, min = 1): number {
  if (v === undefined) return def;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new UsageError(`--${flag} must be an integer ≥ ${min}, got ${JSON.stringify(v)}`);
  return n;
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
        chart: { type: 'string' },
        'chart-source': { type: 'string' },
        'chart-refresh-seconds': { type: 'string' },
        'helm-mode': { type: 'string' },
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
  const helmMode = values['helm-mode'];
  if (helmMode !== undefined && helmMode !== 'warm' && helmMode !== 'cli') throw new UsageError(`--helm-mode must be warm or cli, got ${JSON.stringify(helmMode)}`);
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
    chart: chart as ChartName,
    chartSource,
    chartRefreshSeconds: positiveInt('chart-refresh-seconds', values['chart-refresh-seconds'], 600),
    helmMode,
  };
}
