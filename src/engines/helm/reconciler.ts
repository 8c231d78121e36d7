/**
 * One reconcile of one custom resource: derive what the CR asks for, then observe → plan (pure) →
 * run the planned action, until an action ends the reconcile. The reconciler decides nothing
 * itself: plan.ts decides, actions/ act through the ports, so this runs unchanged against fakes in
 * unit tests and against the real cluster and helm in integration tests.
 */
import type { Logger } from 'pino';
import { ActionContext, end, failureMessage, type ReconcilerDeps, type StatusWriteTimes, type StepResult } from './actions/context.js';
import type { Engine } from '../../core/engine.js';
import type { ReconcileOutcome } from '../../core/outcome.js';
import { deploy } from './actions/deploy.js';
import { addFinalizer, removeFinalizer } from './actions/finalizer.js';
import { fail, remediationFailed, removeFailedInstall, rollback } from './actions/remediate.js';
import { chartUnavailable, current, foreignRecords, irreconcilable, noServiceAccount, paused, stuck, waiting } from './actions/report.js';
import { checkObjectsGone, waitObjectsGone } from './actions/uninstall-wait.js';
import { clearFailedRelease, skipUninstall, uninstallDeleted } from './actions/uninstall.js';
import { unlock, waitPending } from './actions/unlock.js';
import { parseCrOptions } from './annotations.js';
import { fingerprint } from './fingerprint.js';
import { serviceAccountMissing as saMissing, tenantOf, type Tenant } from '../../core/tenant.js';
import type { ValuesReference, ValuesSources } from '../../core/values-from.js';
import type { DependencyRef, DependencyVerdict, Dependencies } from '../../core/dependencies.js';
import { createHash } from 'node:crypto';
import type { CustomResource, SpecSummary, StoredRevision } from '../../core/model.js';
import type { SpecReader } from './ports.js';
import { summarizeSpec } from '../../core/spec-summary.js';
import { Annotations, FINALIZER, LEGACY_FINALIZER, Reasons, releaseNameProblem } from './names.js';
import { latestRevision, NO_PROGRESS, plan, type NonTerminalKind, type Plan, type PlanInput } from './plan.js';
import { planReason } from './plan-reason.js';
import type { ChartTrial, ReconcileTarget } from './target.js';
import { canonicalJson } from '../../lib/json.js';
import { MAX_VALUES_BYTES, mergeValues, valuesTooLarge } from './values.js';

export { ReconcileFailure } from '../../core/outcome.js';
export type { ReconcilerDeps } from './actions/context.js';
export type { ReconcileTarget } from './target.js';

export interface ReconcilerOptions extends ReconcilerDeps {
  /**
   * The kind's current target for `cr`, read once at the start of each reconcile (hot reload
   * replaces it; while a changed chart is tried on one CR, that CR is served another than the
   * rest). Without a CR: the target most CRs are served, for deriving ahead of a reconcile.
   */
  readonly target: (cr?: CustomResource) => ReconcileTarget;
  /** Reads a CR in full when it comes from a cache that keeps only its spec's summary. */
  readonly specs?: SpecReader | undefined;
  /** Reads what a kind's `valuesFrom` references (entries without it never ask). */
  readonly valuesSources?: ValuesSources | undefined;
  /** Judges what a kind's CRs depend on (`dependsOn`; entries without it never ask). */
  readonly dependencies?: Dependencies | undefined;
}

/** What a spec gave, kept per CR (uid) so a converged CR is checked without reading its spec again. */
interface DerivedFromSpec {
  readonly digest: string;
  /** What of the target it was derived from (derivationKey): hot reload changes it. */
  readonly target: string;
  /** With `valuesFrom`: the fingerprint of the spec's part, which what the references hold completes (withReferenced). */
  readonly desiredFingerprint: string;
  readonly problem: string | undefined;
  /** The condition reason of `problem`, when it has one of its own (ValuesTooLarge, …). */
  readonly reason: string | undefined;
  /** The references the spec lists in the entry's valuesFrom.specField (names only, no values). */
  readonly references: readonly ValuesReference[];
  /** The CRs the spec lists in the entry's dependsOn.specField. */
  readonly dependencies: readonly DependencyRef[];
}

