/**
 * An Ansible kind's status as a pure function of the current one and what the reconcile did.
 * Conditions are ansible-operator's (`Running`, `Successful`, `Failure`, with `ansibleResult`),
 * so dashboards and `kubectl wait` written for it keep working; chartpilot adds `Ready`
 * (kstatus-style, from the objects the runs created), `observedGeneration`, and its bookkeeping
 * under `status.chartpilot` (the last run's inputs, time and inventory, which is what lets a
 * converged CR run nothing after a restart; and the summary `kubectl get` prints, summary.ts).
 *
 * Only the keys chartpilot owns are returned (a patch): a role writes status too (k8s_status),
 * and a write of ours must never undo one of its.
 */
import { DependencyReasons } from '../../core/dependencies.js';
import { canonicalJson } from '../../lib/json.js';
import type { CrStatus, ObjectRef, Readiness } from '../../core/model.js';
import { setCondition } from '../../core/conditions.js';
import { countFailure, FAILURES_KEY, kstatusVerdict, readFailures, running, withKstatus, type FailureCount } from '../../core/kstatus.js';
import { CHARTPILOT_STATUS_KEY } from '../../core/summary.js';
import { AnsibleConditions, AnsibleReasons, type AnsibleCondition, type AnsibleResult } from './conditions.js';
import type { RunRecord } from './plan.js';
import { ansibleSummary, ansibleVerdict } from './summary.js';

export { AnsibleConditions, AnsibleReasons } from './conditions.js';
export type { AnsibleCondition, AnsibleResult } from './conditions.js';

const RUNNING_MESSAGE = 'Running reconciliation';
const AWAITING_MESSAGE = 'Awaiting next reconciliation';
const SUCCESSFUL_MESSAGE = 'Last reconciliation succeeded';

export type StatusChange =
  /** A run starts (one write per run, as ansible-operator's markRunning); `message` names it for Reconciling. */
  | { readonly kind: 'running'; readonly message: string }
  | {
      readonly kind: 'ran';
      readonly succeeded: boolean;
      readonly reason: string;
      readonly message: string;
      readonly result: AnsibleResult | undefined;
      /** The new record (success); a failure keeps the old one, so the run is retried. */
      readonly record: RunRecord | undefined;
      readonly readiness: Readiness | undefined;
    }
  /** No run: readiness and inventory as they are now. */
  | { readonly kind: 'current'; readonly readiness: Readiness | undefined }
  | { readonly kind: 'problem'; readonly reason: string; readonly message: string }
  /** A CR it depends on (dependsOn) is not Ready: no run; Ready False says which. */
  | { readonly kind: 'waiting'; readonly message: string };

export interface StatusContext {
  readonly manageStatus: boolean;
  readonly generation: number | undefined;
  /** RFC 3339 seconds (`2026-01-02T03:04:05Z`). */
  readonly now: string;
  /** Whether readiness is tracked at all (watchDependentResources). */
  readonly watchDependents: boolean;
  /** What the run tries (the desired inputs): failed runs in a row with the same inputs are counted (kstatus.ts). */
  readonly inputs: string;
  /** Failed runs in a row that make a failure Stalled (--stall-after-failures; 0: never). */
  readonly stallAfter: number;
}

/** The bookkeeping record a status holds, if it holds a readable one. */
export function recordOf(holder: unknown): RunRecord | undefined {
  if (typeof holder !== 'object' || holder === null) return undefined;
  const r = holder as Record<string, unknown>;
  if (typeof r['inputs'] !== 'string' || typeof r['ranAt'] !== 'string') return undefined;
  const inventory = Array.isArray(r['inventory']) ? r['inventory'].filter(isObjectRef) : [];
  return {
    inputs: r['inputs'],
    ranAt: r['ranAt'],
    ...(typeof r['runAgainAt'] === 'string' ? { runAgainAt: r['runAgainAt'] } : {}),
    inventory,
  };
}

function isObjectRef(v: unknown): v is ObjectRef {
  if (typeof v !== 'object' || v === null) return false;
  const o = v as Record<string, unknown>;
  return typeof o['apiVersion'] === 'string' && typeof o['kind'] === 'string' && typeof o['name'] === 'string' && (o['namespace'] === undefined || typeof o['namespace'] === 'string');
}

/**
 * The status keys chartpilot writes after `change`, or undefined when they would not change
 * (an idle reconcile writes nothing). With manageStatus: false only `chartpilot` is written.
 */
