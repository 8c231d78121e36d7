/** Names chartpilot shares with operator-sdk, so a user can switch images and keep their CRs. */
import { bucketOf } from '../../lib/uid-bucket.js';

export const FINALIZER = 'helm.sdk.operatorframework.io/uninstall-release';
/** Older operator-sdk releases used this one; removed on delete so such CRs are not stuck. */
export const LEGACY_FINALIZER = 'uninstall-helm-release';
/** Every finalizer a chart kind's CR may be held with: either keeps it until its release is uninstalled. */
export const FINALIZERS: readonly string[] = [FINALIZER, LEGACY_FINALIZER];

const ANNOTATION_PREFIX = 'helm.sdk.operatorframework.io/';

export const Annotations = {
  upgradeForce: `${ANNOTATION_PREFIX}upgrade-force`,
  rollbackForce: `${ANNOTATION_PREFIX}rollback-force`,
  uninstallWait: `${ANNOTATION_PREFIX}uninstall-wait`,
  reconcilePeriod: `${ANNOTATION_PREFIX}reconcile-period`,
  installDisableHooks: `${ANNOTATION_PREFIX}install-disable-hooks`,
  upgradeDisableHooks: `${ANNOTATION_PREFIX}upgrade-disable-hooks`,
  uninstallDisableHooks: `${ANNOTATION_PREFIX}uninstall-disable-hooks`,
  pauseReconcile: `${ANNOTATION_PREFIX}pause-reconcile`,
  installDescription: `${ANNOTATION_PREFIX}install-description`,
  upgradeDescription: `${ANNOTATION_PREFIX}upgrade-description`,
  uninstallDescription: `${ANNOTATION_PREFIX}uninstall-description`,
} as const;

/** operator-sdk's annotations on dependents it cannot own through an ownerReference. */
export const PRIMARY_RESOURCE_ANNOTATION = 'operator-sdk/primary-resource';
export const PRIMARY_RESOURCE_TYPE_ANNOTATION = 'operator-sdk/primary-resource-type';

/** Labels chartpilot puts on Helm's release record (the release Secret). */
export const ReleaseLabels = {
  fingerprint: 'chartpilot.io/fingerprint',
  ownerKind: 'chartpilot.io/owner-kind',
  /**
   * Which helm call wrote the record: `<operator process>-<n>`, new for every install and upgrade.
   * A pending record whose call an operator stopped on its way out is nobody's lock any more.
   */
  call: 'chartpilot.io/helm-call',
} as const;

/** Label on every object chartpilot deploys, so dependent watches cache only ours. */
export const OWNER_UID_LABEL = 'chartpilot.io/owner-uid';
/**
 * Label on every object chartpilot deploys beside the owner's uid: the owner's uid bucket
 * (lib/uid-bucket.ts), so with --shards each replica's dependent watches select only the objects
 * of the CRs its view of the ring gives it. Stamped with or without --shards, so turning shards
 * on later needs no relabelling of releases deployed meanwhile.
 */
export const OWNER_BUCKET_LABEL = 'chartpilot.io/owner-bucket';

/** The labels that name an object's owner: its uid and its uid's bucket. */
export function ownerLabels(uid: string): Record<string, string> {
  return { [OWNER_UID_LABEL]: uid, [OWNER_BUCKET_LABEL]: String(bucketOf(uid)) };
}

export const ConditionTypes = {
  initialized: 'Initialized',
  deployed: 'Deployed',
  releaseFailed: 'ReleaseFailed',
  irreconcilable: 'Irreconcilable',
  ready: 'Ready',
  paused: 'Paused',
  /** chartpilot: the kind's chart from a registry cannot be pulled; the release is left as it is. */
  chartUnavailable: 'ChartUnavailable',
  /**
   * chartpilot: objects of the release differ from the chart and are left so (driftDetection mode
   * warn, or fields given up to another field manager after repeated set-backs).
   */
  drifted: 'Drifted',
  /**
   * chartpilot: the kind's chart changed, the change failed on the first CR it was tried on, and
   * this CR keeps the last good chart meanwhile (controller/chart-rollout.ts).
   */
  chartChangeHeld: 'ChartChangeHeld',
} as const;

/** Condition and event reasons: operator-sdk's, then chartpilot's own events. */
export const Reasons = {
  installSuccessful: 'InstallSuccessful',
  upgradeSuccessful: 'UpgradeSuccessful',
  uninstallSuccessful: 'UninstallSuccessful',
  installError: 'InstallError',
  upgradeError: 'UpgradeError',
  reconcileError: 'ReconcileError',
  uninstallError: 'UninstallError',
  rollbackSuccessful: 'RollbackSuccessful',
  overrideValuesInUse: 'OverrideValuesInUse',
  releaseUnlocked: 'ReleaseUnlocked',
  driftRepaired: 'DriftRepaired',
  /** driftDetection mode warn: objects differ from the chart; nothing is set back. */
  driftDetected: 'DriftDetected',
  /** A field set back again and again and changed again each time by another manager: left to it. */
  driftContested: 'DriftContested',
  chartUnavailable: 'ChartUnavailable',
  serviceAccountNotFound: 'ServiceAccountNotFound',
  uninstallSkipped: 'UninstallSkipped',
  /** The reconcile-period annotation was below the minimum and raised to it. */
  reconcilePeriodRaised: 'ReconcilePeriodRaised',
  /** chartpilot: a Helm release record it did not write for this CR; nothing is done to the release. */
  foreignReleaseRecord: 'ForeignReleaseRecord',
  /** chartpilot: a changed chart failed on this CR, the first it was tried on; the kind's others keep the last good one. */
  chartChangeHeld: 'ChartChangeHeld',
  /** chartpilot: ChartChangeHeld's reason on the CRs held back. */
  canaryFailed: 'CanaryFailed',
} as const;

/** Helm's own limit on release names (it stores them in labels and Secret names). */
export const MAX_RELEASE_NAME_LENGTH = 53;
const RELEASE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Why a CR name cannot be a Helm release name, or undefined when it can. */
export function releaseNameProblem(name: string): string | undefined {
  if (name.length > MAX_RELEASE_NAME_LENGTH) {
    return (
      `the resource name "${name}" is ${name.length} characters long, but Helm release names ` +
      `(chartpilot uses the resource name) may have at most ${MAX_RELEASE_NAME_LENGTH}; ` +
      `recreate the resource with a shorter name`
    );
  }
  if (!RELEASE_NAME.test(name)) {
    return `the resource name "${name}" is not a valid Helm release name (lower-case DNS subdomain); recreate the resource with a valid name`;
  }
  return undefined;
}
