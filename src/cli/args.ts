/**
 * Flags of `chartpilot run`: the names, forms and defaults of operator-sdk's `helm-operator run`
 * (so a Deployment switches by changing its image), plus `--log-level` and `--helm-timeout`.
 * One table (RUN_FLAGS) says what each flag is called, takes and defaults to; parsing and --help
 * come from it (flag-table.ts). Everything wrong with the command line is reported at once, one
 * line per problem.
 */
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDnsLabel, isDnsSubdomain } from '../config/labels.js';
import { parseGoDuration } from '../lib/duration.js';
import { floorText, PERIOD_FLOORS } from '../lib/period-floors.js';
import { DEFAULT_STALL_AFTER_FAILURES } from '../core/kstatus.js';
import { METRICS_MAX_CONNECTIONS, METRICS_MAX_PER_PEER } from '../observe/servers.js';
import { parseBindAddress, type BindAddress } from './bind-address.js';
import type { LogFormat } from '../observe/logger.js';
import type { ResourceMetricsDetail } from '../observe/resource-metrics.js';
import { envHelpLines, flagHelpLines, parseFlags, type EnvDef, type Env, type FlagDef, type FlagValues } from './flag-table.js';

export { parseBindAddress, type BindAddress, type BindAddressResult } from './bind-address.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type { LogFormat };

export interface RunOptions {
  readonly watchesFile: string;
  /** `--watches-file` was given; else `run` looks in the places watches-location.ts names. */
  readonly watchesFileGiven: boolean;
  /** Default requeue period for entries without `reconcilePeriod`; 0 = no periodic requeue. */
  readonly reconcilePeriodMs: number;
  readonly maxConcurrentReconciles: number;
  /** `--stall-after-failures`: failed attempts in a row before a CR is Stalled (kstatus); 0 = never. */
  readonly stallAfterFailures: number;
  /** Undefined when disabled with `0`. */
  readonly metricsBindAddress: BindAddress | undefined;
  /** `--metrics-max-connections`. */
  readonly metricsMaxConnections: number;
  /** Undefined when disabled with `0`. */
  readonly healthProbeBindAddress: BindAddress | undefined;
  readonly leaderElect: boolean;
  /** '' → to be derived by the caller. */
  readonly leaderElectionId: string;
  /** '' → the operator's own namespace. */
  readonly leaderElectionNamespace: string;
  /** `--shards`: replicas share the CRs (a ring named by the leader election id) instead of one leading. */
  readonly shards: boolean;
  /** `--shard-lease-duration`: how long a ring member's Lease lasts unrenewed. */
  readonly shardLeaseDurationMs: number;
  readonly logLevel: LogLevel;
  /** `--log-format` (or operator-sdk's --zap-encoder / --zap-devel): JSON lines or readable ones. */
  readonly logFormat: LogFormat;
  /** Each helm call is killed after this long. */
  readonly helmTimeoutMs: number;
  /** Charts from registries: how often each is re-resolved (entries without chartRefreshInterval); 0 = once. */
  readonly chartRefreshIntervalMs: number;
  /** Where charts from registries are cached (content-addressed). */
  readonly chartCacheDir: string;
  /** From WATCH_NAMESPACE; [] = all namespaces. */
  readonly watchNamespaces: readonly string[];
  /** From HELM_BIN; default `helm`, found on PATH. */
  readonly helmBin: string;
  /** `--helm-mode`; undefined: engine, else warm, when a chartpilot-helm is found, else cli. */
  readonly helmMode: 'warm' | 'engine' | 'cli' | undefined;
  /** `--helm-workers`: at most this many warm helm workers; undefined: two per CPU (helm-setup.ts). */
  readonly helmWorkers: number | undefined;
  /** `--resource-metrics`: which CRs have per-CR series. */
  readonly resourceMetrics: ResourceMetricsDetail;
  /** `--kubeconfig`; undefined → KUBECONFIG, ~/.kube/config or in-cluster, as usual. */
  readonly kubeconfig: string | undefined;
  /** operator-sdk `--suppress-override-values`: no OverrideValuesInUse Warning events. */
  readonly suppressOverrideValues: boolean;
  /** `--default-service-account`: what entries without `serviceAccount` run as; undefined = the operator. */
  readonly defaultServiceAccount: string | undefined;
  /** `--seal-key-secret`: the Secret in the operator's namespace holding the master seal key. */
  readonly sealKeySecret: string;
  /** `--adopt-existing-releases`: at start, adopt the watched CRs' releases chartpilot did not seal (as `chartpilot adopt`). */
  readonly adoptExistingReleases: boolean;
  /** operator-sdk `--metrics-secure`: serve metrics over HTTPS. */
  readonly metricsSecure: boolean;
  /** operator-sdk `--metrics-require-rbac`: authenticate and authorize metrics scrapes. */
  readonly metricsRequireRbac: boolean;
  /** `--metrics-cert-path` and the file names in it; undefined = self-signed (when secure). */
  readonly metricsCertificate: { readonly dir: string; readonly certName: string; readonly keyName: string } | undefined;
  /** operator-sdk `--enable-http2`: offer h2 on the HTTPS metrics server. */
  readonly enableHttp2: boolean;
  /** Ansible kinds: ansible-operator's run flags (see AnsibleRunOptions). */
  readonly ansible: AnsibleRunOptions;
  /** `--graceful-shutdown-timeout`: how long running helm calls and Ansible runs may finish on shutdown before they are stopped. */
  readonly gracefulShutdownTimeoutMs: number;
  /**
   * Flags given that operator-sdk knows but that change nothing here (e.g. `--zap-encoder`);
   * the caller should log them once so nobody believes they took effect.
   */
  readonly ignoredFlags: readonly string[];
}

