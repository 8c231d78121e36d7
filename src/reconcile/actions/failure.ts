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
