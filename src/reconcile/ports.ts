/** The edges the reconciler talks through; small so tests can substitute them without a mocking library. */
import type { CrStatus, CustomResource, StoredRevision } from './types.js';

/** Helm's release records, read from their Secrets' metadata (no helm process). */
export interface ReleaseStore {
  revisions(namespace: string, release: string): Promise<StoredRevision[]>;
  /** Delete one stored revision (used to clear a crashed operation's pending-* lock). */
  deleteRevision(namespace: string, revision: StoredRevision): Promise<void>;
}

export interface CrWriter {
  /** Write `status` to the status subresource. */
  patchStatus(cr: CustomResource, status: CrStatus): Promise<void>;
  /** Replace metadata.finalizers (guarded by resourceVersion); returns the updated object. */
  setFinalizers(cr: CustomResource, finalizers: readonly string[]): Promise<CustomResource>;
}

export type EventType = 'Normal' | 'Warning';

export interface EventSink {
  /** Fire-and-forget: an event that cannot be written must never fail a reconcile. */
  emit(cr: CustomResource, type: EventType, reason: string, message: string): void;
}

export interface Clock {
  now(): number;
}
