/**
 * When an Ansible kind's role or playbook runs: a pure function of the CR's state, what the last
 * successful run recorded on it, the dependents' drift and the clock. A run costs seconds of CPU
 * (ansible-runner, Python, one API round trip per task), so it runs only when something it
 * depends on changed: its inputs (spec, watched annotations, role files, entry vars, finalizer,
 * flags: one fingerprint), a dependent it created (changed by someone else, or gone), the period
 * the user set, the role's own `requeue_after`, or a failure (retried with backoff, since a failed
 * run records nothing). Anything else — a restart, a resync, a dependent's status — only
 * refreshes readiness and the inventory.
 */
import type { ObjectRef } from '../../core/model.js';

/** What the CR carries after its last successful run (status.chartpilot, or an annotation for kinds without status). */
export interface RunRecord {
  /** The fingerprint of the inputs that run had (fingerprint.ts). */
  readonly inputs: string;
  /** When it finished (ISO time). */
  readonly ranAt: string;
  /** `operator_sdk.util.requeue_after`: when the role asked to run again (ISO time). */
  readonly runAgainAt?: string | undefined;
  /** What the runs created (and have not deleted since): its dependents. */
  readonly inventory: readonly ObjectRef[];
}

export type RunTrigger =
  /** Never ran successfully (or the record was lost). */
  | 'first'
  /** The inputs' fingerprint differs from the recorded one (also: the last run failed). */
  | 'inputs-changed'
  /** A dependent was changed by someone else or deleted. */
  | 'drift'
  /** The role asked to run again (requeue_after) and that time came. */
  | 'requeue-after'
  /** The CR's reconcile-period annotation or the entry's reconcilePeriod elapsed. */
  | 'period';

export interface AnsiblePlanInput {
  /** A CR it depends on (dependsOn) is not Ready: why; undefined when none holds it back. Not used while deleting. */
  readonly waitingFor?: string | undefined;
  readonly deleting: boolean;
  /** The entry's finalizer name; undefined = deletion runs nothing. */
  readonly finalizerName: string | undefined;
  /** The CR carries that finalizer. */
  readonly hasFinalizer: boolean;
  /** The skip-finalizer annotation is "true". */
  readonly skipFinalizer: boolean;
  /** Why the CR cannot be reconciled as it is (an invalid annotation). */
  readonly problem: string | undefined;
  readonly serviceAccountMissing: boolean;
  readonly desiredInputs: string;
  readonly record: RunRecord | undefined;
  /** Dependents changed by someone else or deleted, described (see driftOf). */
  readonly drift: readonly string[];
  /** The period the user set (annotation, else the entry's reconcilePeriod); 0 = none. */
  readonly periodMs: number;
  readonly now: number;
}

export type AnsiblePlan =
  /** Being deleted and nothing of ours holds it: nothing to do. */
  | { readonly kind: 'released' }
  /** Being deleted, and the skip-finalizer annotation says to let it go without a run. */
  | { readonly kind: 'skip-finalizer' }
  | { readonly kind: 'run-finalizer' }
  | { readonly kind: 'irreconcilable'; readonly message: string }
  | { readonly kind: 'no-service-account' }
  /** A CR it depends on is not Ready: no run, say which; its change re-checks this one. */
  | { readonly kind: 'waiting'; readonly message: string }
  | { readonly kind: 'run'; readonly trigger: RunTrigger; readonly why: string; readonly addFinalizer: boolean }
  /** Nothing to run: refresh readiness and inventory; look again after `nextRunInMs` when a run is scheduled. */
  | { readonly kind: 'current'; readonly addFinalizer: boolean; readonly nextRunInMs: number | undefined };

