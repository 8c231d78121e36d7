/**
 * One client call as metrics and logs see it: what it was, how long it took, how it ended. A call
 * may run several helm processes (version probe, the action, get manifest); all share its budget.
 */
import { HelmKilledError } from './exec.js';
import { HelmError, type HelmErrorKind } from './types.js';

export type HelmAction = 'upgrade' | 'uninstall' | 'rollback' | 'status' | 'history' | 'template';

/** One finished client call, for metrics and logs (never carries values). */
export interface HelmCallEvent {
  readonly action: HelmAction;
  readonly release: string;
  readonly namespace: string;
  readonly durationMs: number;
  readonly outcome: 'success' | 'error';
  readonly errorKind?: HelmErrorKind | undefined;
}

export interface CallScope {
  readonly action: HelmAction;
  readonly release: string;
  readonly namespace: string;
  readonly budgetMs: number;
}

/**
 * Runs `fn` as one logged call. `remaining()` is what is left of the budget. `log` must not
 * throw; if it does, that is ignored: a broken metrics hook must not turn a helm result into a
 * failure.
 */
export async function timedCall<T>(scope: CallScope, log: ((event: HelmCallEvent) => void) | undefined, fn: (remaining: () => number) => Promise<T>): Promise<T> {
  const { action, release, namespace, budgetMs } = scope;
  const started = performance.now();
  const remaining = (): number => Math.max(1, Math.round(started + budgetMs - performance.now()));
  const finish = (outcome: 'success' | 'error', errorKind?: HelmErrorKind): void => {
    const durationMs = Math.round(performance.now() - started);
    try {
      log?.({ action, release, namespace, durationMs, outcome, ...(errorKind === undefined ? {} : { errorKind }) });
    } catch {
      // See above.
    }
  };
  try {
    const result = await fn(remaining);
    finish('success');
    return result;
  } catch (err) {
    finish('error', err instanceof HelmError ? err.kind : 'failed');
    // Our kill was given what was left of the budget; the caller wants to hear the budget.
    if (err instanceof HelmKilledError) throw new HelmKilledError(action, budgetMs);
    throw err;
  }
}
