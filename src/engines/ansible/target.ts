/** What an Ansible watches entry resolves to for its reconciler; replaced whole on hot reload. */
import type { AnsibleRunnable, AnsibleSource, GroupVersionKind } from '../../config/types.js';
import type { KindInputs } from './fingerprint.js';
import type { ValuesFromSettings } from '../../core/values-from.js';
import type { DependsOnSettings } from '../../core/dependencies.js';

export interface AnsibleTarget {
  /** `Kind.group` of the watched kind. */
  readonly ownerKind: string;
  readonly gvk: GroupVersionKind;
  /** The kind's apiVersion (`group/version`, or `v1` for core kinds). */
  readonly apiVersion: string;
  readonly source: AnsibleSource;
  /** What deletion runs: the finalizer's role or playbook, else the main one (with the finalizer's vars). */
  readonly finalizerRunnable: AnsibleRunnable | undefined;
  /** Everything of the kind that the run fingerprint covers (digests, vars, settings, flags). */
  readonly inputs: KindInputs;
  /** The entry's `reconcilePeriod`: runs again that long after a run; undefined = only on changes. */
  readonly runPeriodMs: number | undefined;
  /** `--reconcile-period`: how often readiness and drift are looked at again (no run unless they say so); 0 = never. */
  readonly recheckPeriodMs: number;
  readonly watchDependentResources: boolean;
  readonly allowClusterScoped: boolean;
  readonly allowCrossNamespace: boolean;
  /** The ServiceAccount (in each CR's namespace) every API call of a run acts as; undefined = the operator. */
  readonly serviceAccount: string | undefined;
  /**
   * Where the run record is kept: the status subresource, or (for a kind without one, such as a
   * core Secret) the annotation RUN_RECORD_ANNOTATION.
   */
  readonly bookkeeping: 'status' | 'annotation';
  /** The entry's values from Secrets and ConfigMaps: they become vars as the spec's keys do. */
  readonly valuesFrom?: ValuesFromSettings | undefined;
  /** The entry's dependsOn: CRs list what they wait for in its spec field. */
  readonly dependsOn?: DependsOnSettings | undefined;
}

/** For kinds without a status subresource: the last run's record, as JSON. */
export const RUN_RECORD_ANNOTATION = 'ansible.chartpilot.io/run';

/** The runnable and the extra vars of a deletion run. */
export function finalizerRunnableOf(source: AnsibleSource): AnsibleRunnable | undefined {
  const f = source.finalizer;
  if (f === undefined) return undefined;
  if (f.role !== undefined) return { role: f.role };
  if (f.playbook !== undefined) return { playbook: f.playbook };
  return source.role !== undefined ? { role: source.role } : { playbook: source.playbook };
}

/** The finalizer an Ansible kind holds its CRs with until the finalizer's run succeeded: the entry's, if it has one. */
export function finalizersOf(source: AnsibleSource): readonly string[] {
  return source.finalizer === undefined ? [] : [source.finalizer.name];
}
