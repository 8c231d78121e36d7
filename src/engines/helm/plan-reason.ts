/**
 * Why the plan chose what it chose, in a sentence for the log (`acting` and `planned`, as `why`)
 * and the Reconciling message beside a helm call, as the Ansible plan's `why` is: pure, from the
 * same input the plan read. It names revisions and states, never values or their fingerprints.
 */
import { latestRevision, leftByStoppedCall, writtenBy, type Plan, type PlanInput } from './plan.js';

export function planReason(input: PlanInput, next: Plan): string {
  const latest = latestRevision(input.revisions);
  const at = latest === undefined ? '' : `revision ${String(latest.revision)}`;
  switch (next.kind) {
    case 'add-finalizer':
      return 'the finalizer is not on the resource yet';
    case 'unlock': {
      const r = next.revision;
      if (leftByStoppedCall(r, input.revisions, input.stoppedCalls)) return `revision ${String(r.revision)} is the lock of a helm call an operator stopped on its way out`;
      if (writtenBy(r.resourceVersion, input.startedAtRevision)) {
        return `revision ${String(r.revision)} (${r.status}) was last written before this process started (resourceVersion ${r.resourceVersion ?? '?'} ≤ ${input.startedAtRevision ?? '?'})`;
      }
      return `revision ${String(r.revision)} (${r.status}) is older than any helm call may run, or of unknown age`;
    }
    case 'clear-failed-release':
      return 'no revision of the release ever deployed: the failed ones are cleared before installing again';
    case 'uninstall':
      return 'the resource is being deleted';
    case 'check-objects-gone':
    case 'wait-objects-gone':
      return 'uninstall-wait: the resource stays until the release\'s objects are gone';
    case 'rollback':
      return `the upgrade failed: back to revision ${String(next.revision)}, the last good one`;
    case 'remove-failed-install':
      return 'the first install failed: its half-made release is removed so the next attempt starts clean';
    case 'none':
      return `${at} holds what the resource asks for (the same fingerprint)`;
    case 'install':
      return latest === undefined ? 'no release of this name yet' : `${at} was uninstalled`;
    case 'upgrade':
      if (latest === undefined) return 'no release yet';
      if (latest.status !== 'deployed') return `the latest ${at} is ${latest.status}`;
      if (latest.fingerprint === undefined) return `${at} carries no fingerprint (written by another tool or an older operator)`;
      return `the spec, chart or settings changed since ${at}`;
    case 'wait-pending':
      return `revision ${String(next.revision.revision)} is locked (${next.revision.status}) by an operation that may still run`;
    case 'released':
      return 'being deleted, and no finalizer of this operator holds it';
    case 'paused':
      return 'the resource is paused (annotation)';
    case 'irreconcilable':
    case 'conflict':
    case 'foreign-records':
    case 'chart-unavailable':
    case 'waiting':
    case 'stuck':
      return next.message;
    case 'no-service-account':
      return 'the ServiceAccount it runs as is missing';
    case 'skip-uninstall':
      return 'being deleted, and the ServiceAccount the uninstall must run as is gone';
    case 'remove-finalizer':
      return 'the release is gone';
    case 'fail':
      return `the ${next.action} failed and was remediated where it could be`;
  }
}
