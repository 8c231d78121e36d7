/**
 * What every action of one reconcile shares: the CR as it is now, what was derived from it once
 * (options, values, fingerprint), the target, the ports, and the reconcile's progress. Actions
 * change the world only through the ports and tell the loop what they did through `progress`.
 */
import type { Logger } from 'pino';
import type { WallClock } from '../../../lib/clock.js';
import { errorMessage } from '../../../lib/errors.js';
import type { ApplyOverrides } from '../values.js';
import type { CrOptions } from '../annotations.js';
import { canonicalJson } from '../fingerprint.js';
import type { Tenant } from '../../../core/tenant.js';
import type { CustomResource, KeepResult, StoredRevision } from '../../../core/model.js';
import { findCondition } from '../../../core/conditions.js';
import { selfView } from '../../../core/outputs.js';
import { contestMessage, warnText } from '../drift-report.js';
import { runningMessage } from '../../../core/kstatus.js';
import { ConditionTypes, Reasons } from '../names.js';
import type { Progress } from '../plan.js';
import type { RecordVersion, ReleaseActions, ReleaseRequestBase, ReleaseKeeperPort, ReleaseStore } from '../ports.js';
import { statusMergePatch } from '../../../core/merge-patch.js';
import { leave, type Exit, type ReconcileFailure, type ReconcileOutcome, type StatusWrite } from '../../../core/outcome.js';
import type { Confinement } from '../../../core/confinement.js';
import type { CrWriter, EventSink, ServerTimes, ServiceAccountLookup } from '../../../core/ports.js';
import { nextStatus, onlyRolloutProgress, type Outcome } from '../status.js';
import type { ChartTrial, ReconcileTarget } from '../target.js';

export interface ReconcilerDeps {
  readonly helm: ReleaseActions;
  readonly releases: ReleaseStore;
  readonly writer: Pick<CrWriter, 'patchStatus' | 'setFinalizers'>;
  readonly events: EventSink;
  readonly clock: WallClock;
  readonly helmTimeoutMs: number;
  /**
   * The API server's clocks as this process started (kube/server-clock.ts): the lock rule
   * (plan.ts) reads these, never \`clock\`, so a skewed host clock cannot make it free a live lock.
   */
  readonly server: ServerTimes;
  /** Helm calls stopped by an operator stopping (see PlanInput.stoppedCalls); none when absent. */
  readonly stoppedCalls?: { has(call: string): boolean } | undefined;
  readonly historyMax: number;
  /** Drift, readiness and inventory; without it releases are only installed and upgraded. */
  readonly keeper?: ReleaseKeeperPort | undefined;
  /** Told of each drift repair (per-CR metrics), with the repaired object's kind. */
  readonly onDriftRepaired?: ((cr: CustomResource, objectKind: string) => void) | undefined;
  /** Failed attempts in a row, with the same inputs, after which a CR is Stalled (kstatus.ts); default 5, 0 = never. */
  readonly stallAfterFailures?: number | undefined;
  /** operator-sdk's --suppress-override-values: no OverrideValuesInUse events. */
  readonly suppressOverrideValues?: boolean | undefined;
  /** How watches.yaml overrideValues lay over a spec (Helm's --set semantics, from config/). */
  readonly applyOverrides: ApplyOverrides;
  /** Whether a kind's ServiceAccount exists; without it, it is taken to exist. */
  readonly serviceAccounts?: ServiceAccountLookup | undefined;
  /**
   * A status change that only retells a rollout in progress (Ready stays False, not failed, for
   * the same reason) is written at most this often per resource; the last one is written when the
   * time is up. Transitions (Ready True, a failure, a new reason or revision) are written at once.
   * 0 = off.
   */
  readonly statusPaceMs?: number | undefined;
  /**
   * Told at the end of every reconcile what became of the chart it was served (the chart rollout
   * promotes or holds a changed chart by what its first CR's reconcile did with it).
   */
  readonly onChartTrial?: ((cr: CustomResource, target: ReconcileTarget, trial: ChartTrial) => void) | undefined;
}

/** When each resource's status was last written (by uid), within the pace, oldest first; shared by a kind's reconciles. */
export type StatusWriteTimes = Map<string, number>;

/** After an action: observe and plan again, or end the reconcile (the status it writes, its outcome or failure). */
export type StepResult = { readonly done: false } | Done;
export type Done = { readonly done: true } & Exit<Outcome>;

export const CONTINUE: StepResult = { done: false };

/** Ends the reconcile with `outcome`, writing `status` (when given) on the way out. */
export function end(outcome: ReconcileOutcome = {}, status?: Outcome): Done {
  return status === undefined ? { done: true, outcome } : { done: true, outcome, status };
}

/** Ends the reconcile failed (retried with backoff), `status` saying why written first. */
export function failed(failure: ReconcileFailure, status?: Outcome): Done {
  return status === undefined ? { done: true, outcome: {}, failure } : { done: true, outcome: {}, status, failure };
}

