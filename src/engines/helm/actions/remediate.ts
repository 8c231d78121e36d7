/**
 * After a failed install or upgrade: undo what Helm left behind (the plan chose how), then record
 * why on the CR (the status the reconcile ends with) and fail so the queue retries with backoff.
 */
import { errorMessage } from '../../../lib/errors.js';
import { Reasons } from '../names.js';
import { clip } from '../../../core/conditions.js';
import { HelmCallsStopped } from '../ports.js';
import { CONTINUE, failed, failureMessage, remediated, type ActionContext, type Done, type FailedDeploy, type StepResult } from './context.js';
import { ReconcileFailure } from '../../../core/outcome.js';

function failureOf(ctx: ActionContext): FailedDeploy {
  if (ctx.failure === undefined) throw new Error('unreachable: remediation without a failed deploy');
  return ctx.failure;
}

/** Remediation failed, or reading the release to decide it did: nothing more is tried in this reconcile. */
export function remediationFailed(ctx: ActionContext, err: unknown): void {
  ctx.failure = remediated(failureOf(ctx), `cleaning up after it also failed: ${errorMessage(err)}`);
  ctx.progress = { ...ctx.progress, remediationFailed: true };
}

/** A failed upgrade: back to the last good revision. */
export async function rollback(ctx: ActionContext, revision: number): Promise<StepResult> {
  const failure = failureOf(ctx);
  try {
    const request = { ...ctx.call, revision, force: ctx.derived.crOptions?.rollbackForce ?? false };
    await ctx.announced('rollback', () => ctx.deps.helm.rollback(request));
  } catch (err) {
    if (err instanceof HelmCallsStopped) throw err; // never started: nothing to record
    remediationFailed(ctx, err);
    return CONTINUE;
  }
  ctx.failure = remediated(failure, `rolled back to revision ${String(revision)}`);
  ctx.deps.events.emit(ctx.cr, 'Normal', Reasons.rollbackSuccessful, `rolled back release ${ctx.name} to revision ${revision} after a failed upgrade`);
  return CONTINUE;
}

/** A failed first install leaves half a release; remove it so the next attempt starts clean. */
export async function removeFailedInstall(ctx: ActionContext): Promise<StepResult> {
  const failure = failureOf(ctx);
  try {
    const request = ctx.call;
    await ctx.announced('uninstall', () => ctx.deps.helm.uninstall(request));
  } catch (err) {
    if (err instanceof HelmCallsStopped) throw err; // never started: nothing to record
    remediationFailed(ctx, err);
    return CONTINUE;
  }
  ctx.failure = remediated(failure, 'the partial release was uninstalled');
  return CONTINUE;
}

/** Records the failure (event, ReleaseFailed condition) and fails the reconcile. */
export function fail(ctx: ActionContext, action: 'install' | 'upgrade'): Done {
  const failure = failureOf(ctx);
  const message = failureMessage(failure);
  const reason = action === 'install' ? Reasons.installError : Reasons.upgradeError;
  ctx.deps.events.emit(ctx.cr, 'Warning', reason, clip(message));
  return failed(new ReconcileFailure(reason, message, { cause: failure.cause }), { kind: 'failed', reason, message, inputs: ctx.derived.desiredFingerprint });
}
