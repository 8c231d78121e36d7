/** uninstall-wait: the CR stays until every object of its uninstalled release is really gone. */
import type { ObjectRef } from '../../../core/model.js';
import { CONTINUE, end, type ActionContext, type Done, type StepResult } from './context.js';

/** How often uninstall-wait looks again for objects still being deleted. */
export const UNINSTALL_WAIT_POLL_MS = 2_000;

/** Looks up which objects of the inventory still exist; the plan decides what follows. */
export async function checkObjectsGone(ctx: ActionContext): Promise<StepResult> {
  const inventory = ctx.cr.status?.deployedRelease?.inventory ?? [];
  const remaining = ctx.deps.keeper === undefined ? [] : await ctx.deps.keeper.remaining(inventory, ctx.confinement, ctx.impersonate);
  ctx.progress = { ...ctx.progress, remaining };
  return CONTINUE;
}

/** Says which objects are still there and looks again shortly. */
export function waitObjectsGone(remaining: readonly ObjectRef[]): Done {
  const named = remaining.slice(0, 3).map((i) => `${i.kind} ${i.name}`).join(', ');
  const more = remaining.length > 3 ? ` and ${remaining.length - 3} more` : '';
  return end({ requeueAfterMs: UNINSTALL_WAIT_POLL_MS }, { kind: 'uninstalling', message: `release uninstalled; waiting for ${named}${more} to be deleted (uninstall-wait)` });
}