/** ansible-operator `run`'s flags, with its meanings. */
export interface AnsibleRunOptions {
  /** `--ansible-verbosity` (0-7, default 2); a CR's verbosity annotation wins. */
  readonly verbosity: number;
  /** `--ansible-roles-path`: colon-separated; also where watches.yaml roles are looked for (ANSIBLE_ROLES_PATH). */
  readonly rolesPath: readonly string[];
  /** `--ansible-collections-path`: colon-separated, before the runtime's own collections. */
  readonly collectionsPath: readonly string[];
  /** `--ansible-args`: extra ansible-runner arguments, split at white space. */
  readonly args: readonly string[];
  /** `--inject-owner-ref` (default true): objects a run creates get an ownerReference to the CR. */
  readonly injectOwnerRef: boolean;
  /** `--proxy-port` (default 8888): the runs' API proxy on loopback; 0 = any free port. */
  readonly proxyPort: number;
  /** `--ansible-run-timeout` (chartpilot): each run is killed after this long and reported. */
  readonly runTimeoutMs: number;
}

export type ParseRunResult =
  | { ok: true; options: RunOptions }
  | { ok: false; problems: string[]; help?: boolean };

// Order is the order of --help (and of docs/operations/cli.md, generated from it).
export const RUN_FLAGS = [
  {
    name: 'watches-file',
    type: 'string',
    placeholder: 'path',
    default: './watches.yaml',
    defaultHelp: './watches.yaml, else $HOME/watches.yaml, else /opt/chartpilot/watches.yaml',
    help: 'Path to the watches file',
  },
  {
    name: 'reconcile-period',
    type: 'string',
    placeholder: 'duration',
    default: '1m',
    help: 'Default period between reconciles of each resource, a Go duration; 0 disables',
  },
  {
    name: 'max-concurrent-reconciles',
    type: 'string',
    placeholder: 'int',
    default: String(availableParallelism()),
    defaultHelp: 'the number of CPUs',
    example: '4',
    help: 'Maximum concurrent reconciles running helm per controller (status refreshes and the work around a helm call overlap them)',
  },
  {
    name: 'metrics-bind-address',
    type: 'string',
    placeholder: 'addr',
    default: ':8080',
    aliases: [{ name: 'metrics-addr', why: '--metrics-addr is the deprecated spelling' }],
    help: 'Address the metrics endpoint binds to; 0 disables',
  },
  {
    name: 'resource-metrics',
    type: 'string',
    placeholder: 'detail',
    choices: ['attention', 'all'],
    default: 'attention',
    example: 'all',
    help: "Which custom resources have per-resource series: attention, only those not Ready or failed, irreconcilable, paused, drifted (the alerts' and a person's lookups; every resource is counted in chartpilot_resources and chartpilot_releases); all, every resource (about 7 series each)",
  },
  {
    name: 'metrics-max-connections',
    type: 'string',
    placeholder: 'int',
    default: String(METRICS_MAX_CONNECTIONS),
    help: `Connections the metrics server holds open at most, all peers together (one address at most ${String(METRICS_MAX_PER_PEER)}); more are closed at once (the probe server has caps of its own)`,
  },
  {
    name: 'health-probe-bind-address',
    type: 'string',
    placeholder: 'addr',
    default: ':8081',
    help: 'Address the /healthz and /readyz endpoints bind to; 0 disables',
  },
  {
    name: 'leader-elect',
    type: 'boolean',
    default: false,
    aliases: [{ name: 'enable-leader-election', why: '--enable-leader-election is the deprecated spelling' }],
    help: 'Enable leader election, so only one replica acts at a time',
  },
  {
    name: 'leader-election-id',
    type: 'string',
    placeholder: 'name',
    // '' = derived by the caller.
    default: '',
    defaultHelp: 'derived from the watched kinds',
    // operator-sdk's deprecated fallback, honoured so old Deployments keep their Lease name.
    env: { name: 'OPERATOR_NAME', help: 'Deprecated: leader election id when --leader-election-id is not given' },
    help: 'Name of the Lease used for leader election',
  },
  {
    name: 'leader-election-namespace',
    type: 'string',
    placeholder: 'ns',
    // '' = the operator's own, detected by the caller.
    default: '',
    defaultHelp: "the operator's namespace",
    help: 'Namespace of the leader election Lease',
  },
  {
    name: 'shards',
    type: 'boolean',
    default: false,
    help: 'Share the resources among all live replicas (a ring of Leases named by --leader-election-id) instead of one leader doing all the work',
  },
  {
    name: 'shard-lease-duration',
    type: 'string',
    placeholder: 'duration',
    default: '15s',
    help: "With --shards: how long a replica's Lease lasts unrenewed; a replica silent for two of them is judged gone and its resources move (whole seconds, at least 2s)",
  },
  { name: 'log-level', type: 'string', placeholder: 'level', default: 'info', help: 'Log level: debug, info, warn or error' },
  {
    name: 'log-format',
    type: 'string',
    placeholder: 'format',
    default: 'json',
    choices: ['json', 'console'],
    help: 'Log lines as JSON (for log collectors) or as readable text for a terminal (console)',
  },
  {
    name: 'helm-timeout',
    type: 'string',
    placeholder: 'duration',
    default: '5m',
    help: 'Kill any single helm call that runs longer than this Go duration',
  },
  {
    name: 'helm-mode',
    type: 'string',
    placeholder: 'mode',
    choices: ['engine', 'warm', 'cli'],
    defaultHelp: 'engine when a chartpilot-helm with one is found, else warm when a chartpilot-helm is, else cli',
    example: 'cli',
    help: "engine: one chartpilot-helm process runs helm's actions, calls concurrently; warm: helm calls run in long-lived chartpilot-helm workers, one call each (see --helm-workers); cli: a helm process per call",
  },
  {
    name: 'helm-workers',
    type: 'string',
    placeholder: 'int',
    defaultHelp: 'two per CPU',
    example: '4',
    help: 'At most this many warm helm workers, never more than the helm slots (each holds ~20 MiB of its own); calls beyond them wait for a free one',
  },
  {
    name: 'chart-refresh-interval',
    type: 'string',
    placeholder: 'duration',
    default: '10m',
    help: 'How often a chart from a registry is resolved again (entries without chartRefreshInterval); 0 resolves once',
  },
  {
    name: 'chart-cache-dir',
    type: 'string',
    placeholder: 'path',
    default: '',
    defaultHelp: '$TMPDIR/chartpilot-charts',
    help: 'Where charts pulled from registries are kept (content-addressed; must be writable)',
  },
  {
    name: 'kubeconfig',
    type: 'string',
    placeholder: 'path',
    defaultHelp: '$KUBECONFIG, ~/.kube/config or the in-cluster service account',
    help: 'Kubeconfig file',
  },
  {
    name: 'stall-after-failures',
    type: 'string',
    placeholder: 'int',
    default: String(DEFAULT_STALL_AFTER_FAILURES),
    help: 'After this many failed installs, upgrades or Ansible runs in a row with the same spec and chart, a resource is Stalled (kstatus Failed; retries go on with backoff); 0 = never, failures stay Reconciling',
  },
  { name: 'suppress-override-values', type: 'boolean', default: false, help: 'Emit no OverrideValuesInUse Warning events for watches.yaml overrideValues' },
  {
    name: 'default-service-account',
    type: 'string',
    placeholder: 'name',
    defaultHelp: "none: the operator's own identity",
    help: "Run every helm action for a resource as this ServiceAccount of the resource's namespace (a watches entry's serviceAccount wins)",
  },
  {
    name: 'seal-key-secret',
    type: 'string',
    placeholder: 'name',
    default: 'chartpilot-seal-key',
    help: "The Secret, in the operator's namespace, holding the key that proves which Helm records chartpilot wrote (made at first start)",
  },
  {
    name: 'adopt-existing-releases',
    type: 'boolean',
    default: false,
    help: 'At start, adopt the releases of watched resources that chartpilot did not write (operator-sdk, older chartpilot), as `chartpilot adopt` does',
  },
  {
    name: 'metrics-secure',
    type: 'boolean',
    default: false,
    help: 'Serve /metrics over HTTPS (TLS 1.2+), with a self-signed certificate unless --metrics-cert-path is given',
  },
  {
    name: 'metrics-require-rbac',
    type: 'boolean',
    default: false,
    help: 'Answer only scrapes whose bearer token may get /metrics (TokenReview + SubjectAccessReview); needs --metrics-secure',
  },
  {
    name: 'metrics-cert-path',
    type: 'string',
    placeholder: 'dir',
    example: '/tmp/k8s-metrics-server/metrics-certs',
    help: 'Directory of a mounted metrics certificate (re-read when it changes); without it a self-signed one is made',
  },
  { name: 'metrics-cert-name', type: 'string', placeholder: 'file', default: 'tls.crt', help: 'Certificate file in --metrics-cert-path' },
  { name: 'metrics-cert-key', type: 'string', placeholder: 'file', default: 'tls.key', help: 'Private key file in --metrics-cert-path' },
  { name: 'enable-http2', type: 'boolean', default: false, help: 'Offer HTTP/2 on the HTTPS metrics server (HTTP/1.1 only otherwise, as in controller-runtime)' },
  {
    name: 'zap-log-level',
    type: 'string',
    placeholder: 'level',
    example: 'info',
    help: 'operator-sdk spelling of --log-level (debug, info, error, panic, or an integer > 0 for debug)',
  },
  { name: 'zap-devel', type: 'boolean', help: 'operator-sdk development logging: debug level and readable lines (--log-format console) unless --zap-encoder says otherwise' },
  {
    name: 'zap-encoder',
    type: 'string',
    placeholder: 'enc',
    choices: ['json', 'console'],
    help: 'operator-sdk spelling of --log-format (json or console)',
  },
  {
    name: 'zap-stacktrace-level',
    type: 'string',
    placeholder: 'level',
    choices: ['debug', 'info', 'warn', 'error', 'dpanic', 'panic', 'fatal'],
    ignored: true,
    help: 'Accepted for operator-sdk compatibility; no effect',
  },
  {
    name: 'zap-time-encoding',
    type: 'string',
    placeholder: 'enc',
    choices: ['epoch', 'millis', 'nano', 'iso8601', 'rfc3339', 'rfc3339nano'],
    ignored: true,
    help: 'Accepted for operator-sdk compatibility; no effect',
  },
  {
    name: 'graceful-shutdown-timeout',
    type: 'string',
    placeholder: 'duration',
    default: '20s',
    help: 'On SIGTERM, how long running helm calls and Ansible runs may take to finish before they are stopped (ansible-operator default 30s; 20s stays within the pod grace period)',
  },
  { name: 'ansible-verbosity', type: 'string', placeholder: 'int', default: '2', help: 'Ansible kinds: run verbosity 0-7 (a resource annotation ansible.sdk.operatorframework.io/verbosity wins)' },
  { name: 'ansible-roles-path', type: 'string', placeholder: 'paths', default: '', defaultHelp: 'roles/ next to the watches file', help: 'Ansible kinds: colon-separated roles paths (ANSIBLE_ROLES_PATH)' },
  {
    name: 'ansible-collections-path',
    type: 'string',
    placeholder: 'paths',
    default: '',
    defaultHelp: "the Ansible runtime's collections",
    help: 'Ansible kinds: colon-separated collections paths, looked at before the runtime\'s own',
  },
  { name: 'ansible-args', type: 'string', placeholder: 'args', default: '', help: 'Ansible kinds: extra ansible-runner arguments, separated by spaces' },
  { name: 'inject-owner-ref', type: 'boolean', default: true, help: "Ansible kinds: objects a run creates in the resource's namespace get an ownerReference to it" },
  { name: 'proxy-port', type: 'string', placeholder: 'int', default: '8888', help: "port on 127.0.0.1 of the API proxy helm and Ansible runs talk through, when there are Ansible kinds (with Helm kinds only: a free port); 0 picks a free one" },
  {
    name: 'ansible-run-timeout',
    type: 'string',
    placeholder: 'duration',
    default: '10m',
    help: 'Ansible kinds: kill a run that takes longer than this Go duration and report it on the resource',
  },
  { name: 'help', type: 'boolean', short: 'h', help: 'Show this help' },
] as const satisfies readonly FlagDef[];

