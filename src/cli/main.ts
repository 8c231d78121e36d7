/** The chartpilot command line: dispatches sub-commands and turns every outcome into an exit code. */
import { parseRunArgs, RUN_HELP } from './args.js';
import { ExitCode } from '../lib/exit-codes.js';
import { packageVersion } from '../lib/package-root.js';
import { runOperator } from './run.js';
import { defaultWatchesFile } from './watches-location.js';

/** `chartpilot help`, also shown for an unknown command. */
export const USAGE = `chartpilot — turn any Helm chart or Ansible role into a Kubernetes API

Usage:
  chartpilot run [flags]        run the operator (operator-sdk helm-operator and ansible-operator
                                flags; see run --help)
  chartpilot new <dir> --chart <path> --group <g> --kind <K> [--version <v>]
                                a new operator repository for a chart
  chartpilot new --ansible <dir> --group <g> --kind <K> [--version <v>]
                                a new operator repository for an Ansible role
  chartpilot generate <what> [flags]
                                crd, rbac, deploy, sample, all (files in --output-dir), bundle and
                                catalog (OLM), monitoring (alerts, dashboard), argocd (health
                                checks); see generate --help
  chartpilot adopt [flags]      take over releases chartpilot did not write (operator-sdk's, an
                                older chartpilot's) for their resources; see adopt --help
  chartpilot version            print the version (also --version, -v)
  chartpilot help [command]     show this help, or a command's

Exit codes: 0 ok, 1 internal error, 2 bad flags or watches.yaml, 3 cluster/CRD/RBAC/helm/port/certificate not ready.`;

/** Commands with a help of their own (`chartpilot help <command>`). */
const HELP_COMMANDS = new Set(['run', 'new', 'generate', 'adopt']);

function unknownCommand(command: string): number {
  process.stderr.write(`error: unknown command "${command}"; the commands are run, new, generate, adopt, version, help\n`);
  return ExitCode.badConfig;
}

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
  let watchesFile = o.watchesFile;
  if (!o.watchesFileGiven) {
    const found = await defaultWatchesFile(process.cwd(), process.env);
    if (!found.ok) {
      process.stderr.write(`error: ${found.problem}\n`);
      return ExitCode.badConfig;
    }
    watchesFile = found.path;
  }
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
        watchesFile,
        reconcilePeriodMs: o.reconcilePeriodMs,
        maxConcurrentReconciles: o.maxConcurrentReconciles,
        helmTimeoutMs: o.helmTimeoutMs,
        chartRefreshIntervalMs: o.chartRefreshIntervalMs,
        chartCacheDir: o.chartCacheDir,
        watchNamespaces: o.watchNamespaces,
        helmBin: o.helmBin,
        helmMode: o.helmMode,
        helmWorkers: o.helmWorkers,
        resourceMetrics: o.resourceMetrics,
        logLevel: o.logLevel,
        logFormat: o.logFormat,
        shutdownGraceMs: o.gracefulShutdownTimeoutMs,
        ansible: o.ansible,
        metricsBindAddress: o.metricsBindAddress,
        metricsMaxConnections: o.metricsMaxConnections,
        healthProbeBindAddress: o.healthProbeBindAddress,
        metricsSecurity: o.metricsSecure
          ? { certificateFiles: o.metricsCertificate, http2: o.enableHttp2, requireRbac: o.metricsRequireRbac }
          : undefined,
        leaderElectionNamespace: o.leaderElectionNamespace,
        leaderElection: o.leaderElect || o.shards ? { id: o.leaderElectionId, namespace: o.leaderElectionNamespace } : undefined,
        shards: o.shards ? { leaseDurationMs: o.shardLeaseDurationMs } : undefined,
        ignoredFlags: o.ignoredFlags,
        suppressOverrideValues: o.suppressOverrideValues,
        stallAfterFailures: o.stallAfterFailures,
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

/**
 * What `run` hands over to when one of them is its first argument. The image's ENTRYPOINT is
 * `chartpilot run`, as helm-operator's and ansible-operator's are `… run`, so that a Deployment's
 * `args:` of only flags (operator-sdk's scaffold) runs the operator; Deployments written for the
 * image's earlier `run` CMD (`args: [run, …]`) and `podman run <image> generate …` reach the same
 * commands as on a workstation. `run` takes no positional arguments, so nothing else is meant.
 */
const HANDED_OVER = new Set(['run', 'generate', 'new', 'adopt', 'version', 'help']);

export async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === 'run' && rest[0] !== undefined && HANDED_OVER.has(rest[0])) return main(rest);
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
      case '-v':
        process.stdout.write(`chartpilot ${packageVersion()}\n`);
        return ExitCode.ok;
      case 'help':
        // `chartpilot help run` is `chartpilot run --help`, as cobra's help command does.
        if (rest[0] !== undefined && HELP_COMMANDS.has(rest[0])) return await main([rest[0], ...rest.slice(1), '--help']);
        process.stdout.write(`${USAGE}\n`);
        return rest[0] === undefined ? ExitCode.ok : unknownCommand(rest[0]);
      case undefined:
      case '--help':
      case '-h':
        process.stdout.write(`${USAGE}\n`);
        return command === undefined ? ExitCode.badConfig : ExitCode.ok;
      default:
        process.stderr.write(`\n${USAGE}\n`);
        return unknownCommand(command);
    }
  } catch (err) {
    process.stderr.write(`error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    return ExitCode.internal;
  }
}
