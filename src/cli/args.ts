/**
 * Flags of `chartpilot run`: the names, forms and defaults of operator-sdk's `helm-operator run`
 * (so a Deployment switches by changing its image), plus `--log-level` and `--helm-timeout`.
 * Everything wrong with the command line is reported at once, one line per problem.
 */
import { isIP, isIPv6 } from 'node:net';
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { parseGoDuration } from '../lib/duration.js';
import { isDnsLabel, isDnsSubdomain } from '../config/labels.js';
import { closest } from '../config/suggest.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** A listen address; `host` undefined means every interface (`:8080`). */
export interface BindAddress {
  readonly host: string | undefined;
  readonly port: number;
  /** As given on the command line, for logs. */
  readonly text: string;
}

export interface RunOptions {
  readonly watchesFile: string;
  /** Default requeue period for entries without `reconcilePeriod`; 0 = no periodic requeue. */
  readonly reconcilePeriodMs: number;
  readonly maxConcurrentReconciles: number;
  /** Undefined when disabled with `0`. */
  readonly metricsBindAddress: BindAddress | undefined;
  /** Undefined when disabled with `0`. */
  readonly healthProbeBindAddress: BindAddress | undefined;
  readonly leaderElect: boolean;
  /** '' → to be derived by the caller. */
  readonly leaderElectionId: string;
  /** '' → the operator's own namespace. */
  readonly leaderElectionNamespace: string;
  readonly logLevel: LogLevel;
  /** Each helm call is killed after this long. */
  readonly helmTimeoutMs: number;
  /** From WATCH_NAMESPACE; [] = all namespaces. */
  readonly watchNamespaces: readonly string[];
  /** From HELM_BIN; default `helm`, found on PATH. */
  readonly helmBin: string;
  /** `--kubeconfig`; undefined → KUBECONFIG, ~/.kube/config or in-cluster, as usual. */
  readonly kubeconfig: string | undefined;
  /** operator-sdk `--suppress-override-values`: no OverrideValuesInUse Warning events. */
  readonly suppressOverrideValues: boolean;
  /** operator-sdk `--metrics-secure`: serve metrics over HTTPS. */
  readonly metricsSecure: boolean;
  /** operator-sdk `--metrics-require-rbac`: authenticate and authorize metrics scrapes. */
  readonly metricsRequireRbac: boolean;
  /**
   * Flags given that operator-sdk knows but that change nothing here (e.g. `--zap-encoder`);
   * the caller should log them once so nobody believes they took effect.
   */
  readonly ignoredFlags: readonly string[];
}

export type ParseRunResult =
  | { ok: true; options: RunOptions }
  | { ok: false; problems: string[]; help?: boolean };

type Env = Readonly<Record<string, string | undefined>>;

interface FlagSpec {
  readonly type: 'string' | 'boolean';
  /** Shown in help; omitted flags are accepted but not advertised. */
  readonly help?: string;
  readonly placeholder?: string;
}

