/** `helm uninstall`: for a deleted CR, and to clear a release that never deployed before installing again. */
import { errorMessage } from '../../lib/errors.js';
import { Reasons } from '../names.js';
import { clip } from '../status.js';
import { CONTINUE, type ActionContext, type StepResult } from './context.js';
import { ReconcileFailure } from './failure.js';

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
    const result = await deps.helm.uninstall({
      release: ctx.name,
      namespace: ctx.namespace,
      timeoutMs: deps.helmTimeoutMs,
      disableHooks: options?.uninstallDisableHooks ?? false,
      description: options?.uninstallDescription,
    });
    if (result === 'uninstalled') {
      deps.events.emit(ctx.cr, 'Normal', Reasons.uninstallSuccessful, `uninstalled release ${ctx.name} (${why})`);
    }
  } catch (err) {
    const message = `helm uninstall failed: ${errorMessage(err)}`;
    deps.events.emit(ctx.cr, 'Warning', Reasons.uninstallError, clip(message));
    await ctx.writeStatus({ kind: 'failed', reason: Reasons.uninstallError, message });
    throw new ReconcileFailure(Reasons.uninstallError, message, { cause: err });
  }
  return CONTINUE;
}