type RunFlag = (typeof RUN_FLAGS)[number]['name'];
type Flags = FlagValues<RunFlag>;

/** Settings only the environment sets. */
const WATCH_NAMESPACE = {
  name: 'WATCH_NAMESPACE',
  help: 'Comma-separated namespaces to watch; empty or unset = all namespaces',
} as const satisfies EnvDef;
const HELM_BIN = {
  name: 'HELM_BIN',
  default: 'helm',
  defaultHelp: 'chartpilot-helm (kept warm) on PATH or in the chartpilot cache, else helm on PATH, the cache or the npm package',
  help: 'The helm binary to run (a chartpilot-helm is kept warm; any other helm runs as a process per call)',
} as const satisfies EnvDef;

/** The environment-only settings of `run`, in --help order. */
export const RUN_ENV: readonly EnvDef[] = [WATCH_NAMESPACE, HELM_BIN];

export const RUN_HELP = [
  'Usage: chartpilot run [flags]',
  '',
  'Runs the operator: one controller per watches.yaml entry, each installing its chart for every',
  'custom resource of its kind.',
  '',
  'Flags:',
  ...flagHelpLines(RUN_FLAGS),
  '',
  'Flags take --flag=value or --flag value; boolean flags also take --flag=true|false.',
  '',
  'Environment:',
  ...envHelpLines(RUN_ENV, RUN_FLAGS),
  '',
].join('\n');

