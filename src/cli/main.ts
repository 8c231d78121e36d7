/** The chartpilot command line: dispatches sub-commands and turns every outcome into an exit code. */
import { parseRunArgs, RUN_HELP } from './args.js';
import { ExitCode } from '../lib/exit-codes.js';
import { packageVersion } from '../lib/package-root.js';
import { runOperator } from './run.js';

const USAGE = `chartpilot — turn any Helm chart into a Kubernetes API

Usage:
  chartpilot run [flags]        run the operator (operator-sdk helm-operator flags; see run --help)
  chartpilot generate crd|rbac|deploy|sample|all [flags]
                                CRDs (spec schema from values.schema.json), least-privilege RBAC,
                                deploy manifests; see generate <what> --help
  chartpilot new <dir> --chart <path> --group <g> --version <v> --kind <K>
                                a new operator repository for a chart
  chartpilot adopt [flags]      take over releases chartpilot did not write (operator-sdk's, an
                                older chartpilot's) for their resources; see adopt --help
  chartpilot version            print the version
  chartpilot help               show this help

Exit codes: 0 ok, 1 internal error, 2 bad flags or watches.yaml, 3 cluster/CRD/RBAC/helm/port/certificate not ready.`;

/** After `run` has finished, how long leftovers may keep the process alive. */
const EXIT_GRACE_MS = 1_000;

async function run(argv: readonly string[]): Promise<number> {
  const parsed = parseRunArgs(argv, process.env);
  if (!parsed.ok) {
    if (parsed.help === true) {
      process.stdout.write(`${RUN_HELP}\n`);
      return ExitCode.ok;
    }
    for (const p of parsed.problems) process.stderr.write(`error: ${p}\n`);
    process.stderr.write('run "chartpilot run --help" for the flags\n');
    return ExitCode.badConfig;
  }
  const o = parsed.options;
  // client-node and helm both read KUBECONFIG, so one setting serves both.
  if (o.kubeconfig !== undefined) process.env.KUBECONFIG = o.kubeconfig;
  // As ansible-operator: --ansible-roles-path is ANSIBLE_ROLES_PATH, where watches.yaml roles are looked for.
  if (o.ansible.rolesPath.length > 0) process.env.ANSIBLE_ROLES_PATH = o.ansible.rolesPath.join(':');

  const stop = new AbortController();
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals): void => {
    signals++;
    if (signals > 1) {
      process.stderr.write(`received ${signal} again: exiting now\n`);
      process.exit(ExitCode.internal);
    }
    stop.abort();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  try {
    const code = await runOperator(
      {
        watchesFile: o.watchesFile,
        reconcilePeriodMs: o.reconcilePeriodMs,
        maxConcurrentReconciles: o.maxConcurrentReconciles,
        helmTimeoutMs: o.helmTimeoutMs,
        chartRefreshIntervalMs: o.chartRefreshIntervalMs,
        chartCacheDir: o.chartCacheDir,
        watchNamespaces: o.watchNamespaces,
        helmBin: o.helmBin,
        helmMode: o.helmMode,
        helmWorkers: o.helmWorkers,
        logLevel: o.logLevel,
        shutdownGraceMs: o.gracefulShutdownTimeoutMs,
        ansible: o.ansible,
        metricsBindAddress: o.metricsBindAddress,
        metricsMaxConnections: o.metricsMaxConnections,
        healthProbeBindAddress: o.healthProbeBindAddress,
        metricsSecurity: o.metricsSecure
          ? { certificateFiles: o.metricsCertificate, http2: o.enableHttp2, requireRbac: o.metricsRequireRbac }
          : undefined,
        leaderElection: o.leaderElect || o.shards ? { id: o.leaderElectionId, namespace: o.leaderElectionNamespace } : undefined,
        shards: o.shards ? { leaseDurationMs: o.shardLeaseDurationMs } : undefined,
        ignoredFlags: o.ignoredFlags,
        suppressOverrideValues: o.suppressOverrideValues,
        defaultServiceAccount: o.defaultServiceAccount,
        sealKeySecret: o.sealKeySecret,
        adoptExistingReleases: o.adoptExistingReleases,
        version: packageVersion(),
      },
      { env: process.env, stderr: (line) => process.stderr.write(`${line}\n`), stop: stop.signal },
    );
    // Normally nothing is left and the process ends by itself; if anything still holds the event
    // loop (a helm process after a lost lease, a socket), the exit code must not wait for it.
    setTimeout(() => process.exit(code), EXIT_GRACE_MS).unref();
    return code;
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  }
}

export async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'generate':
        return await (await import('../generate/cli.js')).generateCommand(rest);
      case 'new':
        return await (await import('../generate/cli.js')).newCommand(rest);
      case 'run':
        return await run(rest);
      case 'adopt':
        return await (await import('./adopt.js')).adoptCommand(rest, {
          stdout: (line) => process.stdout.write(`${line}\n`),
          stderr: (line) => process.stderr.write(`${line}\n`),
          env: process.env,
        });
      case 'version':
      case '--version':
        process.stdout.write(`chartpilot ${packageVersion()}\n`);
        return ExitCode.ok;
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        process.stdout.write(`${USAGE}\n`);
        return command === undefined ? ExitCode.badConfig : ExitCode.ok;
      default:
        process.stderr.write(`error: unknown command "${command}"\n\n${USAGE}\n`);
        return ExitCode.badConfig;
    }
  } catch (err) {
    process.stderr.write(`error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    return ExitCode.internal;
  }
}
