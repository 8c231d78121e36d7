/**
 * The seam between the controller shell (informers, work queue, leader election, shards) and an
 * engine: the Helm one (engines/helm/, helm/) or the Ansible one (engines/ansible/). The shell knows nothing
 * else of either: it hands an engine a CR from its cache and requeues as the outcome says.
 */
import type { Logger } from 'pino';
import type { CustomResource } from './model.js';
import type { ReconcileOutcome } from './outcome.js';

export interface Engine {
  /**
   * Brings the CR's release or run where its spec asks and writes its status. Throws a
   * ReconcileFailure (core/outcome.ts) when it failed after recording why on the CR; anything
   * else thrown is unexpected and is reported by the shell. `signal`: the operator is stopping.
   */
  reconcile(cached: CustomResource, log: Logger, signal?: AbortSignal): Promise<ReconcileOutcome>;
  /** The CR with this uid is gone: drop whatever is kept for it. */
  forget(uid: string): void;
}
