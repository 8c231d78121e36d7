/** One validated entry of watches.yaml: a custom resource kind mapped to a chart. */
export interface WatchEntry {
  readonly group: string; // may be '' (core-style group is not allowed for CRs, but operator-sdk accepts it)
  readonly version: string;
  readonly kind: string;
  /** Absolute path of the chart directory or packaged .tgz. */
  readonly chartPath: string;
  /** `--set`-style paths → raw strings, after `$VAR`/`${VAR}` expansion. */
  readonly overrideValues: Readonly<Record<string, string>>;
  readonly watchDependentResources: boolean;
  /** Undefined → the operator-wide `--reconcile-period`. */
  readonly reconcilePeriodMs: number | undefined;
  /** Undefined → the operator-wide `--max-concurrent-reconciles`. */
  readonly maxConcurrentReconciles: number | undefined;
  /** Label selector in the API's query form (`a=b,c in (d)`), or undefined for all. */
  readonly labelSelector: string | undefined;
  /**
   * operator-sdk `dryRunOption` (which dry run its helm-operator diffs releases with): validated so
   * operator-sdk files load, but it has no effect here — chartpilot never dry-runs; it compares
   * fingerprints.
   */
  readonly dryRunOption: 'none' | 'client' | 'server' | undefined;
  /**
   * chartpilot addition: objects outside the CR's namespace or cluster-scoped are refused unless
   * the entry allows them (operator-sdk allows everything; we confine by default).
   */
  readonly allowClusterScoped: boolean;
  readonly allowCrossNamespace: boolean;
  /**
   * chartpilot addition: the ServiceAccount (in each CR's namespace) that every helm action and
   * repair for this kind runs as; undefined → `--default-service-account`, else the operator's
   * own identity.
   */
  readonly serviceAccount: string | undefined;
}

/** Group/version/kind of a watched custom resource; `key` is stable for maps and logs. */
export interface GroupVersionKind {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
}

export function gvkKey(gvk: GroupVersionKind): string {
  return `${gvk.kind}.${gvk.version}.${gvk.group}`;
}

export function apiVersionOf(gvk: GroupVersionKind): string {
  return gvk.group === '' ? gvk.version : `${gvk.group}/${gvk.version}`;
}
