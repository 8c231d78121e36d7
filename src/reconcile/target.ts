/** What a watches entry resolves to for the reconciler; replaced as a whole when the chart or entry changes. */
import { canonicalJson } from '../lib/json.js';
import type { DriftDetection } from './model.js';

export interface ReconcileTarget {
  /** `Kind.group` of the watched kind. */
  readonly ownerKind: string;
  readonly chartPath: string;
  /** Digest of the chart's content (changes → every CR of the kind upgrades). */
  readonly chartDigest: string;
  /** watches.yaml overrideValues (`--set` paths → strings); keys are named in events, values never. */
  readonly overrides: Readonly<Record<string, string>>;
  /** Periodic requeue; 0 disables it. */
  readonly reconcilePeriodMs: number;
  /** Watch the release's objects: drift repair and readiness (operator-sdk's watchDependentResources). */
  readonly watchDependentResources: boolean;
  /** Confinement: cluster-scoped / other-namespace objects are refused unless allowed. */
  readonly allowClusterScoped: boolean;
  readonly allowCrossNamespace: boolean;
  /**
   * The kind's chart (from a registry) cannot be had: its CRs say so (condition ChartUnavailable)
   * and nothing is installed or upgraded; deletions still uninstall. `reason` is the condition's.
   */
  readonly chartUnavailable?: { readonly reason: string; readonly message: string } | undefined;
  /**
   * The ServiceAccount, in each CR's own namespace, that every helm action and every repair of
   * this kind runs as (the entry's `serviceAccount`, else `--default-service-account`);
   * undefined = the operator's own identity, as operator-sdk does.
   */
  readonly serviceAccount: string | undefined;
  /** The entry's drift mode and ignore rules; undefined = repair every drifted field. */
  readonly driftDetection?: DriftDetection | undefined;
}

/**
 * Whether two targets are the same in every field. A reload that changes any of them (the ones in
 * the fingerprint, like confinement, included) must re-check every CR of the kind at once rather
 * than at the next period — which with `reconcilePeriod: 0` never comes.
 */
export function sameTarget(a: ReconcileTarget, b: ReconcileTarget): boolean {
  return canonicalJson(a) === canonicalJson(b);
}
