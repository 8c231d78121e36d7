/** `helm uninstall`: for a deleted CR, and to clear a release that never deployed before installing again. */
import { errorMessage } from '../../../lib/errors.js';
import { forbiddenExplanation } from '../../../core/tenant.js';
import { Reasons } from '../names.js';
import { clip } from '../../../core/conditions.js';
import { HelmCallsStopped } from '../ports.js';
import { CONTINUE, failed, type ActionContext, type StepResult } from './context.js';
import { ReconcileFailure } from '../../../core/outcome.js';
import { removeFinalizer } from './finalizer.js';

export function uninstallDeleted(ctx: ActionContext): Promise<StepResult> {
  return uninstall(ctx, 'resource deleted');
}

export function clearFailedRelease(ctx: ActionContext): Promise<StepResult> {
  return uninstall(ctx, 'failed release cleared before installing again');
}

async function uninstall(ctx: ActionContext, why: string): Promise<StepResult> {
  const { deps } = ctx;
  const options = ctx.derived.crOptions;
  try {
    const request = { ...ctx.call, disableHooks: options?.uninstallDisableHooks ?? false, description: options?.uninstallDescription };
    const result = await ctx.announced('uninstall', () => deps.helm.uninstall(request));
    if (result === 'uninstalled') {
      deps.events.emit(ctx.cr, 'Normal', Reasons.uninstallSuccessful, `uninstalled release ${ctx.name} (${why})`);
    }
  } catch (err) {
    if (err instanceof HelmCallsStopped) throw err; // never started: nothing to record
    const message = `helm uninstall failed: ${forbiddenExplanation(err, ctx.derived.tenant) ?? errorMessage(err)}`;
    deps.events.emit(ctx.cr, 'Warning', Reasons.uninstallError, clip(message));
    return failed(new ReconcileFailure(Reasons.uninstallError, message, { cause: err }), { kind: 'failed', reason: Reasons.uninstallError, message, inputs: 'uninstall' });
  }
  return CONTINUE;
}

/**
 * The CR is being deleted and its ServiceAccount is gone, so nothing may be uninstalled as it
 * (typically the whole namespace is being deleted). The CR goes without helm: its objects in the
 * namespace follow it through their ownerReferences; Helm's records stay until the namespace goes.
 */
export async function skipUninstall(ctx: ActionContext): Promise<StepResult> {
  const t = ctx.derived.tenant;
  const who = t === undefined ? 'its ServiceAccount' : `ServiceAccount ${t.namespace}/${t.serviceAccount}`;
  ctx.deps.events.emit(
    ctx.cr,
    'Warning',
    Reasons.uninstallSkipped,
    `${who} no longer exists, so release ${ctx.name} cannot be uninstalled as it; the resource is released without helm: ` +
      `its objects in this namespace are deleted with it (ownerReferences), Helm's release records stay in the namespace`,
  );
  ctx.log.warn({ serviceAccount: t?.serviceAccount }, 'service account gone: releasing the resource without helm uninstall');
  return removeFinalizer(ctx);
}
