/** Removes the pending-* lock a crashed operation left on a release, so Helm can proceed. */
import type { StoredRevision } from '../../../core/model.js';
import { Reasons } from '../names.js';
import { CONTINUE, end, type ActionContext, type StepResult } from './context.js';

export async function unlock(ctx: ActionContext, revision: StoredRevision): Promise<StepResult> {
  await ctx.deps.releases.deleteRevision(ctx.namespace, revision, ctx.impersonate);
  ctx.deps.events.emit(
    ctx.cr,
    'Warning',
    Reasons.releaseUnlocked,
    `revision ${revision.revision} was left ${revision.status} by an interrupted operation; its lock was removed so the release can proceed`,
  );
  ctx.log.warn({ revision: revision.revision, status: revision.status }, 'removed stale pending revision');
  return CONTINUE;
}

/** The pending revision may belong to a live operation: look again when it would count as stale. */
export function waitPending(ctx: ActionContext, revision: StoredRevision, retryAfterMs: number): StepResult {
  ctx.log.info({ revision: revision.revision, retryAfterMs }, 'release has an operation in progress');
  return end({ requeueAfterMs: retryAfterMs });
}
