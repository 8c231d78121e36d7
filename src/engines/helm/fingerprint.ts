/**
 * The fingerprint of a release's inputs: chart content, merged values and the options that change
 * what Helm deploys. Equal fingerprints mean "nothing to do", which is what lets an idle operator
 * run no helm process at all (operator-sdk re-renders every CR every period to find that out).
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from '../../lib/json.js';

export { canonicalJson };

export interface FingerprintInput {
  readonly chartDigest: string;
  readonly values: unknown;
  /** Everything else that changes the rendered objects (e.g. the owner injected by post-render). */
  readonly options: Readonly<Record<string, string | number | boolean>>;
}



/** 40 hex characters: fits a label value (63 max) and is collision-safe for this use. */
export function fingerprint(input: FingerprintInput): string {
  return createHash('sha256')
    .update(canonicalJson({ chart: input.chartDigest, values: input.values, options: input.options }))
    .digest('hex')
    .slice(0, 40);
}