/** What begin derives from a spec it has in full: the values of the spec's part, too. */
type FromSpec = Omit<DerivedFromSpec, 'digest' | 'target'> & {
  /** The spec without its references field; undefined when only the digest was known. */
  readonly spec: unknown;
  /** The spec's values (without those of references); undefined when only the digest was known or there is a problem. */
  readonly values: Record<string, unknown> | undefined;
};

export class Reconciler implements Engine {
  /** Status pacing: when each resource's status was last written. */
  private readonly statusWrites: StatusWriteTimes = new Map();
  /** The clamped-period warning last told per resource (uid), so it is told once, not every period. */
  private readonly periodWarnings = new Map<string, string>();
  private readonly derived = new Map<string, DerivedFromSpec>();

  constructor(private readonly opts: ReconcilerOptions) {}

  /** The CR with this uid is gone: forget what its spec gave. */
  forget(uid: string): void {
    this.derived.delete(uid);
  }

  /** The CR with this queue key left this replica: its references and dependencies are no longer watched for it. */
  forgetReferences(key: string): void {
    this.opts.valuesSources?.forget(key);
    this.opts.dependencies?.forget(key);
  }

  /**
   * A CR seen in full as it arrives (list or watch), before the cache drops its spec: derive its
   * fingerprint now, so its reconcile needs no GET of the CR. After a restart or failover this is
   * what makes checking every CR cost no read per CR. Nothing is derived for a spec this process
   * already derived (a status-only update), nor for one over the size limit (begin refuses it).
   */
  sawSpec(cr: CustomResource): void {
    const uid = cr.metadata.uid ?? '';
    const summary = cr.specSummary;
    if (uid === '' || this.opts.specs === undefined || cr.spec === undefined || summary === undefined || summary.digest === '') return;
    if (summary.bytes > MAX_VALUES_BYTES) return;
    const target = this.opts.target();
    const key = derivationKey(target);
    const known = this.derived.get(uid);
    if (known !== undefined && known.digest === summary.digest && known.target === key) return;
    // Kept without the values themselves: memory stays a fingerprint per CR.
    const { desiredFingerprint, problem, reason, references, dependencies } = this.deriveFromSpec(cr.spec, target, uid);
    this.derived.set(uid, { digest: summary.digest, target: key, desiredFingerprint, problem, reason, references, dependencies });
  }

  private deriveFromSpec(given: unknown, target: ReconcileTarget, uid: string): FromSpec {
    let spec = given;
    let references: readonly ValuesReference[] = [];
    let dependencies: readonly DependencyRef[] = [];
    const sources = this.opts.valuesSources;
    if (target.valuesFrom !== undefined && sources !== undefined) {
      // The references field is not a value; what it names is read on each reconcile.
      const split = sources.split(spec, target.valuesFrom);
      if (!split.ok) return { spec: undefined, values: undefined, desiredFingerprint: '', problem: split.problem, reason: split.reason, references, dependencies };
      spec = split.spec;
      references = split.references;
    }
    if (target.dependsOn !== undefined && this.opts.dependencies !== undefined) {
      // Neither is the dependencies field; what it names is judged on each reconcile.
      const split = this.opts.dependencies.split(spec, target.dependsOn);
      if (!split.ok) return { spec: undefined, values: undefined, desiredFingerprint: '', problem: split.problem, reason: split.reason, references, dependencies };
      spec = split.spec;
      dependencies = split.dependencies;
    }
    // mergeValues measures the spec (depth, size) before anything walks it.
    const values = mergeValues(spec, target.overrides, this.opts.applyOverrides);
    const desiredFingerprint = values.ok ? this.desiredFingerprint(target, uid, values.values) : '';
    return values.ok
      ? { spec, values: values.values, desiredFingerprint, problem: undefined, reason: undefined, references, dependencies }
      : { spec, values: undefined, desiredFingerprint, problem: values.problem, reason: values.reason, references, dependencies };
  }

