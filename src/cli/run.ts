/**
 * `chartpilot run`: load watches.yaml, check the cluster, start one controller per kind, and run
 * until SIGTERM/SIGINT. Every way start-up can fail ends in one clear message and an exit code.
 */
import type { Logger } from 'pino';
import { loadWatches } from '../config/watches.js';
import { Manager } from '../controller/manager.js';
import { ConfigReloader } from '../controller/reloader.js';
import { checkApiServer, checkPermissions, PreflightError, requiredChecks, resolveResources } from '../controller/preflight.js';
import { createHelmClient } from '../helm/cli-client.js';
import { createKubeClient, loadKubeConfig } from '../kube/rest.js';
import { EventRecorder } from '../observe/events.js';
import { createLogger, type LogLevel } from '../observe/logger.js';
import { ExitCode } from './exit-codes.js';

export interface RunConfig {
  readonly watchesFile: string;
  readonly reconcilePeriodMs: number;
  readonly maxConcurrentReconciles: number;
  readonly helmTimeoutMs: number;
  readonly watchNamespaces: readonly string[];
  readonly helmBin: string;
  readonly logLevel: LogLevel;
  /** How long running helm calls may take to finish on shutdown. */
  readonly shutdownGraceMs: number;
}

export interface RunIo {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly stderr: (line: string) => void;
  /** Aborted → graceful shutdown (the CLI wires SIGTERM/SIGINT to it). */
  readonly stop: AbortSignal;
}

/** Helm keeps this many revisions per release; bounded so failure loops cannot pile up Secrets. */
const HISTORY_MAX = 10;

export async function runOperator(config: RunConfig, io: RunIo, logger?: Logger): Promise<number> {
  const log = logger ?? createLogger(config.logLevel);
  const startedAt = Date.now();

  const loaded = await loadWatches(config.watchesFile, io.env);
  if (!loaded.ok) {
    for (const p of loaded.problems) io.stderr(`error: ${p}`);
    return ExitCode.badConfig;
  }
  if (loaded.entries.length === 0) {
    io.stderr(`error: ${config.watchesFile} has no entries; add one mapping a kind to a chart`);
    return ExitCode.badConfig;
  }

  let kubeConfig;
  try {
    kubeConfig = loadKubeConfig();
  } catch (err) {
    io.stderr(`error: ${err instanceof Error ? err.message : String(err)}`);
    return ExitCode.environment;
  }
  const server = kubeConfig.getCurrentCluster()?.server ?? 'unknown';
  const client = createKubeClient(kubeConfig, { userAgent: 'chartpilot' });
  const helm = createHelmClient({ helmBin: config.helmBin });

  let resources;
  try {
    const version = await checkApiServer(client, server);
    log.info({ server, version }, 'connected to the API server');
    resources = await resolveResources(client, loaded.entries);
    await checkPermissions(client, requiredChecks([...resources.values()], config.watchNamespaces));
    const helmVersion = await helm.version(30_000).catch((err: unknown) => {
      throw new PreflightError([
        `cannot run helm (${config.helmBin}): ${err instanceof Error ? err.message : String(err)}; install helm or set HELM_BIN`,
      ]);
    });
    log.info({ helm: helmVersion }, 'helm found');
  } catch (err) {
    if (err instanceof PreflightError) {
      for (const p of err.problems) io.stderr(`error: ${p}`);
      return ExitCode.environment;
    }
    throw err;
  }

  const events = new EventRecorder({ client, log });
  const manager = new Manager({
    client,
    helm,
    events,
    log,
    watchNamespaces: config.watchNamespaces,
    defaultReconcilePeriodMs: config.reconcilePeriodMs,
    defaultConcurrency: config.maxConcurrentReconciles,
    helmTimeoutMs: config.helmTimeoutMs,
    historyMax: HISTORY_MAX,
    processStartedAt: startedAt,
  });
  for (const [entry, resource] of resources) await manager.add(entry, resource);
  // Edits to watches.yaml or a chart apply without a restart; a bad edit keeps what runs.
  const reloader = new ConfigReloader({
    watchesFile: config.watchesFile,
    env: io.env,
    manager,
    log,
    resolve: (entries) => resolveResources(client, entries),
    drainTimeoutMs: config.shutdownGraceMs,
  });
  reloader.start();

  await new Promise<void>((resolve) => {
    if (io.stop.aborted) resolve();
    else io.stop.addEventListener('abort', () => { resolve(); }, { once: true });
  });
  log.info({ graceMs: config.shutdownGraceMs }, 'shutting down: letting running helm calls finish');
  await reloader.stop();
  await manager.stop(config.shutdownGraceMs);
  await events.flush();
  await helm.close();
  log.info('stopped');
  return ExitCode.ok;
}