// Order is the order of RUN_HELP.
const FLAGS = {
  'watches-file': { type: 'string', placeholder: 'path', help: 'Path to the watches file (default ./watches.yaml)' },
  'reconcile-period': {
    type: 'string',
    placeholder: 'duration',
    help: 'Default period between reconciles of each resource, a Go duration; 0 disables (default 1m)',
  },
  'max-concurrent-reconciles': {
    type: 'string',
    placeholder: 'int',
    help: 'Maximum concurrent reconciles per controller (default: the number of CPUs)',
  },
  'metrics-bind-address': {
    type: 'string',
    placeholder: 'addr',
    help: 'Address the metrics endpoint binds to; 0 disables (default :8080)',
  },
  'health-probe-bind-address': {
    type: 'string',
    placeholder: 'addr',
    help: 'Address the /healthz and /readyz endpoints bind to; 0 disables (default :8081)',
  },
  'leader-elect': { type: 'boolean', help: 'Enable leader election, so only one replica acts at a time (default false)' },
  'leader-election-id': {
    type: 'string',
    placeholder: 'name',
    help: 'Name of the Lease used for leader election (default: derived from the watched kinds)',
  },
  'leader-election-namespace': {
    type: 'string',
    placeholder: 'ns',
    help: "Namespace of the leader election Lease (default: the operator's namespace)",
  },
  'log-level': { type: 'string', placeholder: 'level', help: 'Log level: debug, info, warn or error (default info)' },
  'helm-timeout': {
    type: 'string',
    placeholder: 'duration',
    help: 'Kill any single helm call that runs longer than this Go duration (default 5m)',
  },
  kubeconfig: {
    type: 'string',
    placeholder: 'path',
    help: 'Kubeconfig file (default: $KUBECONFIG, ~/.kube/config or the in-cluster service account)',
  },
  'suppress-override-values': {
    type: 'boolean',
    help: 'Emit no OverrideValuesInUse Warning events for watches.yaml overrideValues (default false)',
  },
  'metrics-secure': { type: 'boolean', help: 'operator-sdk flag, not supported yet: refused at start (serve metrics behind a TLS proxy instead)' },
  'metrics-require-rbac': {
    type: 'boolean',
    help: 'operator-sdk flag, not supported yet: refused at start (protect /metrics with a NetworkPolicy or proxy)',
  },
  'zap-log-level': {
    type: 'string',
    placeholder: 'level',
    help: 'operator-sdk spelling of --log-level (debug, info, error, panic, or an integer > 0 for debug)',
  },
  'zap-devel': { type: 'boolean', help: 'operator-sdk development logging: sets the log level to debug' },
  'zap-encoder': { type: 'string', placeholder: 'enc', help: 'Accepted for operator-sdk compatibility; logs are always JSON' },
  'zap-stacktrace-level': { type: 'string', placeholder: 'level', help: 'Accepted for operator-sdk compatibility; no effect' },
  'zap-time-encoding': { type: 'string', placeholder: 'enc', help: 'Accepted for operator-sdk compatibility; no effect' },
  'enable-http2': { type: 'boolean', help: 'Accepted for operator-sdk compatibility; no effect' },
  // Deprecated operator-sdk spellings, still found in older manifests.
  'metrics-addr': { type: 'string' },
  'enable-leader-election': { type: 'boolean' },
  help: { type: 'boolean', help: 'Show this help' },
} as const satisfies Record<string, FlagSpec>;

type FlagName = keyof typeof FLAGS;
const FLAG_NAMES = Object.keys(FLAGS) as FlagName[];

const IGNORED: readonly FlagName[] = ['zap-encoder', 'zap-stacktrace-level', 'zap-time-encoding', 'enable-http2'];

export const RUN_HELP = [
  'Usage: chartpilot run [flags]',
  '',
  'Runs the operator: one controller per watches.yaml entry, each installing its chart for every',
  'custom resource of its kind.',
  '',
  'Flags:',
  ...FLAG_NAMES.flatMap((name) => {
    const spec: FlagSpec = FLAGS[name];
    if (spec.help === undefined) return [];
    const left = `  ${name === 'help' ? '-h, ' : ''}--${name}${spec.placeholder === undefined ? '' : ` <${spec.placeholder}>`}`;
    return [`${left.padEnd(44)}${spec.help}`];
  }),
  '',
  'Flags take --flag=value or --flag value; boolean flags also take --flag=true|false.',
  '',
  'Environment:',
  `  ${'WATCH_NAMESPACE'.padEnd(42)}Comma-separated namespaces to watch; empty or unset = all namespaces`,
  `  ${'HELM_BIN'.padEnd(42)}The helm binary to run (default: helm, found on PATH)`,
  `  ${'OPERATOR_NAME'.padEnd(42)}Deprecated: leader election id when --leader-election-id is not given`,
  '',
].join('\n');

// Go's strconv.ParseBool, which pflag uses for --flag=value on boolean flags.
const GO_TRUE = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const GO_FALSE = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False']);