  /** `signal` aborted → the running helm call is stopped and the reconcile rejects with HelmCallInterrupted. */
  async reconcile(cached: CustomResource, log: Logger, signal?: AbortSignal): Promise<ReconcileOutcome> {
    let ctx = await this.begin(cached, log, signal);
    try {
      return await this.steps(ctx, log, signal, (next) => {
        ctx = next;
      });
    } finally {
      this.opts.onChartTrial?.(ctx.cr, ctx.target, trialOf(ctx));
    }
  }

  /** observe → plan → run until an action ends the reconcile; `replaced` is told when the context is rebuilt (spec read). */
  private async steps(first: ActionContext, log: Logger, signal: AbortSignal | undefined, replaced: (ctx: ActionContext) => void): Promise<ReconcileOutcome> {
    let ctx = first;
    const serviceAccountMissing = await saMissing(this.opts.serviceAccounts, ctx.derived.tenant);
    let unchanged: Observed | undefined;
    for (let step = 0; ; step++) {
      // A step that does not touch helm's storage leaves what the last look saw; no second LIST.
      const observed = unchanged ?? (await this.observe(ctx, step === 0));
      const { revisions } = observed;
      unchanged = undefined;
      const planInput: PlanInput = {
        deleting: ctx.cr.metadata.deletionTimestamp !== undefined,
        hasFinalizer: hasOurFinalizer(ctx.cr),
        paused: ctx.derived.crOptions?.paused ?? false,
        uninstallWait: ctx.derived.crOptions?.uninstallWait ?? false,
        problem: ctx.derived.problem,
        chartUnavailable: ctx.target.chartUnavailable?.message,
        serviceAccountMissing,
        waitingFor: ctx.derived.waitingFor,
        desiredFingerprint: ctx.derived.desiredFingerprint,
        ownerKind: ctx.target.ownerKind,
        revisions,
        foreignRevisions: observed.foreign,
        inventory: ctx.cr.status?.deployedRelease?.inventory ?? [],
        canCheckObjects: this.opts.keeper !== undefined,
        serverNow: this.opts.server.clock.now(),
        startedAtRevision: this.opts.server.startedAtRevision,
        helmTimeoutMs: this.opts.helmTimeoutMs,
        stoppedCalls: this.opts.stoppedCalls ?? NO_STOPPED_CALLS,
        statusRevision: ctx.cr.status?.deployedRelease?.revision,
        progress: ctx.progress,
      };
      const next = plan(planInput);
      const acts = ACTS.has(next.kind);
      // Built only where it is told: an idle pass at info level builds no sentence.
      const why = acts || log.isLevelEnabled('debug') ? planReason(planInput, next) : undefined;
      log.debug({ plan: next.kind, why, step }, 'planned');
      // The start's snapshot of the records serves a first look that finds nothing to do and
      // agrees with the revision the CR's status names (what its last owner saw last); for
      // anything else look again, fresh, before acting.
      if (observed.fromStartup && !(next.kind === 'none' && !next.refreshStatus)) continue;
      if ((next.kind === 'install' || next.kind === 'upgrade') && ctx.derived.values === undefined && ctx.derived.problem === undefined) {
        // Known from the spec's digest so far; helm needs the values themselves: read the CR, plan again.
        ctx = await this.begin(await this.readSpec(ctx.cr), log, signal, ctx);
        replaced(ctx);
        unchanged = observed;
        continue;
      }
      // The release already holds exactly what this target asks for.
      if (next.kind === 'none') ctx.deployedTarget = true;
      // What acts on the release is told at info, with why (the fingerprints when it upgrades);
      // the Reconciling condition of a helm call shows why too.
      if (acts) log.info({ plan: next.kind, why, step, ...(next.kind === 'upgrade' ? fingerprints(planInput) : {}) }, 'acting');
      ctx.why = why;
      const result = await run(ctx, next, revisions);
      // The one exit: the status the step ended with is written here, once, on every path.
      if (result.done) return ctx.finish(result);
      if (LEAVES_STORAGE.has(next.kind)) unchanged = observed;
    }
  }

