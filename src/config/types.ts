import type { DriftDetection } from '../core/model.js';
import type { ValuesFromSettings } from '../core/values-from.js';
import type { DependsOnSettings } from '../core/dependencies.js';
import type { StatusExpressions } from '../core/outputs.js';

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
  /**
   * chartpilot addition (Flux helm-controller's `driftDetection`): what happens when the release's
   * objects differ from the chart, and which fields of which objects are others' to set;
   * undefined = repair every drifted field (the behaviour before the key existed).
   */
  readonly driftDetection?: DriftDetection | undefined;
  /**
   * chartpilot addition (Flux HelmRelease's `valuesFrom`): values read from Secrets and ConfigMaps,
   * the CR's own (listed in `specField`, which is then not a value) and the platform's; undefined =
   * the whole spec is the values, as in operator-sdk.
   */
  readonly valuesFrom?: ValuesFromSettings | undefined;
  /**
   * chartpilot addition (Flux HelmRelease's `dependsOn`, across kinds): CRs list in `specField` the
   * CRs (of kinds this operator serves) they wait for; undefined = none.
   */
  readonly dependsOn?: DependsOnSettings | undefined;
  /**
   * chartpilot addition (kro's status from resources): `outputs` written to `status.outputs` and a
   * `readyWhen` narrowing Ready, CEL over the release's objects and the CR; undefined = none.
   */
  readonly status?: StatusExpressions | undefined;
  /**
   * Set when the entry maps its kind to an Ansible role or playbook instead of a chart (operator-sdk's
   * ansible-operator keys); `chartPath` is then ''. Everything around the engine (informers, queue,
   * status, confinement, impersonation, leader election) is shared with chart entries.
   */
  readonly ansible?: AnsibleSource | undefined;
}

/** What an Ansible kind runs: exactly one of `role` and `playbook`, both absolute once loaded. */
export interface AnsibleRunnable {
  /** The role's directory (found as ansible-operator looks for it, see config/ansible-paths.ts). */
  readonly role?: string | undefined;
  /** The playbook file. */
  readonly playbook?: string | undefined;
}

/** operator-sdk ansible-operator's watches keys, with its defaults applied. */
export interface AnsibleSource extends AnsibleRunnable {
  /** `vars`: extra vars of every run, applied after the CR's own (they win). */
  readonly vars: Readonly<Record<string, unknown>>;
  /** `finalizer`: what runs when a CR is deleted; undefined = deletion runs nothing. */
  readonly finalizer: AnsibleFinalizer | undefined;
  /** `manageStatus` (true): the operator writes Running/Successful/Failure conditions; false: the role writes status. */
  readonly manageStatus: boolean;
  /** `watchClusterScopedResources` (false): cluster-scoped objects the run creates are watched too. */
  readonly watchClusterScopedResources: boolean;
  /** `snakeCaseParameters` (true): spec keys become snake_case extra vars. */
  readonly snakeCaseParameters: boolean;
  /** `watchAnnotationsChanges` (false): a change of the CR's annotations alone runs the role. */
  readonly watchAnnotationsChanges: boolean;
  /** `markUnsafe` (false): accepted for ansible-operator compatibility; chartpilot marks spec values unsafe (never templated) always (engines/ansible/extra-vars.ts). */
  readonly markUnsafe: boolean;
  /** `blacklist`: kinds of dependents never watched. */
  readonly blacklist: readonly GroupVersionKind[];
  /** `maxRunnerArtifacts` (20): how many runs' artifact directories are kept per CR. */
  readonly maxRunnerArtifacts: number;
}

/** `finalizer: {name, role|playbook|vars}`: with only vars, the main role/playbook runs with them. */
export interface AnsibleFinalizer extends AnsibleRunnable {
  readonly name: string;
  readonly vars: Readonly<Record<string, unknown>>;
}

/** Whether `entry` maps its kind to an Ansible role or playbook (else to a chart). */
export function isAnsibleEntry(entry: WatchEntry): entry is WatchEntry & { readonly ansible: AnsibleSource } {
  return entry.ansible !== undefined;
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