export function parseRunArgs(argv: readonly string[], env: Env): ParseRunResult {
  const parsed = parseFlags(RUN_FLAGS, argv, env, 'chartpilot run');
  if (parsed.help) return { ok: false, problems: [], help: true };
  const { values, problems } = parsed;
  const options = readRunOptions(values, env, problems);
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, options };
}

/** The options the flags and environment say, checked in this order (the order problems are listed in). */
function readRunOptions(f: Flags, env: Env, problems: string[]): RunOptions {
  const watchesFile = f.defaulted('watches-file');
  if (watchesFile === '') problems.push('--watches-file is empty; give the path of watches.yaml');
  const reconcilePeriodMs = duration(f, 'reconcile-period', true, problems, PERIOD_FLOORS.reconcilePeriodMs);
  const helmTimeoutMs = duration(f, 'helm-timeout', false, problems);
  const helmModeText = f.choice('helm-mode', problems);
  const helmMode = helmModeText === 'warm' || helmModeText === 'engine' || helmModeText === 'cli' ? helmModeText : undefined;
  const helmWorkers = f.string('helm-workers') === undefined ? undefined : wholeNumber(f, 'helm-workers', problems);
  const resourceMetrics: ResourceMetricsDetail = f.choice('resource-metrics', problems) === 'all' ? 'all' : 'attention';
  const chartRefreshIntervalMs = duration(f, 'chart-refresh-interval', true, problems, PERIOD_FLOORS.chartRefreshIntervalMs);
  const chartCacheDir = f.defaulted('chart-cache-dir') || join(tmpdir(), 'chartpilot-charts');
  const maxConcurrentReconciles = wholeNumber(f, 'max-concurrent-reconciles', problems);
  const stallAfterFailures = countOf(f, 'stall-after-failures', problems);
  const metricsBindAddress = bindAddress(f, 'metrics-bind-address', problems);
  const metricsMaxConnections = wholeNumber(f, 'metrics-max-connections', problems);
  const healthProbeBindAddress = bindAddress(f, 'health-probe-bind-address', problems);

  const leaderElectionId = f.defaulted('leader-election-id');
  if (leaderElectionId !== '' && !isDnsSubdomain(leaderElectionId)) {
    problems.push(
      `${f.label('leader-election-id')} is "${leaderElectionId}"; a Lease name must be a lower-case DNS name (letters, digits, '-', '.'), e.g. my-operator.example.com`,
    );
  }
  const leaderElectionNamespace = f.defaulted('leader-election-namespace');
  if (leaderElectionNamespace !== '' && !isDnsLabel(leaderElectionNamespace)) {
    problems.push(`--leader-election-namespace is "${leaderElectionNamespace}"; a namespace name has lower-case letters, digits and '-'`);
  }

  const shards = f.boolean('shards');
  const shardLeaseDurationMs = duration(f, 'shard-lease-duration', false, problems);
  if (shardLeaseDurationMs > 0 && (shardLeaseDurationMs < 2000 || shardLeaseDurationMs % 1000 !== 0)) {
    problems.push(`--shard-lease-duration is "${f.defaulted('shard-lease-duration')}"; a Lease lasts whole seconds, at least 2s, e.g. --shard-lease-duration=15s`);
  }
  if (shards && leaderElectionId !== '' && (leaderElectionId.length > 63 || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/u.test(leaderElectionId))) {
    problems.push(
      `--shards: the ring name --leader-election-id "${leaderElectionId}" must fit a label name: at most 63 lower-case letters, digits or '-' ` +
        `(CRs get the label shard.chartpilot.io/<ring>); choose a shorter id such as my-operator`,
    );
  }

  if (f.has('log-level') && f.has('zap-log-level')) problems.push('only one of --log-level and --zap-log-level may be set (they set the same thing)');
  const logLevel = readLogLevel(f, problems);
  if (f.has('log-format') && f.has('zap-encoder')) problems.push('only one of --log-format and --zap-encoder may be set (they set the same thing)');
  const logFormat = readLogFormat(f, problems);
  f.choice('zap-stacktrace-level', problems);
  f.choice('zap-time-encoding', problems);

  const metricsSecure = f.boolean('metrics-secure');
  const metricsRequireRbac = f.boolean('metrics-require-rbac');
  if (metricsRequireRbac && !metricsSecure) {
    problems.push('--metrics-require-rbac needs --metrics-secure: scrapes carry bearer tokens, which must not cross the network in clear; add --metrics-secure');
  }
  const metricsCertificate = readMetricsCertificate(f, metricsSecure, problems);
  const ignoredFlags = f.ignored();
  // Only the HTTPS server speaks HTTP/2 (as in controller-runtime): say so rather than pretend.
  if (f.boolean('enable-http2') && !metricsSecure) ignoredFlags.push('--enable-http2 (without --metrics-secure)');

  const defaultServiceAccount = f.string('default-service-account');
  if (defaultServiceAccount !== undefined && !isDnsSubdomain(defaultServiceAccount)) {
    problems.push(
      `--default-service-account is "${defaultServiceAccount}"; give the name of a ServiceAccount (lower-case DNS name, e.g. tenant) that each watched namespace has, or leave the flag out`,
    );
  }

  const sealKeySecret = f.defaulted('seal-key-secret');
  if (!isDnsSubdomain(sealKeySecret)) problems.push(`--seal-key-secret is "${sealKeySecret}"; give a Secret name (lower-case DNS name), or leave the flag out`);

  const kubeconfig = f.string('kubeconfig');
  if (kubeconfig === '') problems.push('--kubeconfig is empty; give a kubeconfig path or leave the flag out');

  const gracefulShutdownTimeoutMs = duration(f, 'graceful-shutdown-timeout', true, problems);
  const ansible = readAnsibleOptions(f, problems);

  const watchNamespaces = readWatchNamespaces(env[WATCH_NAMESPACE.name], problems);
  const helmBinText = env[HELM_BIN.name]?.trim();
  const helmBin = helmBinText === undefined || helmBinText === '' ? HELM_BIN.default : helmBinText;

  return {
    watchesFile,
    watchesFileGiven: f.has('watches-file'),
    reconcilePeriodMs,
    maxConcurrentReconciles,
    stallAfterFailures,
    metricsBindAddress,
    metricsMaxConnections,
    healthProbeBindAddress,
    leaderElect: f.boolean('leader-elect'),
    leaderElectionId,
    leaderElectionNamespace,
    shards,
    shardLeaseDurationMs,
    logLevel,
    logFormat,
    helmTimeoutMs,
    chartRefreshIntervalMs,
    chartCacheDir,
    watchNamespaces,
    helmBin,
    helmMode,
    helmWorkers,
    resourceMetrics,
    kubeconfig,
    suppressOverrideValues: f.boolean('suppress-override-values'),
    defaultServiceAccount,
    sealKeySecret,
    adoptExistingReleases: f.boolean('adopt-existing-releases'),
    metricsSecure,
    metricsRequireRbac,
    metricsCertificate,
    enableHttp2: f.boolean('enable-http2'),
    ansible,
    gracefulShutdownTimeoutMs,
    ignoredFlags,
  };
}

