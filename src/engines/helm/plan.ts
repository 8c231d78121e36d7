/**
 * What to do next for one custom resource: a pure function of what was observed and of what this
 * reconcile has already done. The reconciler runs the action, observes again and re-plans until
 * the plan says the reconcile ends; every decision — including remediation after a failed Helm
 * operation (which revision to roll back to, whether to remove a failed first install) — is made
 * here and table-tested without a cluster.
 *
 * The loop ends explicitly: a terminal action ends it, and a non-terminal action may run at most
 * once per reconcile. Planning one a second time means it did not change what it should have, so
 * the plan says `stuck` instead of repeating it; the queue then retries with backoff.
 */
import type { ObjectRef, StoredRevision } from '../../core/model.js';

export interface PlanInput {
  /** metadata.deletionTimestamp is set. */
  readonly deleting: boolean;
  /** Our finalizer (or operator-sdk's legacy one) is on the object. */
  readonly hasFinalizer: boolean;
  readonly paused: boolean;
  /** The uninstall-wait annotation: the CR stays until the release's objects are gone. */
  readonly uninstallWait: boolean;
  /** Why the CR cannot be reconciled as it is (bad spec, bad name, bad annotation). */
  readonly problem: string | undefined;
  /** Why the kind's chart (from a registry) cannot be had; undefined when it is at hand. */
  readonly chartUnavailable?: string | undefined;
  /** The kind runs as a ServiceAccount and the CR's namespace has none of that name. */
  readonly serviceAccountMissing: boolean;
  /** A CR it depends on (dependsOn) is not Ready: why, naming it; undefined when all are, or none are listed. */
  readonly waitingFor?: string | undefined;
  readonly desiredFingerprint: string;
  /** `Kind.group` of the watched kind, recorded on releases this operator writes. */
  readonly ownerKind: string;
  /** Stored revisions of the release, in any order. */
  readonly revisions: readonly StoredRevision[];
  /**
   * Those of `revisions` chartpilot did not write for this CR (forged, edited, copied from another
   * CR, another tool's). Any at all and nothing is done to the release: Helm would act on them.
   */
  readonly foreignRevisions: readonly StoredRevision[];
  /** `status.deployedRelease.inventory` as the CR shows it now. */
  readonly inventory: readonly ObjectRef[];
  /** Whether the release's objects can be looked up at all (no keeper → uninstall-wait cannot wait). */
  readonly canCheckObjects: boolean;
  /**
   * The API server's time now (ms since the epoch, as core/ports.ts ServerClock reads it): the lock
   * rule reads only the server's clock, never this host's, so a skewed host clock changes nothing.
   */
  readonly serverNow: number;
  /**
   * The cluster's resourceVersion when this process started (before it stood by or reconciled),
   * undefined when it could not be read. A pending revision last written before it cannot be a
   * call of this process: it is a crashed predecessor's lock.
   */
  readonly startedAtRevision: string | undefined;
  /** How long one helm call may run; a pending revision older than that is stale too. */
  readonly helmTimeoutMs: number;
  /**
   * Helm calls that an operator stopping stopped (this process, or the leader before it, as the
   * Lease it released says): no live process holds a lock such a call left.
   */
  readonly stoppedCalls: { has(call: string): boolean };
  /** `status.deployedRelease.revision` as the CR shows it now. */
  readonly statusRevision: number | undefined;
  /** What this reconcile has done so far. */
  readonly progress: Progress;
}

/** What this reconcile has done so far; the reconciler appends to it after each action. */
export interface Progress {
  /** Kinds of the non-terminal actions already run. */
  readonly taken: readonly NonTerminalKind[];
  /** An install or upgrade that failed in this reconcile; remediation follows, then `fail`. */
  readonly failedDeploy: 'install' | 'upgrade' | undefined;
  /** Reading the release or remediating it failed too: no more remediation, just report. */
  readonly remediationFailed: boolean;
  /** Objects of the release still present, once `check-objects-gone` has looked. */
  readonly remaining: readonly ObjectRef[] | undefined;
}