export function statusPatch(current: CrStatus | undefined, change: StatusChange, ctx: StatusContext): Record<string, unknown> | undefined {
  const patch: Record<string, unknown> = {};
  // status.chartpilot holds the record and (with manageStatus) the summary; a merge patch of it
  // leaves a key it does not name as it was, so each is compared on its own.
  const own: Record<string, unknown> = {};
  const record = change.kind === 'ran' ? change.record : undefined;
  if (record !== undefined) Object.assign(own, record);
  const currentOwn = asRecord(current?.[CHARTPILOT_STATUS_KEY]);
  if (ctx.manageStatus) {
    const before = readFailures(currentOwn);
    const failures = change.kind !== 'ran' ? before : change.succeeded ? undefined : countFailure(before, ctx.inputs);
    // A merge patch of status.chartpilot: null takes the count off, and only a count that is there.
    if (failures !== undefined) own[FAILURES_KEY] = failures;
    else if (before !== undefined) own[FAILURES_KEY] = null;
    const conditions = withRunKstatus(nextConditions(readConditions(current), change, ctx), change, failures, ctx);
    patch['conditions'] = conditions;
    if (ctx.generation !== undefined && change.kind !== 'running') patch['observedGeneration'] = ctx.generation;
    // The summary follows conditions chartpilot writes; a role that manages its status has its own.
    own['summary'] = ansibleSummary(conditions);
  }
  const ownChanged = Object.entries(own).some(([k, v]) => canonicalJson(v) !== canonicalJson(currentOwn?.[k]));
  if (Object.keys(own).length > 0) patch[CHARTPILOT_STATUS_KEY] = own;
  const unchanged = !ownChanged && Object.entries(patch).every(([k, v]) => k === CHARTPILOT_STATUS_KEY || canonicalJson(v) === canonicalJson(current?.[k]));
  return unchanged ? undefined : patch;
}

/** Reconciling and Stalled (core/kstatus.ts): Reconciling while a run runs, else as the verdict of the conditions says. */
function withRunKstatus(conditions: AnsibleCondition[], change: StatusChange, failures: FailureCount | undefined, ctx: StatusContext): AnsibleCondition[] {
  const verdict =
    change.kind === 'running'
      ? running(AnsibleReasons.running, change.message)
      : change.kind === 'waiting'
        ? running(DependencyReasons.notReady, change.message)
        : kstatusVerdict(ansibleVerdict(conditions), failures, ctx.stallAfter);
  return withKstatus(conditions, verdict, ctx.generation, ctx.now);
}

function asRecord(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

function readConditions(status: CrStatus | undefined): AnsibleCondition[] {
  const list = (status as { conditions?: unknown } | undefined)?.conditions;
  return Array.isArray(list) ? (list.filter((c) => typeof c === 'object' && c !== null && typeof (c as { type?: unknown }).type === 'string') as AnsibleCondition[]) : [];
}

function nextConditions(current: readonly AnsibleCondition[], change: StatusChange, ctx: StatusContext): AnsibleCondition[] {
  let conditions = [...current];
  const set = (type: string, status: AnsibleCondition['status'], reason: string, message: string, result?: AnsibleResult): void => {
    conditions = setCondition(conditions, { type, status, reason, message }, ctx.generation, ctx.now, result === undefined ? undefined : { ansibleResult: result });
  };
  const get = (type: string): AnsibleCondition | undefined => conditions.find((c) => c.type === type);
  const setReady = (readiness: Readiness | undefined): void => {
    if (!ctx.watchDependents) set(AnsibleConditions.ready, 'Unknown', 'ReadinessNotTracked', 'readiness is not tracked: dependent resources are not watched (watchDependentResources: false)');
    else if (readiness === undefined) return;
    else set(AnsibleConditions.ready, readiness.ready ? 'True' : 'False', readiness.reason, readiness.message);
  };

  switch (change.kind) {
    case 'running': {
      // As ansible-operator's markRunning: Successful turns False (keeping its reason), Running is True.
      const successful = get(AnsibleConditions.successful);
      if (successful !== undefined) set(successful.type, 'False', successful.reason, successful.message);
      set(AnsibleConditions.running, 'True', AnsibleReasons.running, RUNNING_MESSAGE);
      break;
    }
    case 'ran':
      if (change.succeeded) {
        set(AnsibleConditions.running, 'True', AnsibleReasons.successful, AWAITING_MESSAGE, change.result);
        set(AnsibleConditions.successful, 'True', AnsibleReasons.successful, SUCCESSFUL_MESSAGE);
        set(AnsibleConditions.failure, 'False', '', '');
      } else {
        const running = get(AnsibleConditions.running);
        set(AnsibleConditions.running, 'False', running?.reason ?? change.reason, running?.message ?? '');
        set(AnsibleConditions.failure, 'True', change.reason, change.message, change.result);
        set(AnsibleConditions.successful, 'False', '', '');
      }
      setReady(change.readiness);
      break;
    case 'current':
      setReady(change.readiness);
      break;
    case 'waiting':
      set(AnsibleConditions.ready, 'False', DependencyReasons.notReady, change.message);
      break;
    case 'problem': {
      // ansible-operator's markError: Running and Successful False, Failure True.
      for (const type of [AnsibleConditions.running, AnsibleConditions.successful]) {
        const c = get(type);
        if (c !== undefined) set(type, 'False', c.reason, c.message);
      }
      set(AnsibleConditions.failure, 'True', change.reason, change.message);
      break;
    }
  }
  return conditions;
}

/** ansible-operator's completion time format (Go `2006-01-02T15:04:05.99999999+00:00`). */
export function completionTime(ms: number): string {
  const iso = new Date(ms).toISOString(); // 2026-01-02T03:04:05.678Z
  const [secs, frac = '000Z'] = iso.split('.');
  const digits = frac.replace('Z', '').replace(/0+$/u, '');
  return `${secs ?? ''}${digits === '' ? '' : `.${digits}`}+00:00`;
}