function readAnsibleOptions(f: Flags, problems: string[]): AnsibleRunOptions {
  const verbosityText = f.defaulted('ansible-verbosity');
  if (!/^[0-7]$/u.test(verbosityText)) problems.push(`--ansible-verbosity is "${verbosityText}"; expected a whole number from 0 to 7`);
  const portText = f.defaulted('proxy-port');
  const port = Number(portText);
  if (!/^\d+$/u.test(portText) || port > 65535) problems.push(`--proxy-port is "${portText}"; expected a port number (0-65535; 0 picks a free one)`);
  const paths = (name: 'ansible-roles-path' | 'ansible-collections-path'): string[] => f.defaulted(name).split(':').filter((p) => p !== '');
  return {
    verbosity: /^[0-7]$/u.test(verbosityText) ? Number(verbosityText) : 2,
    rolesPath: paths('ansible-roles-path'),
    collectionsPath: paths('ansible-collections-path'),
    args: f.defaulted('ansible-args').split(/\s+/u).filter((a) => a !== ''),
    injectOwnerRef: f.boolean('inject-owner-ref'),
    proxyPort: Number.isSafeInteger(port) && port <= 65535 ? port : 8888,
    runTimeoutMs: duration(f, 'ansible-run-timeout', false, problems),
  };
}

