/** Shapes the reconciler reads and writes on a custom resource. */
import type { InventoryItem } from './ports.js';

export interface Condition {
  readonly type: string;
  readonly status: 'True' | 'False' | 'Unknown';
  readonly reason: string;
  readonly message: string;
  readonly lastTransitionTime: string;
  readonly observedGeneration?: number;
}

export interface DeployedRelease {
  readonly name: string;
  readonly namespace?: string;
  readonly revision?: number;
  readonly chart?: string;
  readonly version?: string;
  readonly appVersion?: string;
  /** Kept only where a user opts in (operator-sdk wrote the whole manifest here). */
  readonly manifest?: string;
  /** Which objects the release consists of (not their content, which would bloat the status). */
  readonly inventory?: readonly InventoryItem[];
}

export interface CrStatus {
  readonly observedGeneration?: number;
  readonly conditions?: readonly Condition[];
  readonly deployedRelease?: DeployedRelease;
  readonly [extra: string]: unknown;
}

export interface CrMetadata {
  readonly name: string;
  readonly namespace?: string;
  readonly uid?: string;
  readonly generation?: number;
  readonly resourceVersion?: string;
  readonly deletionTimestamp?: string;
  readonly finalizers?: readonly string[];
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
}

export interface CustomResource {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata: CrMetadata;
  readonly spec?: unknown;
  readonly status?: CrStatus;
}

/** One stored Helm revision as seen from its Secret's metadata (no helm process needed). */
export interface StoredRevision {
  readonly revision: number;
  readonly status: string;
  /** Our fingerprint label, when chartpilot wrote this revision. */
  readonly fingerprint: string | undefined;
  /** Our owner label: which kind (Kind.group) this release belongs to. */
  readonly ownerKind: string | undefined;
  /** When the Secret was created (ISO time); used to tell a crashed operation from a live one. */
  readonly createdAt: string | undefined;
  /** Name of the Secret holding it, to delete a stale lock. */
  readonly secretName: string;
}
