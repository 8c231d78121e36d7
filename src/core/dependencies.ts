/**
 * Dependencies between CRs (Flux HelmRelease's `dependsOn`, for any kind this operator serves),
 * opted into per watches entry: a CR lists the CRs it depends on in the entry's spec field, and is
 * not installed or upgraded until each is Ready. The types both engines share and the port they
 * check through; parsing is config/depends-on.ts, the graph and its watches
 * controller/dependency-graph.ts.
 */

/** One CR depended on, as a CR author writes it. */
export interface DependencyRef {
  /** `group/version` (or only the group); needed only when two served kinds share the name. */
  readonly apiVersion?: string | undefined;
  readonly kind: string;
  readonly name: string;
  /** Another namespace (refused unless the entry allows it); undefined = the CR's own. */
  readonly namespace?: string | undefined;
}

/** A watches entry's `dependsOn`. */
export interface DependsOnSettings {
  /** The spec field in which CRs list what they depend on; it is taken out of the values. */
  readonly specField: string;
  readonly allowCrossNamespace: boolean;
}

export const DependencyReasons = {
  notReady: 'DependencyNotReady',
  cycle: 'DependencyCycle',
  invalid: 'DependencyInvalid',
} as const;

export type SplitDependencies =
  | { readonly ok: true; readonly spec: unknown; readonly dependencies: readonly DependencyRef[] }
  | { readonly ok: false; readonly reason: string; readonly problem: string };

/** Whether a CR may go ahead: every dependency Ready; or the first that is not; or a problem no wait cures. */
export type DependencyVerdict =
  | { readonly kind: 'ready' }
  | { readonly kind: 'waiting'; readonly message: string }
  | { readonly kind: 'problem'; readonly reason: string; readonly message: string };

export interface DependencyCheck {
  /** The CR's queue key (`namespace/name`). */
  readonly key: string;
  readonly namespace: string;
  readonly dependencies: readonly DependencyRef[];
  readonly settings: DependsOnSettings;
}

/** The edge to the other CRs (controller/dependency-graph.ts). */
export interface Dependencies {
  /** The spec without `settings.specField`, and the dependencies listed there; or what is wrong with them. */
  split(spec: unknown, settings: DependsOnSettings): SplitDependencies;
  /** Judges the CR's dependencies now and watches them for it: one becoming Ready (or going) re-checks it. */
  check(input: DependencyCheck): Promise<DependencyVerdict>;
  /** The CR is gone from this replica. */
  forget(key: string): void;
}