export function planAnsible(input: AnsiblePlanInput): AnsiblePlan {
  if (input.deleting) {
    if (input.finalizerName === undefined || !input.hasFinalizer) return { kind: 'released' };
    if (input.skipFinalizer) return { kind: 'skip-finalizer' };
    if (input.problem !== undefined) return { kind: 'irreconcilable', message: input.problem };
    if (input.serviceAccountMissing) return { kind: 'no-service-account' };
    return { kind: 'run-finalizer' };
  }
  if (input.problem !== undefined) return { kind: 'irreconcilable', message: input.problem };
  if (input.serviceAccountMissing) return { kind: 'no-service-account' };
  if (input.waitingFor !== undefined) return { kind: 'waiting', message: input.waitingFor };
  const addFinalizer = input.finalizerName !== undefined && !input.hasFinalizer;
  const run = (trigger: RunTrigger, why: string): AnsiblePlan => ({ kind: 'run', trigger, why, addFinalizer });
  const { record } = input;
  if (record === undefined) return run('first', 'no successful run is recorded');
  if (record.inputs !== input.desiredInputs) return run('inputs-changed', 'the inputs changed since the last successful run (spec, watched annotations, role files, vars or settings)');
  if (input.drift.length > 0) return run('drift', input.drift.slice(0, 3).join('; '));
  const againAt = timeOf(record.runAgainAt);
  if (againAt !== undefined && againAt <= input.now) return run('requeue-after', 'the role asked to run again (requeue_after)');
  const ranAt = timeOf(record.ranAt) ?? Number.NEGATIVE_INFINITY;
  const periodDue = input.periodMs > 0 ? ranAt + input.periodMs : undefined;
  if (periodDue !== undefined && periodDue <= input.now) return run('period', 'the reconcile period elapsed');
  const next = [againAt, periodDue].filter((t): t is number => t !== undefined).map((t) => Math.max(0, Math.ceil(t - input.now)));
  return { kind: 'current', addFinalizer, nextRunInMs: next.length === 0 ? undefined : Math.min(...next) };
}

function timeOf(iso: string | undefined): number | undefined {
  if (iso === undefined) return undefined;
  const t = Date.parse(iso);
  return Number.isNaN(t) ? undefined : t;
}

/** One dependent as its cache shows it now: `content` is its content digest (contentDigest), undefined = it does not exist. */
export interface LiveDependent {
  readonly ref: ObjectRef;
  readonly content: string | undefined;
}

/**
 * Which dependents drifted: gone, or their content differs from the baseline taken after the last
 * run (objects without a baseline, as after a restart, count only when gone). Status never counts:
 * content digests leave it out.
 */
export function driftOf(live: readonly LiveDependent[], baseline: ReadonlyMap<string, string> | undefined): string[] {
  const out: string[] = [];
  for (const d of live) {
    const what = `${d.ref.kind} ${d.ref.namespace === undefined ? '' : `${d.ref.namespace}/`}${d.ref.name}`;
    if (d.content === undefined) out.push(`${what} was deleted`);
    else {
      const before = baseline?.get(refKey(d.ref));
      if (before !== undefined && before !== d.content) out.push(`${what} was changed`);
    }
  }
  return out;
}

export function refKey(ref: ObjectRef): string {
  return `${ref.apiVersion}/${ref.kind}/${ref.namespace ?? ''}/${ref.name}`;
}

/** The inventory after a run: the previous one, plus what the run created or updated, less what it deleted. */
export function nextInventory(
  previous: readonly ObjectRef[],
  written: readonly { readonly apiVersion: string; readonly kind: string; readonly namespace?: string | undefined; readonly name: string; readonly action?: string | undefined }[],
): ObjectRef[] {
  const byKey = new Map<string, ObjectRef>();
  for (const r of previous) byKey.set(refKey(r), r);
  for (const w of written) {
    const ref: ObjectRef = { apiVersion: w.apiVersion, kind: w.kind, ...(w.namespace === undefined || w.namespace === '' ? {} : { namespace: w.namespace }), name: w.name };
    if (w.action === 'deleted') byKey.delete(refKey(ref));
    else byKey.set(refKey(ref), ref);
  }
  return [...byKey.values()].sort((a, b) => (refKey(a) < refKey(b) ? -1 : refKey(a) > refKey(b) ? 1 : 0));
}
