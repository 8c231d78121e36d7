/**
 * The edges the Helm engine acts through beyond the shared ones (core/ports.ts), with exactly the
 * methods it uses; small, so unit tests substitute them with plain objects. Adapters: helm/
 * (ReleaseActions, ReleaseStore), dependents/ (ReleaseKeeperPort).
 */
import type { Confinement } from '../../core/confinement.js';
import type { SelfView, StatusProgram } from '../../core/outputs.js';
import type { CustomResource, DriftDetection, KeepResult, ObjectRef, Release, StoredRevision } from '../../core/model.js';

export interface ReleaseRequestBase {
  readonly release: string;
  readonly namespace: string;
  /** Kill helm after this long; the call then fails with an error of kind 'timeout'. */
  readonly timeoutMs: number;
  readonly description?: string | undefined;
  /**
   * Run as this user (`system:serviceaccount:<ns>:<name>`: helm's --kube-as-user), so every request
   * of the action — release storage and any `lookup` included — is the tenant's; the API server
   * adds the ServiceAccount's groups. undefined = the operator's own identity.
   */
  readonly impersonate?: string | undefined;
  /**
   * Aborted when the operator (or this kind's controller) stops and its drain time is up: helm
   * gets SIGTERM, then SIGKILL after a short grace, and the call rejects with HelmCallInterrupted.
   */
  readonly signal?: AbortSignal | undefined;
  /**
   * The CR the call is for. The operator's helm client confines every API request of the call to
   * it (src/apiproxy): writes only within `confinement`, release records only when they prove they
   * were written for the CR with this uid. Required wherever the client confines.
   */
  readonly owner?: ReleaseOwner | undefined;
}

/** The CR a helm call acts for, as the confining API layer needs it. */
export interface ReleaseOwner {
  readonly uid: string;
  readonly confinement: Confinement;
}

/** `helm status` (the latest revision): nothing but the call itself. */
export type StatusRequest = ReleaseRequestBase;

export interface UpgradeInstallRequest extends ReleaseRequestBase {
  /** Chart directory or .tgz path. */
  readonly chart: string;
  /** Merged values; written to a private temp file, never to the command line. */
  readonly values: Record<string, unknown>;
  readonly force?: boolean | undefined;
  readonly disableHooks?: boolean | undefined;
  /** Bound on the release history Helm keeps (`--history-max`). */
  readonly historyMax?: number | undefined;
  /** Labels/ownership injected into every rendered object (post-render). */
  readonly postRender?: PostRenderSpec | undefined;
  /**
   * Labels on Helm's own release record (`helm --labels`, stored on the release Secret). The
   * reconciler keeps its fingerprint there, so "is this release current?" is answered from the
   * record's metadata without running helm.
   */
  readonly releaseLabels?: Readonly<Record<string, string>> | undefined;
}

export interface PostRenderSpec {
  /** Extra labels to add to every object. */
  readonly labels: Readonly<Record<string, string>>;
  /** Extra annotations to add to every object. */
  readonly annotations: Readonly<Record<string, string>>;
  /** Ownership and confinement; without it objects only get the labels and annotations. */
  readonly owner?: PostRenderOwner | undefined;
}

/**
 * How rendered objects relate to the custom resource they were rendered for. Objects in the
 * CR's namespace get a controller ownerReference (the garbage collector then removes them with
 * the CR); an ownerReference on a cluster-scoped or other-namespace object is invalid and makes
 * the garbage collector delete it, so those get `nonOwnedAnnotations` instead — or are refused.
 */
export interface PostRenderOwner {
  readonly reference: { readonly apiVersion: string; readonly kind: string; readonly name: string; readonly uid: string };
  /** The CR's (and release's) namespace. */
  readonly namespace: string;
  /** `apiVersion/Kind` of every cluster-scoped kind the API server serves. */
  readonly clusterScopedKinds: readonly string[];
  /**
   * `apiVersion/Kind` of every namespaced kind the API server serves. A kind in neither list is
   * refused: its scope decides where it lands, and a guess would fail open.
   */
  readonly namespacedKinds: readonly string[];
  readonly nonOwnedAnnotations: Readonly<Record<string, string>>;
  readonly allowClusterScoped: boolean;
  readonly allowCrossNamespace: boolean;
}

export interface UninstallRequest extends ReleaseRequestBase {
  readonly disableHooks?: boolean | undefined;
  /** Wait until the release's objects are gone. */
  readonly wait?: boolean | undefined;
}

export interface RollbackRequest extends ReleaseRequestBase {
  /** Revision to return to; undefined → the previous one. */
  readonly revision?: number | undefined;
  readonly force?: boolean | undefined;
  readonly disableHooks?: boolean | undefined;
}

/**
 * A helm call refused because the operator (or this kind's controller) is stopping before the
 * call started. Nothing was done, so there is nothing to record: the reconcile just ends.
 */
export class HelmCallsStopped extends Error {
  override readonly name: string = 'HelmCallsStopped';
}

/**
 * A helm call that had started was stopped because the operator (or this kind's controller) is
 * stopping: helm got SIGTERM (and SIGKILL if it did not exit in time). It may have left the release
 * failed or pending-*; that is the next owner's to clear, not a failure to report on the CR.
 */
export class HelmCallInterrupted extends HelmCallsStopped {
  override readonly name = 'HelmCallInterrupted';
}

