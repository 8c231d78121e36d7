/**
 * The Helm client: the reconciler's `ReleaseActions` (engines/helm/ports.ts) plus what only the
 * command-line tools use (history, template). Request and release shapes are the core's.
 */
import type { Release, ReleaseStatus } from '../core/model.js';
import type {
  PostRenderOwner,
  PostRenderSpec,
  ReleaseActions,
  ReleaseRequestBase,
  RollbackRequest,
  StatusRequest,
  UninstallRequest,
  UpgradeInstallRequest,
} from '../engines/helm/ports.js';

export type { PostRenderOwner, PostRenderSpec, Release, ReleaseRequestBase, ReleaseStatus, RollbackRequest, StatusRequest, UninstallRequest, UpgradeInstallRequest };

/**
 * Helm's resource policy: objects annotated this way are left behind on uninstall. Both the
 * post-renderer (never own them) and uninstall-wait (never wait for them) must agree on it.
 */
export const KEEP_POLICY = { annotation: 'helm.sh/resource-policy', value: 'keep' } as const;

export interface TemplateRequest {
  readonly release: string;
  readonly namespace: string;
  readonly chart: string;
  readonly values: Record<string, unknown>;
  readonly timeoutMs: number;
}

export interface HelmClient extends ReleaseActions {
  /** Every stored revision, oldest first ([] when none); read as `impersonate` when given. */
  history(req: StatusRequest): Promise<readonly Release[]>;
  /** `helm template`: render without touching the cluster. */
  template(req: TemplateRequest): Promise<string>;
}

export type HelmErrorKind =
  | 'not-found' // no such release
  | 'locked' // another operation (install/upgrade/rollback) is in progress
  | 'render' // chart failed to render or produced invalid objects
  | 'forbidden' // RBAC refused a request of helm's (or of a lookup); message: who may not do what where
  | 'conflict' // objects exist and are owned by something else / different chart
  | 'timeout' // helm was killed after the timeout
  | 'refused' // chartpilot's API gate refused a request of helm's (confinement, release records); message: what and which rule
  | 'failed'; // anything else; message carries helm's words

/** A failed helm call. `message` is helm's own explanation, trimmed, never the values. */
export class HelmError extends Error {
  override readonly name = 'HelmError';
  constructor(
    readonly kind: HelmErrorKind,
    message: string,
    readonly action: string,
    options?: { cause?: unknown; unknownKinds?: readonly string[] },
  ) {
    super(message, options);
    this.unknownKinds = options?.unknownKinds ?? [];
  }

  /** For a post-render refusal: the kinds discovery did not know (re-read discovery, then retry). */
  readonly unknownKinds: readonly string[];
}