/** A deploy that failed in this reconcile: what helm said, then what remediation did, in order. */
export interface FailedDeploy {
  readonly action: 'install' | 'upgrade';
  readonly cause: unknown;
  /** helm's error, as told to the user. */
  readonly error: string;
  readonly remediation: readonly string[];
}

/** The failure as one sentence: the error, then each remediation step. */
export function failureMessage(failure: FailedDeploy): string {
  return [failure.error, ...failure.remediation].join('; ');
}

/** `failure` with one more remediation step told; the record itself is never changed. */
export function remediated(failure: FailedDeploy, step: string): FailedDeploy {
  return { ...failure, remediation: [...failure.remediation, step] };
}

const ACTING_REASONS = { install: 'Installing', upgrade: 'Upgrading', rollback: 'RollingBack', uninstall: 'Uninstalling' } as const;

export class ActionContext {
  cr: CustomResource;
  progress: Progress;
  failure: FailedDeploy | undefined;
  /** Set when the release is known to hold this reconcile's target: helm deployed it, or it already did. */
  deployedTarget = false;
  /** Why the plan chose the step now running (plan-reason.ts), shown beside a helm call it makes. */
  why: string | undefined;

  constructor(
    readonly deps: ReconcilerDeps,
    readonly target: ReconcileTarget,
    initial: CustomResource,
    readonly derived: {
      /** undefined when the annotations are invalid (the plan then says irreconcilable). */
      readonly crOptions: CrOptions | undefined;
      /** undefined when the spec cannot be values (irreconcilable). */
      readonly values: Record<string, unknown> | undefined;
      /** Why the CR cannot be reconciled as it is (bad spec, name or annotation). */
      readonly problem: string | undefined;
      /** The condition reason for `problem` when it has one of its own (ValuesTooDeep, …). */
      readonly problemReason?: string | undefined;
      /** The problem may pass with no change anyone watches (RBAC granted later): look again at the period. */
      readonly problemRetry?: boolean | undefined;
      /** A dependency (dependsOn) is not Ready: why; undefined when none holds the CR back. */
      readonly waitingFor?: string | undefined;
      readonly desiredFingerprint: string;
      /** Requeue after a successful reconcile (the CR's period annotation, else the entry's). */
      readonly requeue: ReconcileOutcome;
      /** The ServiceAccount every action runs as; undefined = the operator's own identity. */
      readonly tenant: Tenant | undefined;
    },
    readonly log: Logger,
    startingProgress: Progress,
    private readonly statusWrites: StatusWriteTimes = new Map(),
    /** Aborted when the operator stops and its drain time is up: every helm call of this reconcile is stopped. */
    readonly signal?: AbortSignal,
  ) {
    this.cr = initial;
    this.progress = startingProgress;
  }

  get name(): string {
    return this.cr.metadata.name;
  }

  get namespace(): string {
    return this.cr.metadata.namespace ?? 'default';
  }

  /** Which of `revisions` chartpilot did not write for this CR. A CR without a uid can prove nothing. */
  foreignRevisions(revisions: readonly StoredRevision[]): Promise<StoredRevision[]> {
    const uid = this.cr.metadata.uid;
    if (revisions.length === 0) return Promise.resolve([]);
    if (uid === undefined || uid === '') return Promise.resolve([...revisions]);
    return this.deps.releases.foreignRevisions(this.namespace, this.name, uid, revisions);
  }

  /** Where the CR's objects may be: its namespace, elsewhere only as its watches entry allows. */
  get confinement(): Confinement {
    return { namespace: this.namespace, allowClusterScoped: this.target.allowClusterScoped, allowCrossNamespace: this.target.allowCrossNamespace };
  }

  /** What every helm call of this reconcile carries: where, how long, as whom, for which CR, until when. */
  get call(): ReleaseRequestBase {
    const uid = this.cr.metadata.uid;
    return {
      release: this.name,
      namespace: this.namespace,
      timeoutMs: this.deps.helmTimeoutMs,
      impersonate: this.impersonate,
      signal: this.signal,
      ...(uid === undefined || uid === '' ? {} : { owner: { uid, confinement: this.confinement } }),
    };
  }

  /** The user helm and repairs act as (the tenant's ServiceAccount), or undefined for the operator. */
  get impersonate(): string | undefined {
    return this.derived.tenant?.user;
  }

  /**
   * The reconcile's one exit (core/outcome.ts leave): the status the last step asked for is
   * written, then its failure thrown or its outcome returned.
   */
  finish(done: Done): Promise<ReconcileOutcome> {
    return leave(done, (status) => this.writeStatus(status));
  }