  /**
   * What the CR asks for, derived once per reconcile (again, keeping `previous`'s target and
   * progress, once the spec has been read). A CR from the cache has no spec, only its summary: a
   * spec over the size limit is refused from that alone; one whose digest matches what this
   * process last derived for the CR reuses that fingerprint (a converged CR costs no read); any
   * other is read now (one GET).
   */
  private async begin(given: CustomResource, log: Logger, signal: AbortSignal | undefined, previous?: ActionContext): Promise<ActionContext> {
    const target = previous?.target ?? this.opts.target(given);
    const targetKey = derivationKey(target);
    const uid = given.metadata.uid ?? '';
    let cr = given;
    let summary: SpecSummary | undefined = cr.specSummary;
    let fromSpec: FromSpec | undefined;
    if (cr.spec === undefined && summary !== undefined && this.opts.specs !== undefined) {
      const known = this.derived.get(uid);
      const tooLarge = summary.bytes > MAX_VALUES_BYTES ? valuesTooLarge() : undefined;
      if (tooLarge !== undefined) fromSpec = { spec: undefined, values: undefined, desiredFingerprint: '', problem: tooLarge.message, reason: tooLarge.reason, references: [], dependencies: [] };
      else if (known !== undefined && summary.digest !== '' && known.digest === summary.digest && known.target === targetKey && !(target.valuesFrom !== undefined && likelyDeploys(cr))) {
        fromSpec = { spec: undefined, values: undefined, desiredFingerprint: known.desiredFingerprint, problem: known.problem, reason: known.reason, references: known.references, dependencies: known.dependencies };
      } else {
        cr = await this.opts.specs.read(cr);
        summary = undefined;
      }
    }
    if (fromSpec === undefined) {
      summary ??= summarizeSpec(cr.spec);
      fromSpec = this.deriveFromSpec(cr.spec, target, uid);
      if (uid !== '' && this.opts.specs !== undefined) {
        const { desiredFingerprint, problem, reason, references, dependencies } = fromSpec;
        this.derived.set(uid, { digest: summary.digest, target: targetKey, desiredFingerprint, problem, reason, references, dependencies });
      }
    }
    const namespace = cr.metadata.namespace ?? 'default';
    const tenant = tenantOf(target, namespace);
    // Dependencies first: what a dependency makes (a Secret) is often what a reference reads.
    const dependency = fromSpec.problem === undefined ? await this.judgeDependencies(cr, target, fromSpec) : undefined;
    const waitingFor = dependency?.kind === 'waiting' ? dependency.message : undefined;
    const dependencyProblem = dependency?.kind === 'problem' ? dependency : undefined;
    const withSources = fromSpec.problem === undefined && dependency?.kind !== 'waiting' && dependencyProblem === undefined ? await this.readReferences(cr, target, fromSpec, tenant) : undefined;
    const derivedValues = withSources?.values ?? fromSpec.values;
    const parsed = parseCrOptions(cr.metadata.annotations);
    const crOptions = parsed.ok ? parsed.options : undefined;
    this.warnClampedPeriod(cr, crOptions?.reconcilePeriodClamped, log);
    const otherProblem = releaseNameProblem(cr.metadata.name) ?? (parsed.ok ? undefined : parsed.problems.join('; '));
    const problem = otherProblem ?? fromSpec.problem ?? dependencyProblem?.message ?? withSources?.problem;
    const problemReason = otherProblem === undefined ? (fromSpec.reason ?? dependencyProblem?.reason ?? withSources?.reason) : undefined;
    const period = crOptions?.reconcilePeriodMs ?? target.reconcilePeriodMs;
    const requeue: ReconcileOutcome = period > 0 ? { requeueAfterMs: period } : {};
    return new ActionContext(
      this.opts,
      target,
      cr,
      {
        crOptions,
        values: derivedValues,
        problem,
        problemReason,
        problemRetry: otherProblem === undefined && withSources?.retry === true,
        waitingFor,
        desiredFingerprint: withSources?.desiredFingerprint ?? fromSpec.desiredFingerprint,
        requeue,
        tenant,
      },
      log,
      previous?.progress ?? NO_PROGRESS,
      this.statusWrites,
      signal,
    );
  }

