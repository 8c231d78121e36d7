/**
 * What the per-CR series say about one custom resource, read from its status as the CR cache holds
 * it (pure). Reading the status — not hooking each engine's reconciler — makes the series the same
 * for chart and Ansible kinds and right after a restart: the cache's first LIST fills them.
 */

/** Condition types exported per CR: the chart engine's and the Ansible engine's. Bounded on purpose. */
export const EXPORTED_CONDITIONS = [
  'Ready',
  'Deployed',
  'ReleaseFailed',
  'Irreconcilable',
  'Paused',
  'ChartUnavailable',
  // driftDetection's warn mode (drift left in place)
  'Drifted',
  // a changed chart held back from this CR after it failed on the kind's first one
  'ChartChangeHeld',
  // Ansible kinds (ansible-operator's types)
  'Running',
  'Successful',
  'Failure',
] as const;

const exported: ReadonlySet<string> = new Set(EXPORTED_CONDITIONS);

export type ConditionStatus = 'True' | 'False' | 'Unknown';

export interface ReleaseInfo {
  readonly chart: string;
  readonly chartVersion: string;
  readonly appVersion: string;
  /** Helm's revision; undefined when the status does not say. */
  readonly revision: number | undefined;
}

export interface ResourceState {
  /** type → status, only for conditions the status has (absent ones have no series, as in Flux). */
  readonly conditions: ReadonlyMap<string, ConditionStatus>;
  readonly release: ReleaseInfo | undefined;
  /** Unix seconds of the last successful install, upgrade or Ansible run; undefined if none is known. */
  readonly lastDeployedAt: number | undefined;
  /** Unix seconds at which Ready last changed status. */
  readonly readyChangedAt: number | undefined;
}

function record(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

function seconds(v: unknown): number | undefined {
  if (typeof v !== 'string') return undefined;
  const ms = Date.parse(v);
  return Number.isNaN(ms) ? undefined : ms / 1000;
}

const text = (v: unknown): string => (typeof v === 'string' ? v : '');

/** The state `status` (a CR's `.status`, any shape) describes. */
export function resourceStateOf(status: unknown): ResourceState {
  const s = record(status) ?? {};
  const conditions = new Map<string, ConditionStatus>();
  const transitions = new Map<string, number | undefined>();
  for (const c of Array.isArray(s['conditions']) ? (s['conditions'] as unknown[]) : []) {
    const cond = record(c);
    const type = cond?.['type'];
    const st = cond?.['status'];
    if (typeof type !== 'string' || !exported.has(type)) continue;
    conditions.set(type, st === 'True' || st === 'False' ? st : 'Unknown');
    transitions.set(type, seconds(cond?.['lastTransitionTime']));
  }
  const deployed = record(s['deployedRelease']);
  const release: ReleaseInfo | undefined =
    deployed === undefined
      ? undefined
      : {
          chart: text(deployed['chart']),
          chartVersion: text(deployed['version']),
          appVersion: text(deployed['appVersion']),
          revision: typeof deployed['revision'] === 'number' ? deployed['revision'] : undefined,
        };
  // deployedAt is written at every successful install or upgrade; a status written before it
  // existed only has Deployed's last transition (the first install), the best lower bound known.
  const deployedAt =
    seconds(deployed?.['deployedAt']) ??
    (conditions.get('Deployed') === 'True' ? transitions.get('Deployed') : undefined) ??
    // An Ansible kind's last successful run (status.chartpilot.ranAt).
    seconds(record(s['chartpilot'])?.['ranAt']);
  return { conditions, release, lastDeployedAt: deployedAt, readyChangedAt: transitions.get('Ready') };
}

/**
 * Conditions that, True, mean someone should look: a failed release or run, something chartpilot
 * cannot act on, a held or paused change, drift left in place. With Ready=False they are what the
 * alerts (generate monitoring) fire on.
 */
const ATTENTION_CONDITIONS: readonly string[] = ['ReleaseFailed', 'Irreconcilable', 'ChartUnavailable', 'Paused', 'Drifted', 'ChartChangeHeld', 'Failure'];

/**
 * Whether a CR's state is one an alert or a person needs per-CR series for (`--resource-metrics
 * attention` exports those CRs' series only): not Ready, or an attention condition True. A CR
 * being reconciled is not, by itself, one: an upgrade wave must not create and drop every CR's
 * series.
 */
export function needsAttention(state: ResourceState): boolean {
  if (state.conditions.get('Ready') === 'False') return true;
  return ATTENTION_CONDITIONS.some((type) => state.conditions.get(type) === 'True');
}