  /**
   * Writes the status only when it changed, so an idle operator makes no API writes; a change that
   * only retells a rollout in progress waits out the status pace (see ReconcilerDeps). Private:
   * actions return the status they want (`end`, `failed`) and `finish` writes it.
   */
  private async writeStatus(outcome: Outcome): Promise<StatusWrite> {
    const nowMs = this.deps.clock.now();
    const now = new Date(nowMs).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const status = nextStatus(this.cr.status, outcome, this.cr.metadata.generation, now, { held: this.target.chartChangeHeld, stallAfter: this.deps.stallAfterFailures });
    if (canonicalJson(status) === canonicalJson(this.cr.status ?? {})) return {};
    const uid = this.cr.metadata.uid ?? `${this.namespace}/${this.name}`;
    const pace = this.deps.statusPaceMs ?? 0;
    const last = this.statusWrites.get(uid);
    if (pace > 0 && last !== undefined && nowMs - last < pace && onlyRolloutProgress(this.cr.status, status, outcome)) {
      return { deferredMs: pace - (nowMs - last) };
    }
    const resourceVersion = await this.deps.writer.patchStatus(this.cr, statusMergePatch(this.cr.status, status));
    // What the server holds now: the next write of this reconcile starts from it (and a finalizer
    // write, a compare-and-swap, from its version).
    this.cr = { ...this.cr, status, metadata: resourceVersion === undefined ? this.cr.metadata : { ...this.cr.metadata, resourceVersion } };
    if (pace > 0) this.rememberStatusWrite(uid, nowMs, pace);
    return {};
  }

  /**
   * Runs `call`, a long helm action, with Reconciling=True naming it and its timeout
   * (core/kstatus.ts) written beside it: the status PATCH goes out as the call starts, not before
   * it, and lands before this reconcile writes anything else (its status, its finalizer's
   * compare-and-swap). An announcement that cannot be written is logged, never fatal: the status
   * written after the call tells how it went either way.
   */
  async announced<T>(action: 'install' | 'upgrade' | 'rollback' | 'uninstall', call: () => Promise<T>): Promise<T> {
    const running = runningMessage(action, `release ${this.namespace}/${this.name}`, this.deps.helmTimeoutMs);
    const message = this.why === undefined ? running : `${running}: ${this.why}`;
    const announcing = this.writeStatus({ kind: 'acting', reason: ACTING_REASONS[action], message }).then(
      () => undefined,
      (err: unknown) => {
        this.log.warn({ action, err: errorMessage(err) }, 'could not write Reconciling before the helm call');
      },
    );
    try {
      return await call();
    } finally {
      await announcing;
    }
  }

  /**
   * Kept in write order, so the entries older than the pace (which decide nothing any more, and
   * include those of deleted resources) are the ones at the front.
   */
  private rememberStatusWrite(uid: string, nowMs: number, pace: number): void {
    this.statusWrites.delete(uid);
    this.statusWrites.set(uid, nowMs);
    for (const [key, at] of this.statusWrites) {
      if (nowMs - at < pace) break;
      this.statusWrites.delete(key);
    }
  }

  /** Inventory, readiness and (on quiet passes) drift repair; repairs are announced as events. */
  async keep(at: {
    revision: number;
    manifest?: string;
    recordCreatedAt?: string | undefined;
    fingerprint?: string | undefined;
    recordVersion?: RecordVersion | undefined;
    repair: boolean;
    awaitCaches?: boolean;
  }): Promise<KeepResult | undefined> {
    const keeper = this.deps.keeper;
    if (keeper === undefined) return undefined;
    const kept = await keeper.keep({
      namespace: this.namespace,
      release: this.name,
      revision: at.revision,
      manifest: at.manifest,
      recordCreatedAt: at.recordCreatedAt,
      fingerprint: at.fingerprint,
      ...(at.recordVersion === undefined ? {} : { recordVersion: at.recordVersion }),
      ownerKind: this.target.ownerKind,
      watch: this.target.watchDependentResources,
      repair: at.repair,
      awaitCaches: at.awaitCaches,
      impersonate: this.impersonate,
      ownerUid: this.cr.metadata.uid ?? '',
      confinement: this.confinement,
      ...(this.target.driftDetection === undefined ? {} : { driftDetection: this.target.driftDetection }),
      ...(this.target.status === undefined ? {} : { status: { program: this.target.status, self: selfView(this.cr) } }),
    });
    for (const r of kept.repaired) {
      const what = r.action === 'created' ? 'was missing; recreated it' : `had drifted (${r.fields.slice(0, 5).join(', ')}); set it back`;
      this.deps.events.emit(this.cr, 'Warning', Reasons.driftRepaired, `${r.object} ${what} as the chart says (revision ${at.revision} unchanged)`);
      // Repair.object is "<Kind> <name>" (dependents/types.ts describeRef).
      this.deps.onDriftRepaired?.(this.cr, r.object.split(' ')[0] ?? '');
    }
    for (const c of kept.contests ?? []) if (c.announce) this.deps.events.emit(this.cr, 'Warning', Reasons.driftContested, contestMessage(c));
    // Warn mode tells drift once per change of what differs: the Drifted condition remembers what was told.
    if (kept.unrepaired !== undefined && kept.unrepaired.length > 0) {
      const text = warnText(kept.unrepaired);
      const told = findCondition(this.cr.status?.conditions, ConditionTypes.drifted)?.message ?? '';
      if (!told.includes(text)) this.deps.events.emit(this.cr, 'Warning', Reasons.driftDetected, `${text} (revision ${at.revision})`);
    }
    return kept;
  }
}