/**
 * The Helm actions a reconcile runs. Failures reject with an Error that may carry a string `kind`,
 * with HelmCallsStopped when the call never started, or with HelmCallInterrupted when its signal
 * stopped it.
 */
export interface ReleaseActions {
  /** `helm upgrade --install`; returns the release Helm recorded. */
  upgradeInstall(req: UpgradeInstallRequest): Promise<Release>;
  /** `helm uninstall`; resolves 'not-found' when there was nothing to uninstall. */
  uninstall(req: UninstallRequest): Promise<'uninstalled' | 'not-found'>;
  rollback(req: RollbackRequest): Promise<void>;
  /** Latest revision (any status), or undefined when no release of that name exists; read as `impersonate` when given. */
  status(req: StatusRequest): Promise<Release | undefined>;
}

/** Helm's release records, read from their metadata (no helm process). */
export interface ReleaseStore {
  revisions(namespace: string, release: string): Promise<StoredRevision[]>;
  /**
   * The release's revisions as one LIST of every record found them when the process started, the
   * first time they are asked for; undefined afterwards (or without such a snapshot). Good for a
   * first look that finds nothing to do, never for acting: helm/startup-records.ts.
   */
  startupRevisions?(namespace: string, release: string): Promise<StoredRevision[] | undefined>;
  /** Delete one stored revision (used to clear a crashed operation's pending-* lock), as `impersonate` when given. */
  deleteRevision(namespace: string, revision: StoredRevision, impersonate?: string): Promise<void>;
  /**
   * Which of `revisions` chartpilot did not write for the CR with uid `ownerUid` (forged, edited,
   * copied from another CR, another tool's): no valid record MAC under this CR's key
   * (helm/record-origin.ts). Verdicts are remembered per record version, so a converged CR costs no GET.
   */
  foreignRevisions(namespace: string, release: string, ownerUid: string, revisions: readonly StoredRevision[]): Promise<StoredRevision[]>;
}

/** The CR in full when the cache holds only its spec's summary (controller/cr-reader.ts). */
export interface SpecReader {
  /** The CR as the API server has it now, spec included (one GET); throws NotFound when it is gone. */
  read(cr: CustomResource): Promise<CustomResource>;
}

/** A release record's Secret uid and resourceVersion: together they name one exact content. */
export interface RecordVersion {
  readonly uid: string;
  readonly resourceVersion: string;
}

export interface KeepInput {
  readonly namespace: string;
  readonly release: string;
  readonly revision: number;
  /** The manifest when it is at hand (fresh from helm); otherwise read from Helm's record. */
  readonly manifest?: string | undefined;
  /**
   * The record's creation time, when known (from the storage LIST): with the revision it names
   * the record, as numbering restarts at 1 after an outside `helm uninstall`.
   */
  readonly recordCreatedAt?: string | undefined;
  /** Our fingerprint of the record (its label, or what a deploy just wrote). */
  readonly fingerprint?: string | undefined;
  /**
   * The record's Secret uid and resourceVersion as the storage LIST showed them: one exact content,
   * so a record read and judged ours at that version moments ago need not be read again.
   */
  readonly recordVersion?: RecordVersion | undefined;
  /** The kind that owns the release (Kind.group), so a kind removed by hot reload is forgotten. */
  readonly ownerKind?: string | undefined;
  /** watchDependentResources: without it there are no caches, so no repairs and no readiness. */
  readonly watch: boolean;
  /** Repair drift now (not right after an upgrade, when caches still show the old objects). */
  readonly repair: boolean;
  /**
   * Helm has just written the objects: give the caches a moment to show them before telling
   * readiness, so the status does not first say "missing" (or the old rollout) and then change.
   */
  readonly awaitCaches?: boolean | undefined;
  /** Write repairs as this user (the release's tenant); undefined = the operator's own identity. */
  readonly impersonate?: string | undefined;
  /** The CR's uid: a record read for it must prove it was written for this CR. */
  readonly ownerUid: string;
  /** What the release's objects may be (the entry's confinement); nothing else is read or repaired. */
  readonly confinement: Confinement;
  /** The entry's drift mode and ignore rules; undefined = repair every drifted field. */
  readonly driftDetection?: DriftDetection | undefined;
  /** The entry's outputs and readyWhen, and the CR they are computed for; undefined = none. */
  readonly status?: { readonly program: StatusProgram; readonly self: SelfView } | undefined;
}

export interface KindScopes {
  readonly clusterScoped: readonly string[];
  readonly namespaced: readonly string[];
}

/** Keeps a deployed release true between Helm operations (drift, readiness, inventory). */
export interface ReleaseKeeperPort {
  keep(input: KeepInput): Promise<KeepResult>;
  /** `apiVersion/Kind` of every kind the cluster serves, by scope, for the post-renderer's rules. */
  kindScopes(): Promise<KindScopes>;
  /**
   * Re-reads discovery at once (at most every few seconds) because these `apiVersion/Kind`s were
   * unknown; true when all are known afterwards.
   */
  learnKinds(kinds: readonly string[]): Promise<boolean>;
  /** The release is gone: drop what is remembered about it. */
  forget(namespace: string, release: string): void;
  /** Which of these objects still exist (for uninstall-wait); only those within `confinement` are looked at, as `impersonate` when given. */
  remaining(items: readonly ObjectRef[], confinement: Confinement, impersonate?: string): Promise<ObjectRef[]>;
}
