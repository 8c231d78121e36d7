/**
 * The edges both engines act through, with exactly the methods they use; small, so unit tests
 * substitute them with plain objects. Adapters: kube/cr-writer.ts (CrWriter), observe/events.ts
 * (EventSink), controller/service-accounts.ts (ServiceAccountLookup).
 */
import type { CustomResource } from './model.js';

/** Writes to the custom resource itself. */
export interface CrWriter {
  /** The CR as the API server has it now (spec and status whole). */
  read(cr: CustomResource): Promise<CustomResource>;
  /**
   * Merge-patches the status subresource with `patch` (RFC 7386: null takes a key off); the
   * resourceVersion written (undefined: unknown, or the CR is gone — nothing to report on).
   */
  patchStatus(cr: CustomResource, patch: Readonly<Record<string, unknown>>): Promise<string | undefined>;
  /** Merge-patches these annotations (kinds without a status subresource keep their record here). */
  patchAnnotations(cr: CustomResource, annotations: Readonly<Record<string, string>>): Promise<void>;
  /** Replaces metadata.finalizers (guarded by resourceVersion); returns the updated object. */
  setFinalizers(cr: CustomResource, finalizers: readonly string[]): Promise<CustomResource>;
}

export type EventType = 'Normal' | 'Warning';

export interface EventSink {
  /** Fire-and-forget: an event that cannot be written must never fail a reconcile. */
  emit(cr: CustomResource, type: EventType, reason: string, message: string): void;
}

/** Which ServiceAccounts exist (from a cache: asked once per reconcile of a kind that impersonates). */
export interface ServiceAccountLookup {
  /** Rejects when it cannot tell (e.g. the cache never synced). */
  exists(namespace: string, name: string): Promise<boolean>;
}

/** The API server's wall time (ms since the epoch), as this host reads it (kube/server-clock.ts). */
export interface ServerClock {
  now(): number;
}

/** The API server's wall time, and its write order (a Secrets resourceVersion) when this process started. */
export interface ServerTimes {
  readonly clock: ServerClock;
  readonly startedAtRevision: string | undefined;
}
