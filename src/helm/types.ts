/** The edge between chartpilot and Helm: the only interface the reconciler uses. */

/**
 * Helm's resource policy: objects annotated this way are left behind on uninstall. Both the
 * post-renderer (never own them) and uninstall-wait (never wait for them) must agree on it.
 */
export const KEEP_POLICY = { annotation: 'helm.sh/resource-policy', value: 'keep' } as const;

export type ReleaseStatus =
  | 'unknown'
  | 'deployed'
  | 'uninstalled'
  | 'superseded'
  | 'failed'
  | 'uninstalling'
  | 'pending-install'
  | 'pending-upgrade'
  | 'pending-rollback';

export interface HelmRelease {
  readonly name: string;
  readonly namespace: string;
  readonly revision: number;
  readonly status: ReleaseStatus;
  readonly chartName: string;
  readonly chartVersion: string;
  readonly appVersion: string;
  /** Rendered NOTES.txt, '' when the chart has none. */
  readonly notes: string;
  /** Rendered manifest (multi-document YAML) of this revision. */
  readonly manifest: string;
  readonly description: string;
}

export interface ReleaseRequestBase {
  readonly release: string;
  readonly namespace: string;
  /** Kill helm after this long; the call then fails with a HelmError of kind 'timeout'. */
  readonly timeoutMs: number;
  readonly description?: string | undefined;
}

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
   * reconciler keeps its fingerprint there, so "is this release current?" is answered from Secret
   * metadata without running helm.
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

export interface TemplateRequest {
  readonly release: string;
  readonly namespace: string;
  readonly chart: string;
  readonly values: Record<string, unknown>;
  readonly timeoutMs: number;
}

export interface HelmClient {
  /** `helm upgrade --install`; returns the release Helm recorded. */
  upgradeInstall(req: UpgradeInstallRequest): Promise<HelmRelease>;
  /** `helm uninstall`; resolves 'not-found' when there was nothing to uninstall. */
  uninstall(req: UninstallRequest): Promise<'uninstalled' | 'not-found'>;
  rollback(req: RollbackRequest): Promise<void>;
  /** Latest revision (any status), or undefined when no release of that name exists. */
  status(release: string, namespace: string, timeoutMs: number): Promise<HelmRelease | undefined>;
  /** Every stored revision, oldest first ([] when none). */
  history(release: string, namespace: string, timeoutMs: number): Promise<readonly HelmRelease[]>;
  /** `helm template`: render without touching the cluster. */
  template(req: TemplateRequest): Promise<string>;
}

export type HelmErrorKind =
  | 'not-found' // no such release
  | 'locked' // another operation (install/upgrade/rollback) is in progress
  | 'render' // chart failed to render or produced invalid objects
  | 'conflict' // objects exist and are owned by something else / different chart
  | 'timeout' // helm was killed after the timeout
  | 'failed'; // anything else; message carries helm's words

/** A failed helm call. `message` is helm's own explanation, trimmed, never the values. */
export class HelmError extends Error {
  override readonly name = 'HelmError';
  constructor(
    readonly kind: HelmErrorKind,
    message: string,
    readonly action: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
