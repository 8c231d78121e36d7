/** What a watches entry resolves to for the reconciler; replaced as a whole when the chart or entry changes. */
import { canonicalJson } from '../../lib/json.js';
import type { DriftDetection } from '../../core/model.js';
import type { ValuesFromSettings } from '../../core/values-from.js';
import type { DependsOnSettings } from '../../core/dependencies.js';
import type { StatusProgram } from '../../core/outputs.js';

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
  /** The entry's values from Secrets and ConfigMaps; undefined = the whole spec is the values. */
  readonly valuesFrom?: ValuesFromSettings | undefined;
  /** The entry's dependsOn: CRs list what they wait for in its spec field; undefined = none. */
  readonly dependsOn?: DependsOnSettings | undefined;
  /** The entry's outputs and readyWhen, compiled (sameTarget compares their declarations); undefined = none. */
  readonly status?: StatusProgram | undefined;
  /**
   * The kind's chart changed and the change failed on the first CR it was tried on: this CR is
   * served the last good chart (chartPath, chartDigest above) and its status says why (condition
   * ChartChangeHeld). Undefined when nothing is held back from this CR.
   */
  readonly chartChangeHeld?: { readonly message: string } | undefined;
}

/** How one reconcile served a target ended, as far as its chart goes (the chart rollout reads it). */
export type ChartTrial =
  /** Helm installed or upgraded with it, or the release already had exactly this target's fingerprint. */
  | { readonly kind: 'deployed' }
  /** Helm's install or upgrade with it failed (`message`: what the CR's ReleaseFailed says). */
  | { readonly kind: 'failed'; readonly message: string }
  /** No install or upgrade was tried (paused, irreconcilable, deleting, a lock, the operator stopping). */
  | { readonly kind: 'untried' };

/**
 * Whether two targets are the same in every field. A reload that changes any of them (the ones in
 * the fingerprint, like confinement, included) must re-check every CR of the kind at once rather
 * than at the next period — which with `reconcilePeriod: 0` never comes.
 */
export function sameTarget(a: ReconcileTarget, b: ReconcileTarget): boolean {
  return canonicalJson(a) === canonicalJson(b);
}