  /** For a kind with `dependsOn`: whether what the CR depends on is Ready. Not judged for a CR being deleted (deleting is never held back). */
  private async judgeDependencies(cr: CustomResource, target: ReconcileTarget, fromSpec: FromSpec): Promise<DependencyVerdict | undefined> {
    const port = this.opts.dependencies;
    const settings = target.dependsOn;
    if (port === undefined || settings === undefined || cr.metadata.deletionTimestamp !== undefined) return undefined;
    const namespace = cr.metadata.namespace ?? 'default';
    return port.check({ key: `${namespace}/${cr.metadata.name}`, namespace, dependencies: fromSpec.dependencies, settings });
  }

  /**
   * For a kind with `valuesFrom`: what the references hold, read now, completing the spec's
   * fingerprint (and its values, when the spec is at hand). Not read for a CR being deleted
   * (uninstalling needs no values, and a missing reference must not hold a deletion back) nor
   * while its ServiceAccount is missing (that is what the CR then says).
   */
  private async readReferences(cr: CustomResource, target: ReconcileTarget, fromSpec: FromSpec, tenant: Tenant | undefined): Promise<
    | { readonly desiredFingerprint: string; readonly values: Record<string, unknown> | undefined; readonly problem?: undefined; readonly reason?: undefined; readonly retry?: undefined }
    | { readonly desiredFingerprint: string; readonly values: undefined; readonly problem: string; readonly reason: string; readonly retry: boolean }
    | undefined
  > {
    const sources = this.opts.valuesSources;
    const settings = target.valuesFrom;
    if (sources === undefined || settings === undefined || cr.metadata.deletionTimestamp !== undefined) return undefined;
    if (await saMissing(this.opts.serviceAccounts, tenant)) return undefined;
    const namespace = cr.metadata.namespace ?? 'default';
    // Without the spec's values at hand only the digest counts (is the release current?): an
    // object the watch shows unchanged is not read again. With them, helm may need the values.
    const wantValues = fromSpec.values !== undefined;
    const read = await sources.read({ key: `${namespace}/${cr.metadata.name}`, namespace, references: fromSpec.references, settings, tenant, values: wantValues });
    if (!read.ok) return { desiredFingerprint: '', values: undefined, problem: read.problem, reason: read.reason, retry: read.retry };
    const desiredFingerprint = withReferenced(fromSpec.desiredFingerprint, read.digest);
    if (!wantValues) return { desiredFingerprint, values: undefined };
    if (read.partial === true) throw new TypeError('values were asked for, and only a digest came back');
    const merged = mergeValues(fromSpec.spec, target.overrides, this.opts.applyOverrides, read);
    // The spec alone merged, so only what the references add can fail here (too large together).
    if (!merged.ok) return { desiredFingerprint: '', values: undefined, problem: merged.problem, reason: merged.reason ?? Reasons.reconcileError, retry: false };
    return { desiredFingerprint, values: merged.values };
  }

  private desiredFingerprint(target: ReconcileTarget, uid: string, values: Record<string, unknown>): string {
    return fingerprint({
      chartDigest: target.chartDigest,
      values,
      options: {
        ownerUid: uid,
        ownerKind: target.ownerKind,
        allowClusterScoped: target.allowClusterScoped,
        allowCrossNamespace: target.allowCrossNamespace,
        // Who renders decides what `lookup` sees, so changing it re-renders every release once:
        // turning impersonation on replaces what lookups read as the operator with what the
        // tenant may read, and shows at once a tenant that lacks rights. Absent when unset, so
        // releases made before this option existed keep their fingerprint.
        ...(target.serviceAccount === undefined ? {} : { serviceAccount: target.serviceAccount }),
      },
    });
  }