export function parseRunArgs(argv: readonly string[], env: Env): ParseRunResult {
  const problems: string[] = [];
  // Non-strict parsing with tokens, then our own strict checks: node's strict mode stops at the
  // first mistake and cannot take Go's `--bool=false`; this reports every mistake and takes it.
  const { tokens } = parseArgs({
    args: [...argv],
    options: Object.fromEntries(
      FLAG_NAMES.map((n) => [n, n === 'help' ? { type: 'boolean', short: 'h' } : { type: FLAGS[n].type }]),
    ),
    strict: false,
    allowPositionals: true,
    tokens: true,
  });

  const given = new Map<FlagName, string | boolean>();
  let skipNextPositional = false;
  for (const token of tokens) {
    if (token.kind === 'option-terminator') continue;
    if (token.kind === 'positional') {
      if (!skipNextPositional) {
        problems.push(`unexpected argument "${token.value}"; chartpilot run takes only flags (see --help)`);
      }
      skipNextPositional = false;
      continue;
    }
    skipNextPositional = false;
    const name = FLAG_NAMES.find((n) => n === token.name);
    if (name === undefined) {
      const guess = closest(token.name, FLAG_NAMES);
      problems.push(
        `unknown flag ${token.rawName}` + (guess === undefined ? '; see chartpilot run --help' : `; did you mean --${guess}?`),
      );
      skipNextPositional = token.value === undefined; // its value, most likely
      continue;
    }
    if (name === 'help') return { ok: false, problems: [], help: true };
    const spec: FlagSpec = FLAGS[name];
    if (spec.type === 'boolean') {
      if (token.value === undefined) given.set(name, true);
      else if (GO_TRUE.has(token.value)) given.set(name, true);
      else if (GO_FALSE.has(token.value)) given.set(name, false);
      else problems.push(`--${name} is a boolean flag; found "${token.value}", expected --${name}, --${name}=true or --${name}=false`);
      continue;
    }
    if (token.value === undefined) {
      problems.push(`--${name} needs a value, e.g. --${name}=${exampleValue(name)}`);
      continue;
    }
    if (!token.inlineValue && /^--?[a-z]/u.test(token.value)) {
      const flag = token.value.replace(/^-+/u, '').split('=')[0] ?? '';
      if (FLAG_NAMES.some((n) => n === flag) || flag === 'h') {
        problems.push(
          `--${name} is followed by the flag ${token.value} instead of a value; write --${name}=<${spec.placeholder ?? 'value'}>`,
        );
        continue;
      }
    }
    given.set(name, token.value);
  }

  const str = (n: FlagName): string | undefined => {
    const v = given.get(n);
    return typeof v === 'string' ? v : undefined;
  };
  const flag = (n: FlagName): boolean => given.get(n) === true;
  const both = (a: FlagName, b: FlagName, why: string): void => {
    if (given.has(a) && given.has(b)) problems.push(`only one of --${a} and --${b} may be set (${why})`);
  };
  both('metrics-bind-address', 'metrics-addr', '--metrics-addr is the deprecated spelling');
  both('leader-elect', 'enable-leader-election', '--enable-leader-election is the deprecated spelling');

  const watchesFile = str('watches-file') ?? './watches.yaml';
  if (watchesFile === '') problems.push('--watches-file is empty; give the path of watches.yaml');

  const reconcilePeriodMs = duration('reconcile-period', str('reconcile-period') ?? '1m', true, problems);
  const helmTimeoutMs = duration('helm-timeout', str('helm-timeout') ?? '5m', false, problems);

  let maxConcurrentReconciles = availableParallelism();
  const mcr = str('max-concurrent-reconciles');
  if (mcr !== undefined) {
    if (/^\d+$/u.test(mcr) && Number(mcr) >= 1 && Number.isSafeInteger(Number(mcr))) maxConcurrentReconciles = Number(mcr);
    else problems.push(`--max-concurrent-reconciles is "${mcr}"; expected a whole number of at least 1`);
  }

  const metricsBindAddress = bindAddress(
    given.has('metrics-addr') ? 'metrics-addr' : 'metrics-bind-address',
    str('metrics-bind-address') ?? str('metrics-addr') ?? ':8080',
    problems,
  );
  const healthProbeBindAddress = bindAddress(
    'health-probe-bind-address',
    str('health-probe-bind-address') ?? ':8081',
    problems,
  );

  const leaderElectionIdFlag = str('leader-election-id');
  // operator-sdk's deprecated fallback, honoured so old Deployments keep their Lease name.
  const leaderElectionId = leaderElectionIdFlag ?? env.OPERATOR_NAME ?? '';
  if (leaderElectionId !== '' && !isDnsSubdomain(leaderElectionId)) {
    problems.push(
      `${leaderElectionIdFlag === undefined ? 'OPERATOR_NAME' : '--leader-election-id'} is "${leaderElectionId}"; a Lease name must be a lower-case DNS name (letters, digits, '-', '.'), e.g. my-operator.example.com`,
    );
  }
  const leaderElectionNamespace = str('leader-election-namespace') ?? '';
  if (leaderElectionNamespace !== '' && !isDnsLabel(leaderElectionNamespace)) {
    problems.push(
      `--leader-election-namespace is "${leaderElectionNamespace}"; a namespace name has lower-case letters, digits and '-'`,
    );
  }

  both('log-level', 'zap-log-level', 'they set the same thing');
  const logLevel = readLogLevel(str('log-level'), str('zap-log-level'), flag('zap-devel'), problems);
  validateChoice('zap-encoder', str('zap-encoder'), ['json', 'console'], problems);
  validateChoice(
    'zap-stacktrace-level',
    str('zap-stacktrace-level'),
    ['debug', 'info', 'warn', 'error', 'dpanic', 'panic', 'fatal'],
    problems,
  );
  validateChoice(
    'zap-time-encoding',
    str('zap-time-encoding'),
    ['epoch', 'millis', 'nano', 'iso8601', 'rfc3339', 'rfc3339nano'],
    problems,
  );

  const metricsSecure = flag('metrics-secure');
  const metricsRequireRbac = flag('metrics-require-rbac');
  if (metricsRequireRbac && !metricsSecure) {
    problems.push('--metrics-require-rbac needs --metrics-secure: authorization of scrapes only works over HTTPS');
  }

  const kubeconfig = str('kubeconfig');
  if (kubeconfig === '') problems.push('--kubeconfig is empty; give a kubeconfig path or leave the flag out');

  const watchNamespaces = readWatchNamespaces(env.WATCH_NAMESPACE, problems);
  const helmBin = env.HELM_BIN?.trim() === '' || env.HELM_BIN === undefined ? 'helm' : env.HELM_BIN.trim();

  if (problems.length > 0) return { ok: false, problems };
  return {
    ok: true,
    options: {
      watchesFile,
      reconcilePeriodMs,
      maxConcurrentReconciles,
      metricsBindAddress,
      healthProbeBindAddress,
      leaderElect: flag('leader-elect') || flag('enable-leader-election'),
      leaderElectionId,
      leaderElectionNamespace,
      logLevel,
      helmTimeoutMs,
      watchNamespaces,
      helmBin,
      kubeconfig,
      suppressOverrideValues: flag('suppress-override-values'),
      metricsSecure,
      metricsRequireRbac,
      ignoredFlags: IGNORED.filter((n) => given.has(n)).map((n) => `--${n}`),
    },
  };
}