function readMetricsCertificate(f: Flags, secure: boolean, problems: string[]): RunOptions['metricsCertificate'] {
  const dir = f.string('metrics-cert-path');
  for (const name of ['metrics-cert-name', 'metrics-cert-key'] as const) {
    const file = f.defaulted(name);
    if (file === '' || file.includes('/')) problems.push(`--${name} is "${file}"; give a file name inside --metrics-cert-path, e.g. --${name}=${f.example(name)}`);
    else if (f.has(name) && dir === undefined) problems.push(`--${name} is only read with --metrics-cert-path; add the directory holding ${file}`);
  }
  if (dir === undefined) return undefined;
  if (dir === '') {
    problems.push('--metrics-cert-path is empty; give the directory of the mounted certificate, or leave the flag out for a self-signed one');
    return undefined;
  }
  if (!secure) problems.push('--metrics-cert-path needs --metrics-secure: the certificate is only used for HTTPS');
  return { dir, certName: f.defaulted('metrics-cert-name'), keyName: f.defaulted('metrics-cert-key') };
}

/** `floorMs`: a period; below it (0 aside, when allowed: off) is an error naming the minimum. */
function duration(f: Flags, name: RunFlag, zeroAllowed: boolean, problems: string[], floorMs = 0): number {
  const text = f.defaulted(name);
  const parsed = parseGoDuration(text);
  if (!parsed.ok) {
    problems.push(`${f.label(name)} ${parsed.reason}`);
    return 0;
  }
  if (parsed.ms < 0 || (!zeroAllowed && parsed.ms === 0)) {
    problems.push(`${f.label(name)} is "${text}"; expected a ${zeroAllowed ? 'duration of 0 or more' : 'positive duration'}, e.g. ${f.label(name)}=${f.example(name)}`);
    return 0;
  }
  if (parsed.ms > 0 && parsed.ms < floorMs) {
    problems.push(
      `${f.label(name)} is "${text}", below the minimum of ${floorText(floorMs)} (each period costs work per resource); ` +
        `use ${floorText(floorMs)} or more${zeroAllowed ? ', or 0 to turn it off' : ''}`,
    );
    return 0;
  }
  return parsed.ms;
}

