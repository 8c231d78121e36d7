/** The manifest cannot be turned into objects safely; nothing may be applied. */
export class ManifestResolveError extends Error {
  override readonly name = 'ManifestResolveError';
}