function exampleValue(name: FlagName): string {
  switch (name) {
    case 'reconcile-period':
      return '1m';
    case 'helm-timeout':
      return '5m';
    case 'max-concurrent-reconciles':
      return '4';
    case 'metrics-bind-address':
    case 'metrics-addr':
      return ':8080';
    case 'health-probe-bind-address':
      return ':8081';
    case 'log-level':
    case 'zap-log-level':
      return 'info';
    case 'watches-file':
      return './watches.yaml';
    default:
      return '<value>';
  }
}

function duration(name: FlagName, text: string, zeroAllowed: boolean, problems: string[]): number {
  const parsed = parseGoDuration(text);
  if (!parsed.ok) {
    problems.push(`--${name} ${parsed.reason}`);
    return 0;
  }
  if (parsed.ms < 0 || (!zeroAllowed && parsed.ms === 0)) {
    problems.push(`--${name} is "${text}"; expected a ${zeroAllowed ? 'duration of 0 or more' : 'positive duration'}, e.g. --${name}=${exampleValue(name)}`);
    return 0;
  }
  return parsed.ms;
}

export type BindAddressResult = { ok: true; address: BindAddress | undefined } | { ok: false; reason: string };

const HOSTNAME = /^(?=.{1,253}$)[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?)*$/u;

