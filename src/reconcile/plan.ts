/**
 * What to do next for one custom resource: a pure function of what was observed. The reconciler
 * acts on the plan, observes again and re-plans until the plan says it is done, so every
 * multi-step recovery (unlock, then upgrade) is a sequence of small, separately tested decisions.
 */
import type { StoredRevision } from './types.js';

export interface PlanInput {
  /** metadata.deletionTimestamp is set. */
  readonly deleting: boolean;
  /** Our finalizer (or operator-sdk's legacy one) is on the object. */
  readonly hasFinalizer: boolean;
  readonly paused: boolean;
  /** Why the CR cannot be reconciled as it is (bad spec, bad name, bad annotation). */
  readonly problem: string | undefined;
  readonly desiredFingerprint: string;
  /** `Kind.group` of the watched kind, recorded on releases this operator writes. */
  readonly ownerKind: string;
  /** Stored revisions of the release, in any order. */
  readonly revisions: readonly StoredRevision[];
  readonly now: number;
  /** When this operator process started: a pending revision older than that is a crash's lock. */
  readonly processStartedAt: number;
  /** How long one helm call may run; a pending revision older than that is stale too. */
  readonly helmTimeoutMs: number;
  /** `status.deployedRelease.revision` as the CR shows it now. */
  readonly statusRevision: number | undefined;
}

export type Plan =
  /** Nothing to do. `refreshStatus` → the status lacks the release's details; fetch them once. */
  | { readonly kind: 'none'; readonly refreshStatus: boolean }
  | { readonly kind: 'paused' }
  | { readonly kind: 'irreconcilable'; readonly message: string }
  /** The release of this name belongs to another kind: never touch it. */
  | { readonly kind: 'conflict'; readonly message: string }
  | { readonly kind: 'add-finalizer' }
  | { readonly kind: 'install' }
  | { readonly kind: 'upgrade' }
  /** No deployed revision, but failed or half-removed ones: clear them, then install. */
  | { readonly kind: 'clear-failed-release' }
  /** A pending-* revision left by a crashed operation: delete that record so Helm can proceed. */
  | { readonly kind: 'unlock'; readonly revision: StoredRevision }
  /** A pending-* revision that may belong to a live operation: look again later. */
  | { readonly kind: 'wait-pending'; readonly retryAfterMs: number; readonly revision: StoredRevision }
  | { readonly kind: 'uninstall' }
  | { readonly kind: 'remove-finalizer' };

const PENDING = new Set(['pending-install', 'pending-upgrade', 'pending-rollback', 'uninstalling']);
/** Grace on top of the helm timeout before a pending revision of a live process counts as stale. */
const PENDING_GRACE_MS = 30_000;

export function latestRevision(revisions: readonly StoredRevision[]): StoredRevision | undefined {
  let latest: StoredRevision | undefined;
  for (const r of revisions) {
    if (latest === undefined || r.revision > latest.revision) latest = r;
  }
  return latest;
}

/** Revisions that still stand for objects in the cluster. */
function liveRevisions(revisions: readonly StoredRevision[]): StoredRevision[] {
  return revisions.filter((r) => r.status !== 'uninstalled');
}

export function plan(input: PlanInput): Plan {
  const latest = latestRevision(input.revisions);
  const foreign = latest?.ownerKind !== undefined && latest.ownerKind !== input.ownerKind;

  if (input.deleting) {
    if (!input.hasFinalizer) return { kind: 'none', refreshStatus: false };
    // A release of another kind is not ours to remove; let the CR go.
    if (foreign || liveRevisions(input.revisions).length === 0) return { kind: 'remove-finalizer' };
    return { kind: 'uninstall' };
  }

  if (input.problem !== undefined) return { kind: 'irreconcilable', message: input.problem };
  if (input.paused) return { kind: 'paused' };
  if (foreign) {
    return {
      kind: 'conflict',
      message:
        `a Helm release with this name already exists in this namespace and belongs to ${latest.ownerKind}; ` +
        `rename this resource or remove the other release`,
    };
  }
  if (!input.hasFinalizer) return { kind: 'add-finalizer' };

  if (latest === undefined || latest.status === 'uninstalled') return { kind: 'install' };

  if (PENDING.has(latest.status)) {
    const created = latest.createdAt === undefined ? Number.NaN : Date.parse(latest.createdAt);
    // Unknown age, or written before this process started (we run one operation per release at a
    // time, so only a crashed predecessor can have left it), or older than any helm call may run.
    const staleAt = created + input.helmTimeoutMs + PENDING_GRACE_MS;
    if (Number.isNaN(created) || created < input.processStartedAt || input.now >= staleAt) {
      return { kind: 'unlock', revision: latest };
    }
    return { kind: 'wait-pending', retryAfterMs: staleAt - input.now, revision: latest };
  }

  const hasDeployed = input.revisions.some((r) => r.status === 'deployed' || r.status === 'superseded');
  if (!hasDeployed) return { kind: 'clear-failed-release' };

  if (latest.status === 'deployed' && latest.fingerprint === input.desiredFingerprint) {
    return { kind: 'none', refreshStatus: input.statusRevision !== latest.revision };
  }
  return { kind: 'upgrade' };
}
