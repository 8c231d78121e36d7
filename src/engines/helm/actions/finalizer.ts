/** The finalizer that lets the operator uninstall a release before its CR goes. */
import { FINALIZER, LEGACY_FINALIZER } from '../names.js';
import { CONTINUE, end, type ActionContext, type StepResult } from './context.js';

/** Added before the first install, so a deleted CR always gets its release uninstalled. */
export async function addFinalizer(ctx: ActionContext): Promise<StepResult> {
  ctx.cr = await ctx.deps.writer.setFinalizers(ctx.cr, [...(ctx.cr.metadata.finalizers ?? []), FINALIZER]);
  return CONTINUE;
}

/** The release is gone: forget it and let the CR be deleted (operator-sdk's legacy finalizer too). */
export async function removeFinalizer(ctx: ActionContext): Promise<StepResult> {
  ctx.deps.keeper?.forget(ctx.namespace, ctx.name);
  await ctx.deps.writer.setFinalizers(
    ctx.cr,
    (ctx.cr.metadata.finalizers ?? []).filter((f) => f !== FINALIZER && f !== LEGACY_FINALIZER),
  );
  return end();
}
