/**
 * The CR's next status as a pure function of its current status and what this reconcile did.
 * Conditions follow operator-sdk's types and reasons so dashboards built for it keep working.
 */
import { DependencyReasons } from '../../core/dependencies.js';
import { canonicalJson } from '../../lib/json.js';
import { removeCondition, setCondition } from '../../core/conditions.js';
import { driftCondition } from './drift-report.js';
import { countFailure, DEFAULT_STALL_AFTER_FAILURES, FAILURES_KEY, KstatusConditionTypes, kstatusVerdict, readFailures, running, withKstatus, type FailureCount } from '../../core/kstatus.js';
import { ConditionTypes, Reasons } from './names.js';
import { CHARTPILOT_STATUS_KEY, summaryOf, withSummary } from '../../core/summary.js';
import { chartVerdict } from './chart-summary.js';
import type { Condition, CrStatus, DeployedRelease, KeepResult, Release } from '../../core/model.js';
import { OUTPUTS_CONDITION, outputsCondition, READY_WHEN, type OutputValue } from '../../core/outputs.js';

export type Outcome =
  | { readonly kind: 'deployed'; readonly action: 'install' | 'upgrade'; readonly release: Release; readonly kept: KeepResult | undefined }
  /** Nothing changed; `release` is set when its details were fetched to repair the status. */
  | { readonly kind: 'current'; readonly release: Release | undefined; readonly kept: KeepResult | undefined }
  /** `inputs`: what was tried (the desired fingerprint): failures in a row with the same inputs are counted (kstatus.ts). */
  | { readonly kind: 'failed'; readonly reason: string; readonly message: string; readonly inputs: string }
  /** A long action starts (install, upgrade, rollback, uninstall): only Reconciling says so, the rest stays. */
  | { readonly kind: 'acting'; readonly reason: string; readonly message: string }
  /** `reason` defaults to ReconcileError (operator-sdk's). */
  | { readonly kind: 'irreconcilable'; readonly message: string; readonly reason?: string }
  /** A dependency (dependsOn) is not Ready: nothing done; Ready False says which. */
  | { readonly kind: 'waiting'; readonly message: string }
  /** The chart cannot be pulled; `reason` says why (RegistryUnreachable, NoMatchingVersion, …). */
  | { readonly kind: 'chart-unavailable'; readonly reason: string; readonly message: string }
  | { readonly kind: 'paused' }
  | { readonly kind: 'uninstalled' }
  /** Uninstalled, but objects of the release are still being deleted (uninstall-wait). */
  | { readonly kind: 'uninstalling'; readonly message: string };

function deployedRelease(r: Release): DeployedRelease {
  return {
    name: r.name,
    namespace: r.namespace,
    revision: r.revision,
    chart: r.chartName,
    version: r.chartVersion,
    appVersion: r.appVersion,
  };
}

/**
 * Whether `next` differs from `current` only in how a rollout still in progress is told: Ready
 * was False and stays False (not failed) for the same reason, with another message ("0/2
 * replicas updated", then "… available"), and nothing else changed. Such a change may wait a
 * little (status pacing); every other change, a new reason included, is written at once.
 */
export function onlyRolloutProgress(current: CrStatus | undefined, next: CrStatus, outcome: Outcome): boolean {
  if (outcome.kind !== 'current' && outcome.kind !== 'deployed') return false;
  const readiness = outcome.kept?.readiness;
  if (readiness === undefined || readiness.ready || readiness.failed) return false;
  const before = current?.conditions?.find((c) => c.type === ConditionTypes.ready);
  if (current === undefined || before?.status !== 'False' || before.reason !== readiness.reason) return false;
  // The summary and Reconciling (kstatus.ts) are derived from the conditions: with Ready's
  // message left out, so are theirs.
  const retold = new Set<string>([ConditionTypes.ready, KstatusConditionTypes.reconciling]);
  const withoutReadyMessage = (s: CrStatus): unknown => ({
    ...withSummary(s, { state: 'Unknown', reason: '', message: '' }),
    conditions: (s.conditions ?? []).map((c) => (retold.has(c.type) ? { ...c, message: '' } : c)),
  });
  return canonicalJson(withoutReadyMessage(current)) === canonicalJson(withoutReadyMessage(next));
}

