/** Terminal actions that only report: the release is current, paused, irreconcilable or stuck. */
import { forbiddenExplanation, missingServiceAccountMessage } from '../../../core/tenant.js';
import type { KeepResult, Release, StoredRevision } from '../../../core/model.js';
import { Reasons } from '../names.js';
import { latestRevision } from '../plan.js';
import { end, failed, type ActionContext, type Done } from './context.js';
import { ReconcileFailure } from '../../../core/outcome.js';

/**
 * Nothing for Helm to do: keep the release true (drift, readiness, inventory) and write the
 * status if that changed it. `refreshStatus` fetches the release's details once when the status
 * lacks them (e.g. a CR whose status was wiped).
 */
export async function current(ctx: ActionContext, revisions: readonly StoredRevision[], refreshStatus: boolean): Promise<Done> {
  let release: Release | undefined;
  if (refreshStatus) release = await ctx.deps.helm.status(ctx.call);
  const latest = latestRevision(revisions);
  let kept: KeepResult | undefined;
  try {
    kept =
      latest === undefined
        ? undefined
        : await ctx.keep({
            revision: latest.revision,
            recordCreatedAt: latest.createdAt,
            fingerprint: latest.fingerprint,
            recordVersion: latest.uid === undefined || latest.resourceVersion === undefined ? undefined : { uid: latest.uid, resourceVersion: latest.resourceVersion },
            repair: true,
          });
  } catch (err) {
    // A repair RBAC refused (the tenant lacks a right the release needs) is the CR's to show;
    // anything else is retried with backoff as before.
    const refused = forbiddenExplanation(err, ctx.derived.tenant);
    if (refused === undefined) throw err;
    const message = `cannot keep the release as the chart says: ${refused}`;
    ctx.deps.events.emit(ctx.cr, 'Warning', Reasons.reconcileError, message);
    return failed(new ReconcileFailure(Reasons.reconcileError, message, { cause: err }), { kind: 'irreconcilable', message });
  }
  // A paced write (a rollout still in progress) brings the next look forward (core/outcome.ts leave).
  return end(ctx.derived.requeue, { kind: 'current', release, kept });
}

/** A CR it depends on is not Ready: nothing done; looked at again when that one changes, and at the period. */
export function waiting(ctx: ActionContext, message: string): Done {
  return end(ctx.derived.requeue, { kind: 'waiting', message });
}

export function paused(): Done {
  return end({}, { kind: 'paused' });
}

/** The CR cannot be reconciled as it is; retrying cannot help, a change to it (or the chart) will. */
export function irreconcilable(ctx: ActionContext, message: string, reason: string = Reasons.reconcileError): Done {
  ctx.deps.events.emit(ctx.cr, 'Warning', reason, message);
  return end(ctx.derived.problemRetry === true && message === ctx.derived.problem ? ctx.derived.requeue : {}, { kind: 'irreconcilable', reason, message });
}

/**
 * Records of the release were not written by chartpilot for this CR: say so (condition, event),
 * touch nothing. Looked at again every period, so deleting a forgery (or adopting) recovers.
 */
export function foreignRecords(ctx: ActionContext, message: string): Done {
  ctx.deps.events.emit(ctx.cr, 'Warning', Reasons.foreignReleaseRecord, message);
  ctx.log.warn('release records not written by chartpilot for this resource: nothing done');
  const requeue = ctx.derived.requeue.requeueAfterMs === undefined ? { requeueAfterMs: FOREIGN_RECHECK_MS } : ctx.derived.requeue;
  return end(requeue, { kind: 'irreconcilable', reason: Reasons.foreignReleaseRecord, message });
}

/** With periodic re-checks off, a CR held by foreign records still looks again this often. */
const FOREIGN_RECHECK_MS = 60_000;

/**
 * The kind's chart cannot be pulled (registry down, refused, no matching version, bad digest or
 * archive): say so on the CR, touch the release not at all, and fail so the queue retries with
 * backoff. When the chart becomes available the kind's CRs are re-enqueued at once.
 */
export function chartUnavailable(ctx: ActionContext, message: string): Done {
  const reason = ctx.target.chartUnavailable?.reason ?? Reasons.chartUnavailable;
  ctx.deps.events.emit(ctx.cr, 'Warning', Reasons.chartUnavailable, message);
  return failed(new ReconcileFailure(Reasons.chartUnavailable, message), { kind: 'chart-unavailable', reason, message });
}

/**
 * The ServiceAccount the CR's actions must run as is missing: say so (condition and event), touch
 * nothing, and fail so the queue retries with backoff (creating the ServiceAccount also enqueues
 * the namespace's CRs at once).
 */
export function noServiceAccount(ctx: ActionContext): Done {
  const tenant = ctx.derived.tenant;
  if (tenant === undefined) throw new Error('unreachable: no ServiceAccount is configured');
  const message = missingServiceAccountMessage(tenant, 'helm');
  ctx.deps.events.emit(ctx.cr, 'Warning', Reasons.serviceAccountNotFound, message);
  return failed(new ReconcileFailure(Reasons.serviceAccountNotFound, message), { kind: 'irreconcilable', reason: Reasons.serviceAccountNotFound, message });
}

/** An action did not take effect: fail, so the queue retries with backoff. */
export function stuck(message: string): Done {
  return failed(new ReconcileFailure(Reasons.reconcileError, message));
}
