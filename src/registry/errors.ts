/**
 * Why a chart from a registry could not be had. `reason` is the CR condition's reason
 * (ChartUnavailable); the message names the reference, what was tried and what would fix it.
 */
export type ChartSourceReason =
  /** Connection refused, DNS, TLS, timeout, or a 5xx: the registry itself is not answering. */
  | 'RegistryUnreachable'
  /** 401/403: the registry refused the credentials tried (or their absence). */
  | 'RegistryUnauthorized'
  /** The chart (repository, index entry) does not exist. */
  | 'ChartNotFound'
  /** No version matches chartVersion. */
  | 'NoMatchingVersion'
  /** The content does not match chartDigest, or an archive not the digest its registry announced. */
  | 'DigestMismatch'
  /** The archive is not a loadable chart (truncated, not gzip, not the version asked for). */
  | 'InvalidChartArchive'
  /** The Secret named by chartPullSecret cannot be read or holds nothing usable. */
  | 'CredentialsUnavailable';

export class ChartSourceError extends Error {
  override readonly name = 'ChartSourceError';
  constructor(
    readonly reason: ChartSourceReason,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  /** Whether running on a cached copy is the right answer (the registry could not be asked). */
  get transient(): boolean {
    return this.reason === 'RegistryUnreachable';
  }
}
