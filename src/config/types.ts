/** One validated entry of watches.yaml: a custom resource kind mapped to a chart. */
export interface WatchEntry {
  readonly group: string; // may be '' (core-style group is not allowed for CRs, but operator-sdk accepts it)
  readonly version: string;
  readonly kind: string;
  /**
   * Absolute path of the chart directory or packaged .tgz. For a chart from a registry (`remote`)
   * it is '' in watches.yaml's entry and the pulled archive in the cache once resolved.
   */
  readonly chartPath: string;
  /** A chart from an OCI registry or a Helm repository; undefined for a chart on disk. */
  readonly remote?: RemoteChart | undefined;
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

/**
 * A chart from a registry: `chart: oci://host/path/name`, or `repository: https://…` with
 * `chart: <name>`; resolved to a version and a content digest at run time (src/registry/).
 */
export interface RemoteChart {
  readonly type: 'oci' | 'repository';
  /** How logs and conditions name it: `oci://host/path/name`, or `https://charts.example.com/ webapp`. */
  readonly reference: string;
  /** oci: the registry's `host[:port]`; repository: the repository URL, without a trailing slash. */
  readonly location: string;
  /** oci: the repository inside the registry (`charts/webapp`); repository: the chart's name in its index. */
  readonly name: string;
  /** `chartVersion`: an exact version or a semver range; undefined = the newest stable version. */
  readonly version: string | undefined;
  /** `chartDigest` (`sha256:…`): oci: the manifest digest (what `helm push` prints); repository: the archive's digest in index.yaml. */
  readonly digest: string | undefined;
  /** `chartRefreshInterval`; undefined = `--chart-refresh-interval`; 0 = resolve once. */
  readonly refreshIntervalMs: number | undefined;
  /** `chartPullSecret`: a Secret in the operator's namespace with credentials and/or `ca.crt`. */
  readonly pullSecret: string | undefined;
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
