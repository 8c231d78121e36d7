/**
 * Bounds the helm processes one controller runs at once. Its work queue may run more reconciles
 * than that (follow-up workers refresh status beside the installs); should one of those need
 * helm after all, it waits here, so `--max-concurrent-reconciles` still bounds helm.
 */
import { Semaphore } from '../lib/semaphore.js';
import type { ReleaseActions } from '../reconcile/ports.js';

export function limitConcurrentCalls(actions: ReleaseActions, limit: number): ReleaseActions {
  const slots = new Semaphore(limit);
  return {
    upgradeInstall: (req) => slots.run(() => actions.upgradeInstall(req)),
    uninstall: (req) => slots.run(() => actions.uninstall(req)),
    rollback: (req) => slots.run(() => actions.rollback(req)),
    status: (release, namespace, timeoutMs, impersonate) => slots.run(() => actions.status(release, namespace, timeoutMs, impersonate)),
  };
}
