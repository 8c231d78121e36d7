/**
 * Runs one helm process: argument array (no shell), bounded time, typed failure. Everything
 * helm-specific about *what* to run lives in argv.ts and cli-client.ts; this module only knows how.
 */
import { execa } from 'execa';

import { HelmCallInterrupted, HelmCallsStopped } from '../engines/helm/ports.js';
import { helmErrorFromStderr } from './errors.js';
import { HelmError } from './types.js';

/**
 * After SIGTERM helm gets this long before SIGKILL. Helm 4 turns SIGTERM into "context canceled"
 * and records the release as failed; SIGKILL leaves it pending-install/-upgrade (verified).
 */
export const KILL_GRACE_MS = 5000;

/**
 * Helm's process (or warm worker) died during the call, by a signal nobody here sent (the OOM
 * killer, a crash). It holds no lock any more: StoppedCalls records the call, so a pending record
 * it left is cleared at once rather than after the helm timeout.
 */
export class HelmProcessDied extends HelmError {
  constructor(action: string, message: string) {
    super('failed', message, action);
  }
}

/** Thrown when we killed helm because its time was up (as opposed to helm's own timeouts). */
export class HelmKilledError extends HelmError {
  constructor(
    action: string,
    readonly timeoutMs: number,
  ) {
    super('timeout', `helm ${action} timed out after ${formatSeconds(timeoutMs)}`, action);
  }
}

export interface RunOptions {
  readonly helmBin: string;
  readonly env: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  /** For error messages and logs: `upgrade`, `status`, … */
  readonly action: string;
  /** Strings that must not appear in an error message (values' string leaves). */
  readonly secrets?: readonly string[] | undefined;
  /** SIGTERM → SIGKILL delay; default KILL_GRACE_MS. */
  readonly killGraceMs?: number | undefined;
  /** Aborted → SIGTERM to helm, SIGKILL after the grace; the call rejects with HelmCallInterrupted once helm has exited. */
  readonly signal?: AbortSignal | undefined;
}

export interface RunResult {
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs one helm call: runHelm (a process per call), or a warm pool's run (warm-pool.ts). */
export type HelmRunner = (args: readonly string[], opts: RunOptions) => Promise<RunResult>;

export async function runHelm(args: readonly string[], opts: RunOptions): Promise<RunResult> {
  if (!Number.isInteger(opts.timeoutMs) || opts.timeoutMs <= 0) {
    throw new RangeError(`timeoutMs must be a positive integer, got ${opts.timeoutMs}`);
  }
  if (opts.signal?.aborted === true) throw new HelmCallsStopped(`helm ${opts.action} not started: stopping`);
  const result = await execa(opts.helmBin, args, {
    env: opts.env,
    extendEnv: true,
    stdin: 'ignore',
    reject: false,
    timeout: opts.timeoutMs,
    killSignal: 'SIGTERM',
    forceKillAfterDelay: opts.killGraceMs ?? KILL_GRACE_MS,
    stripFinalNewline: false,
    ...(opts.signal === undefined ? {} : { cancelSignal: opts.signal }),
  });
  // Helm has exited by now (execa waits for it, SIGKILL included): nothing of this call runs on.
  if (result.isCanceled) {
    // Helm's stderr is left out: it may quote values, and "context canceled" says nothing new.
    throw new HelmCallInterrupted(`helm ${opts.action} was stopped (${result.signal ?? `exit code ${String(result.exitCode)}`}): the operator is stopping`);
  }
  if (result.timedOut) {
    throw new HelmKilledError(opts.action, opts.timeoutMs);
  }
  if (result.failed) {
    if (result.exitCode === undefined) {
      // Never ran or died of a signal: helm said nothing useful on stderr.
      if (result.signal !== undefined) throw new HelmProcessDied(opts.action, `helm ${opts.action}: ${opts.helmBin} was killed by ${result.signal}`);
      throw new HelmError('failed', `helm ${opts.action}: ${opts.helmBin} could not be started (${result.code ?? 'unknown error'})`, opts.action);
    }
    throw helmErrorFromStderr(result.stderr, opts.action, opts.secrets);
  }
  return { stdout: result.stdout, stderr: result.stderr };
}

export function formatSeconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(3))}s`;
}