/** `host:port` as Go's net.Listen takes it (`:8080`, `127.0.0.1:0`, `[::1]:9090`); `0` disables. */
export function parseBindAddress(text: string): BindAddressResult {
  if (text === '0') return { ok: true, address: undefined };
  const bad = (why: string): BindAddressResult => ({
    ok: false,
    reason: `"${text}" is not a listen address (${why}); expected host:port such as :8080, 127.0.0.1:8080 or [::1]:8080, or 0 to disable`,
  });
  const colon = text.lastIndexOf(':');
  if (colon === -1) return bad('no port');
  let host = text.slice(0, colon);
  const portText = text.slice(colon + 1);
  if (host.startsWith('[')) {
    if (!host.endsWith(']')) return bad('unclosed "["');
    host = host.slice(1, -1);
    if (!isIPv6(host)) return bad(`"${host}" is not an IPv6 address`);
  } else if (host.includes(':')) {
    return bad('an IPv6 host must be in brackets, e.g. [::1]:8080');
  } else if (host !== '' && isIP(host) === 0 && !HOSTNAME.test(host)) {
    return bad(`"${host}" is not a host name or IP address`);
  }
  if (!/^\d{1,5}$/u.test(portText) || Number(portText) > 65535) return bad(`port "${portText}" is not a number from 0 to 65535`);
  return { ok: true, address: { host: host === '' ? undefined : host, port: Number(portText), text } };
}

function bindAddress(name: FlagName, text: string, problems: string[]): BindAddress | undefined {
  const parsed = parseBindAddress(text);
  if (parsed.ok) return parsed.address;
  problems.push(`--${name} ${parsed.reason}`);
  return undefined;
}

const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];

function readLogLevel(
  level: string | undefined,
  zapLevel: string | undefined,
  zapDevel: boolean,
  problems: string[],
): LogLevel {
  if (level !== undefined) {
    const match = LOG_LEVELS.find((l) => l === level.toLowerCase());
    if (match !== undefined) return match;
    problems.push(`--log-level is "${level}"; expected one of ${LOG_LEVELS.join(', ')}`);
    return 'info';
  }
  if (zapLevel !== undefined) {
    const z = zapLevel.toLowerCase();
    if (z === 'debug' || z === 'info' || z === 'warn' || z === 'error') return z;
    if (z === 'dpanic' || z === 'panic' || z === 'fatal') return 'error';
    // controller-runtime: an integer N > 0 is debug verbosity N; we have a single debug level.
    if (/^\d+$/u.test(z) && Number(z) > 0) return 'debug';
    problems.push(`--zap-log-level is "${zapLevel}"; expected debug, info, warn, error, panic or an integer > 0`);
    return 'info';
  }
  return zapDevel ? 'debug' : 'info';
}

function validateChoice(name: FlagName, value: string | undefined, choices: readonly string[], problems: string[]): void {
  if (value !== undefined && !choices.includes(value)) {
    problems.push(`--${name} is "${value}"; expected one of ${choices.join(', ')}`);
  }
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