  /** The CR in full (its spec), for a reconcile that started from the cache's summary. */
  private async readSpec(cr: CustomResource): Promise<CustomResource> {
    if (this.opts.specs === undefined) throw new Error('no spec reader: a CR without its spec cannot be deployed');
    return this.opts.specs.read(cr);
  }

  /** A reconcile-period annotation below the floor was raised to it: a Warning Event, once per value. */
  private warnClampedPeriod(cr: CustomResource, message: string | undefined, log: Logger): void {
    const uid = cr.metadata.uid ?? `${cr.metadata.namespace ?? ''}/${cr.metadata.name}`;
    if (message === undefined) {
      this.periodWarnings.delete(uid);
      return;
    }
    if (this.periodWarnings.get(uid) === message) return;
    if (this.periodWarnings.size >= MAX_PERIOD_WARNINGS) this.periodWarnings.clear();
    this.periodWarnings.set(uid, message);
    log.warn({ annotation: Annotations.reconcilePeriod }, 'reconcile-period annotation below the minimum; raised to it');
    this.opts.events.emit(cr, 'Warning', Reasons.reconcilePeriodRaised, message);
  }

  /**
   * The release's stored revisions, and which of them chartpilot did not write for this CR. After
   * a failed deploy, a failure to read them is part of that failure's story (remediation is then
   * skipped), not a new error.
   */
  private async observe(ctx: ActionContext, first: boolean): Promise<Observed> {
    try {
      const startup = first ? await this.opts.releases.startupRevisions?.(ctx.namespace, ctx.name) : undefined;
      const revisions = startup ?? (await this.opts.releases.revisions(ctx.namespace, ctx.name));
      const foreign = await ctx.foreignRevisions(revisions);
      return { revisions, foreign, fromStartup: startup !== undefined };
    } catch (err) {
      if (ctx.failure === undefined) throw err;
      remediationFailed(ctx, err);
      return { revisions: [], foreign: [], fromStartup: false };
    }
  }
}

const NO_STOPPED_CALLS: ReconcilerDeps['stoppedCalls'] & object = { has: () => false };

/**
 * Whether this reconcile will most likely install or upgrade: no release in the status yet, or a
 * spec its status has not caught up with. For a kind with `valuesFrom` the spec is then read at
 * once, so the references are read once, with their values, rather than first for the digest
 * alone (at a wave of 1000 installs, 1000 GETs fewer on an API server that is the bottleneck).
 */
function likelyDeploys(cr: CustomResource): boolean {
  const status = cr.status;
  return status?.deployedRelease === undefined || (cr.metadata.generation !== undefined && status.observedGeneration !== cr.metadata.generation);
}

/**
 * A kind with `valuesFrom`: the spec part's fingerprint completed by the digest of exactly the
 * referenced keys, so a change of one of them upgrades the release and nothing else does.
 */
function withReferenced(specFingerprint: string, referencedDigest: string): string {
  return createHash('sha256').update(`${specFingerprint}\n${referencedDigest}`).digest('hex').slice(0, 40);
}

/** What of a target a spec's derivation (values, fingerprint) depends on: a target that only says more (a held change) derives alike. */
const derivationKeys = new WeakMap<ReconcileTarget, string>();
function derivationKey(target: ReconcileTarget): string {
  let key = derivationKeys.get(target);
  if (key === undefined) {
    const { chartDigest, ownerKind, overrides, allowClusterScoped, allowCrossNamespace, serviceAccount, valuesFrom, dependsOn } = target;
    key = canonicalJson({ chartDigest, ownerKind, overrides, allowClusterScoped, allowCrossNamespace, serviceAccount: serviceAccount ?? null, valuesFrom: valuesFrom ?? null, dependsOn: dependsOn ?? null });
    derivationKeys.set(target, key);
  }
  return key;
}