function wholeNumber(f: Flags, name: RunFlag, problems: string[]): number {
  const text = f.defaulted(name);
  if (/^\d+$/u.test(text) && Number(text) >= 1 && Number.isSafeInteger(Number(text))) return Number(text);
  problems.push(`${f.label(name)} is "${text}"; expected a whole number of at least 1`);
  return 1;
}

/** A whole number, 0 allowed (it means "never"). */
function countOf(f: Flags, name: RunFlag, problems: string[]): number {
  const text = f.defaulted(name);
  if (/^\d+$/u.test(text) && Number.isSafeInteger(Number(text))) return Number(text);
  problems.push(`${f.label(name)} is "${text}"; expected a whole number (0 for never)`);
  return 0;
}

function bindAddress(f: Flags, name: RunFlag, problems: string[]): BindAddress | undefined {
  const parsed = parseBindAddress(f.defaulted(name));
  if (parsed.ok) return parsed.address;
  problems.push(`${f.label(name)} ${parsed.reason}`);
  return undefined;
}

const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];

/** --log-format if given, else --zap-encoder, else readable lines with --zap-devel (zap's development config), else JSON. */
function readLogFormat(f: Flags, problems: string[]): LogFormat {
  const format = f.choice('log-format', problems);
  const encoder = f.choice('zap-encoder', problems);
  const given = f.has('log-format') ? format : f.has('zap-encoder') ? encoder : f.boolean('zap-devel') ? 'console' : format;
  return given === 'console' ? 'console' : 'json';
}

