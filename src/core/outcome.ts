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