/** What this reconcile did with the chart it was served. */
function trialOf(ctx: ActionContext): ChartTrial {
  if (ctx.deployedTarget) return { kind: 'deployed' };
  if (ctx.failure !== undefined) return { kind: 'failed', message: failureMessage(ctx.failure) };
  return { kind: 'untried' };
}

/** Bounds the memory of told warnings; forgetting them all costs one repeated Event per resource. */
const MAX_PERIOD_WARNINGS = 10_000;

interface Observed {
  readonly revisions: StoredRevision[];
  readonly foreign: StoredRevision[];
  /** From the start's snapshot of every record: a first look only (ReleaseStore.startupRevisions). */
  readonly fromStartup: boolean;
}

/** For the log of an upgrade: the fingerprint the latest revision carries and the one wanted. */
function fingerprints(input: PlanInput): { fingerprint: { latest: string | undefined; desired: string } } {
  return { fingerprint: { latest: latestRevision(input.revisions)?.fingerprint, desired: input.desiredFingerprint } };
}

/** Plans that act on the release (logged at info, with why). */
const ACTS: ReadonlySet<Plan['kind']> = new Set(['unlock', 'clear-failed-release', 'uninstall', 'rollback', 'remove-failed-install', 'install', 'upgrade']);
/** Steps that write only the CR, or nothing, never a release record. */
const LEAVES_STORAGE: ReadonlySet<Plan['kind']> = new Set(['add-finalizer']);

function hasOurFinalizer(cr: CustomResource): boolean {
  const finalizers = cr.metadata.finalizers ?? [];
  return finalizers.includes(FINALIZER) || finalizers.includes(LEGACY_FINALIZER);
}

/** Marks a non-terminal action as taken, so the plan never runs it twice in one reconcile. */
function taken(ctx: ActionContext, kind: NonTerminalKind): void {
  if (!ctx.progress.taken.includes(kind)) ctx.progress = { ...ctx.progress, taken: [...ctx.progress.taken, kind] };
}

async function run(ctx: ActionContext, next: Plan, revisions: readonly StoredRevision[]): Promise<StepResult> {
  switch (next.kind) {
    case 'none':
      return current(ctx, revisions, next.refreshStatus);
    case 'released':
      return end();
    case 'paused':
      return paused();
    case 'irreconcilable':
      return irreconcilable(ctx, next.message, next.message === ctx.derived.problem ? ctx.derived.problemReason : undefined);
    case 'conflict':
      return irreconcilable(ctx, next.message);
    case 'foreign-records':
      return foreignRecords(ctx, next.message);
    case 'chart-unavailable':
      return chartUnavailable(ctx, next.message);
    case 'waiting':
      return waiting(ctx, next.message);
    case 'no-service-account':
      return noServiceAccount(ctx);
    case 'skip-uninstall':
      return skipUninstall(ctx);
    case 'add-finalizer':
      taken(ctx, next.kind);
      return addFinalizer(ctx);
    case 'unlock':
      taken(ctx, next.kind);
      return unlock(ctx, next.revision);
    case 'wait-pending':
      return waitPending(ctx, next.revision, next.retryAfterMs);
    case 'clear-failed-release':
      taken(ctx, next.kind);
      return clearFailedRelease(ctx);
    case 'install':
    case 'upgrade':
      return deploy(ctx, next.kind);
    case 'rollback':
      taken(ctx, next.kind);
      return rollback(ctx, next.revision);
    case 'remove-failed-install':
      taken(ctx, next.kind);
      return removeFailedInstall(ctx);
    case 'fail':
      return fail(ctx, next.action);
    case 'uninstall':
      taken(ctx, next.kind);
      return uninstallDeleted(ctx);
    case 'check-objects-gone':
      taken(ctx, next.kind);
      return checkObjectsGone(ctx);
    case 'wait-objects-gone':
      return waitObjectsGone(next.remaining);
    case 'remove-finalizer':
      return removeFinalizer(ctx);
    case 'stuck':
      return stuck(next.message);
  }
}