/** --log-level if given, else --zap-log-level, else --zap-devel, else --log-level's default. */
function readLogLevel(f: Flags, problems: string[]): LogLevel {
  const zapLevel = f.string('zap-log-level');
  if (f.has('log-level') || (zapLevel === undefined && !f.boolean('zap-devel'))) {
    const level = f.defaulted('log-level');
    const match = LOG_LEVELS.find((l) => l === level.toLowerCase());
    if (match !== undefined) return match;
    problems.push(`--log-level is "${level}"; expected one of ${LOG_LEVELS.join(', ')}`);
    return 'info'; // unused: the problem fails the parse
  }
  if (zapLevel !== undefined) {
    const z = zapLevel.toLowerCase();
    if (z === 'debug' || z === 'info' || z === 'warn' || z === 'error') return z;
    if (z === 'dpanic' || z === 'panic' || z === 'fatal') return 'error';
    // controller-runtime: an integer N > 0 is debug verbosity N; we have a single debug level.
    if (/^\d+$/u.test(z) && Number(z) > 0) return 'debug';
    problems.push(`--zap-log-level is "${zapLevel}"; expected debug, info, warn, error, panic or an integer > 0`);
    return 'info'; // unused: the problem fails the parse
  }
  return 'debug'; // --zap-devel
}

function readWatchNamespaces(raw: string | undefined, problems: string[]): string[] {
  const out: string[] = [];
  for (const part of (raw ?? '').split(',')) {
    const ns = part.trim();
    if (ns === '' || out.includes(ns)) continue;
    if (!isDnsLabel(ns)) {
      problems.push(
        `WATCH_NAMESPACE holds "${ns}", which is not a namespace name (lower-case letters, digits and '-'); separate namespaces with commas, or leave it empty to watch all`,
      );
      continue;
    }
    out.push(ns);
  }
  return out;
}
