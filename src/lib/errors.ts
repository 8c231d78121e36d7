/** How an unknown thrown value is shown in logs, conditions and messages. */

/** The message of an Error, or the value as a string (a thrown string, a rejected number). */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * The message plus its direct cause's message: fetch reports "fetch failed" and hides the useful
 * part (ECONNREFUSED, a certificate error) in `cause`.
 */
export function errorWithCause(err: unknown): string {
  if (err instanceof Error && err.cause instanceof Error) return `${err.message}: ${err.cause.message}`;
  return errorMessage(err);
}