export interface StatusOptions {
  /**
   * The kind's chart change is held back from this CR (target.chartChangeHeld); the
   * ChartChangeHeld condition says so on every write until it is not.
   */
  readonly held?: { readonly message: string } | undefined;
  /** Failed attempts in a row that make a failure Stalled (--stall-after-failures; 0: never). */
  readonly stallAfter?: number | undefined;
}

export function nextStatus(current: CrStatus | undefined, outcome: Outcome, generation: number | undefined, now: string, options: StatusOptions = {}): CrStatus {
  const { held } = options;
  const gen = generation;
  let conditions: Condition[] = [...(current?.conditions ?? [])];
  const set = (type: string, status: Condition['status'], reason: string, message: string): void => {
    conditions = setCondition(conditions, { type, status, reason, message }, gen, now);
  };
  const own = ownKeys(current);
  if (outcome.kind === 'acting') {
    conditions = withKstatus(conditions, running(outcome.reason, outcome.message), gen, now);
    // What the last reconcile observed stays until this one tells how the action went.
    return { ...current, conditions, [CHARTPILOT_STATUS_KEY]: { ...own, summary: summaryOf(chartVerdict(conditions)) } };
  }
  let release = current?.deployedRelease;
  // undefined: as they were; null: gone with the release.
  let outputs: Readonly<Record<string, OutputValue>> | null | undefined;
  let failures: FailureCount | undefined = readFailures(own);

  set(ConditionTypes.initialized, 'True', 'Initialized', 'chartpilot has seen this resource');
  if (outcome.kind !== 'paused') conditions = removeCondition(conditions, ConditionTypes.paused);
  if (outcome.kind === 'deployed' || outcome.kind === 'current' || outcome.kind === 'uninstalled') {
    conditions = removeCondition(conditions, ConditionTypes.chartUnavailable);
  }

  switch (outcome.kind) {
    case 'deployed': {
      const reason = outcome.action === 'install' ? Reasons.installSuccessful : Reasons.upgradeSuccessful;
      set(ConditionTypes.deployed, 'True', reason, outcome.release.notes);
      conditions = removeCondition(conditions, ConditionTypes.releaseFailed);
      conditions = removeCondition(conditions, ConditionTypes.irreconcilable);
      release = { ...deployedRelease(outcome.release), deployedAt: now };
      failures = undefined;
      break;
    }
    case 'current': {
      if (outcome.release !== undefined) {
        const reason = outcome.release.revision > 1 ? Reasons.upgradeSuccessful : Reasons.installSuccessful;
        set(ConditionTypes.deployed, 'True', reason, outcome.release.notes);
        // A status repaired from the release keeps the deploy time it knew (nothing was deployed now).
        const deployedAt = release?.deployedAt;
        release = { ...deployedRelease(outcome.release), ...(deployedAt === undefined ? {} : { deployedAt }) };
      }
      conditions = removeCondition(conditions, ConditionTypes.releaseFailed);
      conditions = removeCondition(conditions, ConditionTypes.irreconcilable);
      failures = undefined;
      break;
    }
    case 'failed':
      set(ConditionTypes.releaseFailed, 'True', outcome.reason, outcome.message);
      conditions = removeCondition(conditions, ConditionTypes.irreconcilable);
      failures = countFailure(failures, outcome.inputs);
      break;
    case 'irreconcilable':
      set(ConditionTypes.irreconcilable, 'True', outcome.reason ?? Reasons.reconcileError, outcome.message);
      break;
    case 'chart-unavailable':
      set(ConditionTypes.chartUnavailable, 'True', outcome.reason, outcome.message);
      break;
    case 'waiting':
      // Progressing for kstatus (Reconciling True with this reason): the wait ends by itself.
      set(ConditionTypes.ready, 'False', DependencyReasons.notReady, outcome.message);
      conditions = removeCondition(conditions, ConditionTypes.irreconcilable);
      break;
    case 'paused':
      set(
        ConditionTypes.paused,
        'True',
        'ReconcilePaused',
        'reconciliation is paused by the annotation helm.sdk.operatorframework.io/pause-reconcile; remove it to resume',
      );
      break;
    case 'uninstalling':
      set(ConditionTypes.deployed, 'False', Reasons.uninstallSuccessful, outcome.message);
      break;
    case 'uninstalled':
      set(ConditionTypes.deployed, 'False', Reasons.uninstallSuccessful, 'the release was uninstalled');
      conditions = removeCondition(conditions, ConditionTypes.releaseFailed);
      release = undefined;
      failures = undefined;
      outputs = null;
      conditions = removeCondition(conditions, OUTPUTS_CONDITION);
      break;
  }

  if ((outcome.kind === 'deployed' || outcome.kind === 'current') && outcome.kept !== undefined) {
    const { readiness, inventory } = outcome.kept;
    if (release !== undefined) release = { ...release, inventory };
    if (readiness === undefined) {
      set(ConditionTypes.ready, 'Unknown', 'ReadinessNotTracked', 'readiness is not tracked: dependent resources are not watched (watchDependentResources: false) or not yet cached');
    } else {
      set(ConditionTypes.ready, readiness.ready ? 'True' : 'False', readiness.reason, readiness.message);
    }
    const computed = outcome.kept.status;
    // Outputs are replaced as a whole on each pass they are evaluated; otherwise the last ones stay.
    if (computed !== undefined) {
      outputs = Object.keys(computed.outputs).length > 0 ? computed.outputs : null;
      if (computed.unresolved.some((u) => u.name !== READY_WHEN) || Object.keys(computed.outputs).length > 0) {
        const c = outputsCondition(computed);
        set(OUTPUTS_CONDITION, c.status, c.reason, c.message);
      }
    }
    const drifted = driftCondition(outcome.kept);
    if (drifted === 'remove') conditions = removeCondition(conditions, ConditionTypes.drifted);
    else if (drifted !== undefined) set(drifted.type, drifted.status, drifted.reason, drifted.message);
  }

  if (held === undefined) conditions = removeCondition(conditions, ConditionTypes.chartChangeHeld);
  else set(ConditionTypes.chartChangeHeld, 'True', Reasons.canaryFailed, held.message);

  const verdict = chartVerdict(conditions);
  conditions = withKstatus(conditions, kstatusVerdict(verdict, failures, options.stallAfter ?? DEFAULT_STALL_AFTER_FAILURES), gen, now);
  const { [FAILURES_KEY]: _failures, ...ownRest } = own;
  const { outputs: before, ...others } = withoutOwn(current);
  const keptOutputs = outputs === undefined ? before : (outputs ?? undefined);
  return {
    ...others,
    ...(keptOutputs === undefined ? {} : { outputs: keptOutputs }),
    ...(gen === undefined ? {} : { observedGeneration: gen }),
    conditions,
    ...(release === undefined ? {} : { deployedRelease: release }),
    [CHARTPILOT_STATUS_KEY]: { ...ownRest, ...(failures === undefined ? {} : { [FAILURES_KEY]: failures }), summary: summaryOf(verdict) },
  };
}

/** What chartpilot keeps under its own status key (the summary, the failure count). */
function ownKeys(status: CrStatus | undefined): Record<string, unknown> {
  const own = status?.[CHARTPILOT_STATUS_KEY];
  return typeof own === 'object' && own !== null && !Array.isArray(own) ? (own as Record<string, unknown>) : {};
}

/** The status without the keys nextStatus writes itself. */
function withoutOwn(status: CrStatus | undefined): Record<string, unknown> {
  const { conditions: _c, deployedRelease: _d, observedGeneration: _o, [CHARTPILOT_STATUS_KEY]: _own, ...rest } = status ?? {};
  return rest;
}
