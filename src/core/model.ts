/**
 * The reconcile core's model: the custom resource as the reconciler reads and writes it, a Helm
 * release and its stored revisions, and what is known about the release's objects. The edges
 * (helm/, kube/, dependents/) produce and consume these shapes; the core imports nothing else.
 */
import type { StatusVerdict } from './outputs.js';

export interface Condition {
  readonly type: string;
  readonly status: 'True' | 'False' | 'Unknown';
  readonly reason: string;
  readonly message: string;
  readonly lastTransitionTime: string;
  readonly observedGeneration?: number;
}

/** Which object, without its content. `namespace` is undefined for cluster-scoped objects. */
export interface ObjectRef {
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespace?: string | undefined;
  readonly name: string;
}

/** `status.deployedRelease`: what the CR shows of its release. */
export interface DeployedRelease {
  readonly name: string;
  readonly namespace?: string;
  readonly revision?: number;
  readonly chart?: string;
  readonly version?: string;
  readonly appVersion?: string;
  /** When the last successful install or upgrade ended (RFC 3339): the per-CR metrics' last deploy. */
  readonly deployedAt?: string;
  /** Kept only where a user opts in (operator-sdk wrote the whole manifest here). */
  readonly manifest?: string;
  /** Which objects the release consists of (not their content, which would bloat the status). */
  readonly inventory?: readonly ObjectRef[];
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

/**
 * What the CR cache keeps of a spec instead of the spec: enough to tell whether it changed and
 * whether it is too large, without holding a tenant's megabytes in memory.
 */
export interface SpecSummary {
  /** sha256 of the spec's canonical JSON; '' when it could not be serialized (read the spec to learn why). */
  readonly digest: string;
  /** Bytes of that JSON (0 when the digest is ''). */
  readonly bytes: number;
}

export interface CustomResource {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata: CrMetadata;
  /** Absent in a CR from the cache, which keeps `specSummary` instead; present once read in full. */
  readonly spec?: unknown;
  readonly specSummary?: SpecSummary;
  readonly status?: CrStatus;
}

export type ReleaseStatus =
  | 'unknown'
  | 'deployed'
  | 'uninstalled'
  | 'superseded'
  | 'failed'
  | 'uninstalling'
  | 'pending-install'
  | 'pending-upgrade'
  | 'pending-rollback';

/** One revision of a Helm release, as helm reports it or as its storage record holds it. */
export interface Release {
  readonly name: string;
  readonly namespace: string;
  readonly revision: number;
  readonly status: ReleaseStatus;
  readonly chartName: string;
  readonly chartVersion: string;
  readonly appVersion: string;
  /** Rendered NOTES.txt, '' when the chart has none. */
  readonly notes: string;
  /** Rendered manifest (multi-document YAML) of this revision. */
  readonly manifest: string;
  readonly description: string;
  /** `ssa` or `csa` (Helm 4 records how it applied the objects); undefined for Helm 3 releases and helm's CLI output. */
  readonly applyMethod?: string | undefined;
}

/** One stored revision as seen from its storage record's metadata (no helm process needed). */
export interface StoredRevision {
  readonly revision: number;
  /** A ReleaseStatus, or whatever an unknown Helm version wrote. */
  readonly status: string;
  /** Our fingerprint label, when chartpilot wrote this revision. */
  readonly fingerprint: string | undefined;
  /** Our owner label: which kind (Kind.group) this release belongs to. */
  readonly ownerKind: string | undefined;
  /** Our helm-call label: which install or upgrade wrote this record (helm copies it onto later ones). */
  readonly call?: string | undefined;
  /** When the record was created (ISO time); tells a crashed operation from a live one. */
  readonly createdAt: string | undefined;
  /** Name of the record (Helm's Secret), to delete a stale lock. */
  readonly secretName: string;
  /** The record's uid and resourceVersion: which exact content a verdict on its origin was about. */
  readonly uid?: string | undefined;
  readonly resourceVersion?: string | undefined;
}

/** kstatus-style readiness of a release's objects. */
export interface Readiness {
  readonly ready: boolean;
  /** `AllResourcesReady`, or the reason of the first object that is not ready (failures first). */
  readonly reason: string;
  readonly message: string;
  /** An object failed in a way waiting will not fix (e.g. ProgressDeadlineExceeded, a failed Job). */
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

/** What keeping a deployed release found and did. */
export interface KeepResult {
  readonly inventory: readonly ObjectRef[];
  readonly repaired: readonly Repair[];
  /** undefined when readiness is not tracked (dependents not watched, caches not synced). */
  readonly readiness: Readiness | undefined;
  /**
   * Drift left in place on this pass because the entry's mode is warn; undefined when drift was
   * not judged (right after a deploy, caches not synced).
   */
  readonly unrepaired?: readonly UnrepairedDrift[] | undefined;
  /**
   * Fields given up to another field manager after repeated set-backs that still differ from the
   * chart; undefined when drift was not judged.
   */
  readonly contests?: readonly Contest[] | undefined;
  /** The entry's outputs and readyWhen as evaluated on this pass; undefined when it has none or they were not evaluated. */
  readonly status?: StatusVerdict | undefined;
}

/**
 * The watches entry's `driftDetection` (Flux helm-controller's model): what happens when a
 * release's objects differ from the chart, and which fields of which objects are others' to set.
 */
export interface DriftDetection {
  /** repair: set it back (the default); warn: an Event and the Drifted condition, no write; off: readiness only. */
  readonly mode: DriftMode;
  readonly ignore: readonly DriftIgnoreRule[];
}

export type DriftMode = 'repair' | 'warn' | 'off';

/** Today's behaviour, and what an entry without `driftDetection` gets. */
export const DEFAULT_DRIFT_DETECTION: DriftDetection = { mode: 'repair', ignore: [] };

export interface DriftIgnoreRule {
  /** RFC 6901 JSON pointers (`/spec/replicas`); a pointer covers everything under it. */
  readonly paths: readonly string[];
  /** Which objects the rule is about; undefined = every object of the release. */
  readonly target?: DriftTarget | undefined;
}

export interface DriftTarget {
  readonly kind?: string | undefined;
  readonly name?: string | undefined;
  readonly namespace?: string | undefined;
  /** A label selector in the API's query form (`app=web,tier in (a,b)`), as Flux writes it. */
  readonly labelSelector?: string | undefined;
}

/** An object whose drift was left in place (warn mode). */
export interface UnrepairedDrift {
  /** e.g. `Deployment web`. */
  readonly object: string;
  /** Paths of the drifted fields ([] when the object is missing). */
  readonly fields: readonly string[];
}

/** A field chartpilot set back again and again, and another manager changed again each time. */
export interface Contest {
  /** e.g. `Deployment web`. */
  readonly object: string;
  readonly kind: string;
  /** `spec.replicas` (how drift messages name fields) and `/spec/replicas` (for the rule). */
  readonly field: string;
  readonly pointer: string;
  /** The other field managers owning the field when it was given up, from metadata.managedFields. */
  readonly managers: readonly string[];
  /** How many times it was set back, and within how long (ms). */
  readonly repairs: number;
  readonly withinMs: number;
  /** Given up on this pass: announce it (each contest is announced once). */
  readonly announce: boolean;
}
