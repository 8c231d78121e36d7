/**
 * Bounds the helm processes one controller runs at once. Its work queue runs more reconciles than
 * that (the work around a call overlaps with other calls; follow-up workers refresh status), so a
 * reconcile may wait here for a slot; once the controller stops, the waiting ones and any later
 * call are turned away (HelmCallsStopped) rather than starting helm during shutdown.
 *
 * The slots are shared fairly between namespaces (tenants): one namespace holds at most all but
 * one of them, and waiting calls get free slots round-robin across namespaces, so releases whose
 * hooks hang until the helm timeout cannot keep another namespace's release from installing.
 */
import { FairSemaphore } from '../lib/fair-share.js';
import { HelmCallsStopped, type ReleaseActions } from '../engines/helm/ports.js';

export interface LimitedReleaseActions extends ReleaseActions {
  /** No helm call starts from now on; the running ones finish. */
  stop(): void;
}

export function limitConcurrentCalls(actions: ReleaseActions, limit: number): LimitedReleaseActions {
  const slots = new FairSemaphore(limit);
  return {
    upgradeInstall: (req) => slots.run(req.namespace, () => actions.upgradeInstall(req)),
    uninstall: (req) => slots.run(req.namespace, () => actions.uninstall(req)),
    rollback: (req) => slots.run(req.namespace, () => actions.rollback(req)),
    status: (req) => slots.run(req.namespace, () => actions.status(req)),
    stop: () => {
      slots.close(new HelmCallsStopped('the controller is stopping: no new helm call starts'));
    },
  };
}
