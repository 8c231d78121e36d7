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

/** One object of a release, as listed in the CR's status. */
export interface InventoryItem {
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespace?: string | undefined;
  readonly name: string;
}

export interface ReadinessVerdict {
  readonly ready: boolean;
  readonly reason: string;
  readonly message: string;
  /** Waiting will not fix it (e.g. ProgressDeadlineExceeded, a failed Job). */
  readonly failed: boolean;
}

/** An object set back to what the chart says. */
export interface Repair {
  /** e.g. `Deployment shop`. */
  readonly object: string;
  readonly action: 'created' | 'updated';
  /** Paths of the fields that had drifted ([] when the object was recreated). */
  readonly fields: readonly string[];
}

export interface KeepInput {
  readonly namespace: string;
  readonly release: string;
  readonly revision: number;
  /** The manifest when it is at hand (fresh from helm); otherwise read from Helm's record. */
  readonly manifest?: string | undefined;
  /** watchDependentResources: without it there are no caches, so no repairs and no readiness. */
  readonly watch: boolean;
  /** Repair drift now (not right after an upgrade, when caches still show the old objects). */
  readonly repair: boolean;
}

export interface KeepResult {
  readonly inventory: readonly InventoryItem[];
  readonly repaired: readonly Repair[];
  /** undefined when readiness is not tracked (dependents not watched, caches not synced). */
  readonly readiness: ReadinessVerdict | undefined;
}

/** Keeps a deployed release true between Helm operations (drift, readiness, inventory). */
export interface ReleaseKeeperPort {
  keep(input: KeepInput): Promise<KeepResult>;
  /** `apiVersion/Kind` of every cluster-scoped kind, for the post-renderer's ownership rules. */
  clusterScopedKinds(): Promise<readonly string[]>;
  /** The release is gone: drop what is remembered about it. */
  forget(namespace: string, release: string): void;
  /** Which of these objects still exist (for uninstall-wait). */
  remaining(items: readonly InventoryItem[]): Promise<InventoryItem[]>;
}