export const NO_PROGRESS: Progress = { taken: [], failedDeploy: undefined, remediationFailed: false, remaining: undefined };

/** Actions after which the reconciler observes and plans again. */
export type NonTerminalAction =
  | { readonly kind: 'add-finalizer' }
  /** A pending-* revision left by a crashed operation: delete that record so Helm can proceed. */
  | { readonly kind: 'unlock'; readonly revision: StoredRevision }
  /** No deployed revision, but failed or half-removed ones: clear them, then install. */
  | { readonly kind: 'clear-failed-release' }
  | { readonly kind: 'uninstall' }
  /** uninstall-wait: find out which of the release's objects still exist. */
  | { readonly kind: 'check-objects-gone' }
  /** Remediation of a failed upgrade: back to the last good revision. */
  | { readonly kind: 'rollback'; readonly revision: number }
  /** Remediation of a failed first install: remove the half-made release so the next try starts clean. */
  | { readonly kind: 'remove-failed-install' };

export type NonTerminalKind = NonTerminalAction['kind'];

/** Actions that end the reconcile (install and upgrade end it when they succeed). */
export type TerminalAction =
  /** Nothing to do. `refreshStatus` → the status lacks the release's details; fetch them once. */
  | { readonly kind: 'none'; readonly refreshStatus: boolean }
  /** Being deleted, and no finalizer of ours holds it: nothing left to do. */
  | { readonly kind: 'released' }
  | { readonly kind: 'paused' }
  | { readonly kind: 'irreconcilable'; readonly message: string }
  /** The release of this name belongs to another kind: never touch it. */
  | { readonly kind: 'conflict'; readonly message: string }
  /**
   * Records of the release that chartpilot did not write for this CR: no helm call, no read of
   * any object they name, no write; say which records and how to get out. Also while deleting
   * (the finalizer stays: uninstalling would act on them).
   */
  | { readonly kind: 'foreign-records'; readonly message: string }
  /** The chart cannot be pulled: say so, touch nothing, retry with backoff (the kind re-enqueues when it recovers). */
  | { readonly kind: 'chart-unavailable'; readonly message: string }
  /** A CR it depends on is not Ready: touch nothing, say which (Ready False, DependencyNotReady); its change re-checks this one. */
  | { readonly kind: 'waiting'; readonly message: string }
  /** The ServiceAccount every action must run as is missing: say so, touch nothing, retry with backoff. */
  | { readonly kind: 'no-service-account' }
  /**
   * Being deleted, and the ServiceAccount the uninstall must run as is gone (as when the whole
   * namespace is being deleted): let the CR go without helm; its objects go with it by their
   * ownerReferences. Uninstalling as the operator instead would act on a release record anyone who
   * may write Secrets in the namespace could have forged.
   */
  | { readonly kind: 'skip-uninstall' }
  | { readonly kind: 'install' }
  | { readonly kind: 'upgrade' }
  /** A pending-* revision that may belong to a live operation: look again later. */
  | { readonly kind: 'wait-pending'; readonly retryAfterMs: number; readonly revision: StoredRevision }
  /** uninstall-wait: the release is uninstalled but some of its objects are still being deleted. */
  | { readonly kind: 'wait-objects-gone'; readonly remaining: readonly ObjectRef[] }
  | { readonly kind: 'remove-finalizer' }
  /** A deploy failed (and was remediated where possible): record why; the queue retries with backoff. */
  | { readonly kind: 'fail'; readonly action: 'install' | 'upgrade' }
  /** A non-terminal action did not change what it should have; retrying later is all that is left. */
  | { readonly kind: 'stuck'; readonly message: string };

export type Plan = NonTerminalAction | TerminalAction;

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

const isGood = (r: StoredRevision): boolean => r.status === 'deployed' || r.status === 'superseded';

