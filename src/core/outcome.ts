/** How a reconcile ends, for either engine: requeued after a while, done, or failed (retried with backoff). */
/** How a reconcile ended; the queue requeues after `requeueAfterMs` when it is set. */
export interface ReconcileOutcome {
  readonly requeueAfterMs?: number;
}

/** A reconcile that failed after recording why on the CR; the queue retries it with backoff. */
export class ReconcileFailure extends Error {
  override readonly name = 'ReconcileFailure';
  constructor(
    readonly reason: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * What a reconcile's last step did, handed to its one exit: the status to write (`S`, the
 * engine's own description of it; none = leave the status as it is), then either the failure to
 * throw or the outcome to return. Steps never write status themselves (the Reconciling
 * announcement beside a long call aside), so every path writes it once, at the end.
 */
export interface Exit<S> {
  readonly outcome: ReconcileOutcome;
  readonly status?: S | undefined;
  readonly failure?: ReconcileFailure | undefined;
}

/** What a status write did: `deferredMs` = the change waits out the status pace; look again after that long. */
export interface StatusWrite {
  readonly deferredMs?: number;
}

/**
 * The one exit: writes the status, then throws the failure or returns the outcome. The failure
 * is thrown only after its status is written (a ReconcileFailure means "recorded on the CR"); a
 * write that fails rejects instead, as the unexpected error it is. A deferred write brings the
 * next look forward to when it is due.
 */
export async function leave<S>(exit: Exit<S>, writeStatus: (status: S) => Promise<StatusWrite>): Promise<ReconcileOutcome> {
  const written = exit.status === undefined ? {} : await writeStatus(exit.status);
  if (exit.failure !== undefined) throw exit.failure;
  return written.deferredMs === undefined ? exit.outcome : soonest(exit.outcome, written.deferredMs);
}

/** `outcome`'s requeue, or sooner when something is due after `afterMs`. */
function soonest(outcome: ReconcileOutcome, afterMs: number): ReconcileOutcome {
  return { requeueAfterMs: Math.min(outcome.requeueAfterMs ?? afterMs, afterMs) };
}