/** Revisions that still stand for objects in the cluster. */
function liveRevisions(revisions: readonly StoredRevision[]): StoredRevision[] {
  return revisions.filter((r) => r.status !== 'uninstalled');
}

/** The newest good revision older than `before`: where a failed upgrade rolls back to. */
export function rollbackTarget(revisions: readonly StoredRevision[], before: number): number | undefined {
  let best: number | undefined;
  for (const r of revisions) {
    if (r.revision < before && isGood(r) && (best === undefined || r.revision > best)) best = r.revision;
  }
  return best;
}

export function plan(input: PlanInput): Plan {
  const next = decide(input);
  if (isNonTerminal(next) && input.progress.taken.includes(next.kind)) {
    return { kind: 'stuck', message: `${next.kind} ran but the release did not change as expected; will retry` };
  }
  return next;
}

function isNonTerminal(p: Plan): p is NonTerminalAction {
  switch (p.kind) {
    case 'add-finalizer':
    case 'unlock':
    case 'clear-failed-release':
    case 'uninstall':
    case 'check-objects-gone':
    case 'rollback':
    case 'remove-failed-install':
      return true;
    default:
      return false;
  }
}

function decide(input: PlanInput): Plan {
  const { progress } = input;
  const latest = latestRevision(input.revisions);

  if (input.deleting && !input.hasFinalizer) return { kind: 'released' };
  // Before anything else, remediation and uninstall included: helm would read these records.
  if (input.foreignRevisions.length > 0) return { kind: 'foreign-records', message: foreignRecordsMessage(input.foreignRevisions, input.deleting) };
  if (progress.failedDeploy !== undefined) return remediation(input, progress.failedDeploy, latest);

  const foreign = latest?.ownerKind !== undefined && latest.ownerKind !== input.ownerKind;

  if (input.deleting) {
    // A release of another kind is not ours to remove; let the CR go.
    if (!foreign && liveRevisions(input.revisions).length > 0) return input.serviceAccountMissing ? { kind: 'skip-uninstall' } : { kind: 'uninstall' };
    // uninstall-wait: the CR stays until every object of its release is really gone (finalizers,
    // terminating pods), so whoever waits on its deletion waits for all of it.
    if (input.uninstallWait && input.canCheckObjects && input.inventory.length > 0) {
      if (progress.remaining === undefined) return { kind: 'check-objects-gone' };
      if (progress.remaining.length > 0) return { kind: 'wait-objects-gone', remaining: progress.remaining };
    }
    return { kind: 'remove-finalizer' };
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
  if (input.serviceAccountMissing) return { kind: 'no-service-account' };
  if (input.chartUnavailable !== undefined) return { kind: 'chart-unavailable', message: input.chartUnavailable };
  if (!input.hasFinalizer) return { kind: 'add-finalizer' };
  if (input.waitingFor !== undefined) return { kind: 'waiting', message: input.waitingFor };

  if (latest === undefined || latest.status === 'uninstalled') return { kind: 'install' };

  if (PENDING.has(latest.status)) {
    if (leftByStoppedCall(latest, input.revisions, input.stoppedCalls)) return { kind: 'unlock', revision: latest };
    // Both tests read the API server's clocks alone: its wall time (creationTimestamp against the
    // server's now) and its write order (resourceVersion). We run one operation per release at a
    // time, so a lock last written before this process started is a crashed predecessor's;
    // one written since may be a live helm's, and is waited on until no helm call could still run.
    const created = latest.createdAt === undefined ? Number.NaN : Date.parse(latest.createdAt);
    const staleAt = created + input.helmTimeoutMs + PENDING_GRACE_MS;
    if (Number.isNaN(created) || input.serverNow >= staleAt) return { kind: 'unlock', revision: latest };
    if (writtenBy(latest.resourceVersion, input.startedAtRevision)) return { kind: 'unlock', revision: latest };
    return { kind: 'wait-pending', retryAfterMs: staleAt - input.serverNow, revision: latest };
  }

  if (!input.revisions.some(isGood)) return { kind: 'clear-failed-release' };

  if (latest.status === 'deployed' && latest.fingerprint === input.desiredFingerprint) {
    return { kind: 'none', refreshStatus: input.statusRevision !== latest.revision };
  }
  return { kind: 'upgrade' };
}

const DECIMAL = /^(?:0|[1-9]\d*)$/u;

/**
 * Whether the record version `rv` was already written when the cluster stood at version `start`
 * (the start read's own version included: that read saw it, so it predates every write this
 * process made after). Kubernetes resourceVersions are etcd's revisions, one counter for every
 * write (comparable by the API's own rule since KEP-5504); one that is not a decimal number proves
 * nothing: fail closed (wait).
 */
export function writtenBy(rv: string | undefined, start: string | undefined): boolean {
  if (rv === undefined || start === undefined || !DECIMAL.test(rv) || !DECIMAL.test(start)) return false;
  return BigInt(rv) <= BigInt(start);
}

/** Records our install and upgrade calls create, and so carry their own call label. */
const CALL_LOCKS = new Set(['pending-install', 'pending-upgrade']);

/**
 * Whether `latest` is the lock of an install or upgrade that an operator stopped: its call is known
 * stopped, and this is the record that call created. Helm copies the previous record's labels onto
 * the next, so someone else's later upgrade (or rollback, or an uninstall marking this very
 * record) may carry a stopped call's label too: those show the label on an older revision, or
 * another status, and are left to the time rule.
 */
export function leftByStoppedCall(latest: StoredRevision, revisions: readonly StoredRevision[], stopped: PlanInput['stoppedCalls']): boolean {
  const call = latest.call;
  if (call === undefined || !CALL_LOCKS.has(latest.status) || !stopped.has(call)) return false;
  return !revisions.some((r) => r.revision < latest.revision && r.call === call);
}

/**
 * Names the records and the two ways out. The same whatever the records hold (no oracle): only
 * their names, which whoever wrote them chose.
 */
export function foreignRecordsMessage(foreign: readonly StoredRevision[], deleting: boolean): string {
  const names = [...foreign].sort((a, b) => a.revision - b.revision).map((r) => r.secretName);
  const shown = names.slice(0, 5).join(', ') + (names.length > 5 ? ` and ${names.length - 5} more` : '');
  const one = names.length === 1;
  return (
    `Helm release record${one ? '' : 's'} ${shown} ${one ? 'was' : 'were'} not written by chartpilot for this resource, ` +
    `so nothing is done to the release (no upgrade, rollback, uninstall or repair): delete ${one ? 'it' : 'them'} if ${one ? 'it is a forgery' : 'they are forgeries'}, ` +
    `or run \`chartpilot adopt\` if ${one ? 'it belongs to a release' : 'they belong to a release'} you mean this resource to take over` +
    (deleting
      ? '; the resource keeps its finalizer until then (remove the finalizer by hand to let it go without uninstalling anything)'
      : '')
  );
}

/**
 * After a failed install or upgrade in this reconcile: undo what Helm left behind, once, then
 * report. A failure before Helm recorded anything (a template error) leaves nothing to undo.
 */
function remediation(input: PlanInput, failed: 'install' | 'upgrade', latest: StoredRevision | undefined): Plan {
  const { progress } = input;
  const remediated = progress.taken.includes('rollback') || progress.taken.includes('remove-failed-install');
  if (remediated || progress.remediationFailed) return { kind: 'fail', action: failed };
  if (failed === 'install' && latest !== undefined && !input.revisions.some(isGood)) return { kind: 'remove-failed-install' };
  if (failed === 'upgrade' && latest?.status === 'failed') {
    const good = rollbackTarget(input.revisions, latest.revision);
    if (good !== undefined) return { kind: 'rollback', revision: good };
  }
  return { kind: 'fail', action: failed };
}
