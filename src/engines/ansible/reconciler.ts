/**
 * One reconcile of one custom resource of an Ansible kind: observe (the CR's cached summary, its
 * run record, its dependents in the caches), plan (plan.ts, pure), and only when the plan says so
 * run the role through a per-run API proxy (confinement, identity, ownership) and record the
 * outcome in one status write. A reconcile that runs nothing costs no process and, when nothing
 * changed, no API write.
 */
import { basename, join } from 'node:path';
import type { Logger } from 'pino';
import { apiVersionOf, type AnsibleRunnable, type AnsibleSource } from '../../config/types.js';
import type { WallClock } from '../../lib/clock.js';
import { errorMessage } from '../../lib/errors.js';
import { canonicalJson, isPlainObject } from '../../lib/json.js';
import { deepMerge } from '../../lib/deep-merge.js';
import type { SplitSpec, ValuesFromSettings, ValuesReference, ValuesSources } from '../../core/values-from.js';
import type { DependencyRef, Dependencies, DependsOnSettings, SplitDependencies } from '../../core/dependencies.js';
import { leave, ReconcileFailure, type Exit, type ReconcileOutcome } from '../../core/outcome.js';
import type { Engine } from '../../core/engine.js';
import { missingServiceAccountMessage, serviceAccountMissing as saMissing, tenantOf, type Tenant } from '../../core/tenant.js';
import { DEFAULT_STALL_AFTER_FAILURES, runningMessage } from '../../core/kstatus.js';
import type { CustomResource, ObjectRef, Readiness } from '../../core/model.js';
import type { Confinement } from '../../core/confinement.js';
import type { CrWriter, EventSink, ServiceAccountLookup } from '../../core/ports.js';
import { isNotFound } from '../../kube/errors.js';
import { summarizeSpec } from '../../core/spec-summary.js';
import { readinessOf } from '../../dependents/readiness.js';
import { contentDigest } from './content-digest.js';
import type { AnsibleRuntimePaths, RunOutcome } from './runner.js';
import { AnsibleAnnotations, parseAnsibleOptions, type AnsibleCrOptions } from './cr-options.js';
import { runFingerprint } from './fingerprint.js';
import { driftOf, nextInventory, planAnsible, refKey, type AnsiblePlan, type RunRecord, type RunTrigger } from './plan.js';
import { AnsibleReasons, completionTime, recordOf, statusPatch, type StatusChange } from './status.js';
import { finalizerRunnableOf, RUN_RECORD_ANNOTATION, type AnsibleTarget } from './target.js';
import type { AnsibleRuns, DependentsView, LiveObject, RunProxy, WrittenObject } from './ports.js';

/** Operator-wide settings of runs (flags). */
export interface RunSettings {
  /** --ansible-verbosity; the CR's verbosity annotation wins. */
  readonly verbosity: number;
  readonly extraArgs: readonly string[];
  readonly rolesPath: readonly string[];
  readonly collectionsPath: readonly string[];
  readonly injectOwnerRef: boolean;
  /** Each run is killed after this long and reported (RunTimeout). */
  readonly timeoutMs: number;
  /** Artifacts go to <artifactsDir>/<namespace>/<name>, rotated to the entry's maxRunnerArtifacts. */
  readonly artifactsDir: string;
}

export interface AnsibleReconcilerDeps {
  readonly target: () => AnsibleTarget;
  readonly runs: AnsibleRuns;
  readonly proxy: RunProxy;
  /** The run's extra vars (extra-vars.ts extraVarsFor): spec as snake_case, meta vars, the entry's vars, then `extra`. */
  readonly extraVars: (cr: CustomResource, target: AnsibleTarget, extra: Readonly<Record<string, unknown>> | undefined) => Record<string, unknown>;
  /** Strings to redact from the run's messages (redactionStringsFor); default: the spec's strings. */
  readonly secrets?: ((cr: CustomResource, target: AnsibleTarget) => string[]) | undefined;
  /** Where ansible-runner and its Python are; rejects with a one-line message naming the fix. */
  readonly runtime: () => Promise<AnsibleRuntimePaths>;
  readonly settings: RunSettings;
  /** Failed runs in a row, with the same inputs, after which a CR is Stalled (kstatus.ts); default 5, 0 = never. */
  readonly stallAfterFailures?: number | undefined;
  readonly writer: CrWriter;
  readonly events: EventSink;
  readonly clock: WallClock;
  readonly dependents?: DependentsView | undefined;
  readonly serviceAccounts?: ServiceAccountLookup | undefined;
  /** Reads what a kind's `valuesFrom` references (entries without it never ask). */
  readonly valuesSources?: ValuesSources | undefined;
  /** Judges what a kind's CRs depend on (`dependsOn`; entries without it never ask). */
  readonly dependencies?: Dependencies | undefined;
  /** Told after every run (metrics). */
  readonly onRun?: (run: { readonly trigger: RunTrigger | 'finalizer'; readonly succeeded: boolean; readonly seconds: number }) => void;
}

export const AnsibleEventReasons = {
  runSuccessful: 'RunSuccessful',
  runFailed: 'RunFailed',
  finalizerFailed: 'FinalizerFailed',
  finalizerSkipped: 'FinalizerSkipped',
  invalid: 'InvalidAnnotation',
  serviceAccountNotFound: 'ServiceAccountNotFound',
} as const;

/** The status a reconcile ends with: `change` patched onto `cr`, speaking for `generation` (cr's by default). */
interface EndStatus {
  readonly cr: CustomResource;
  readonly change: StatusChange;
  readonly generation?: number | undefined;
}

interface Derived {
  readonly target: AnsibleTarget;
  readonly options: AnsibleCrOptions | undefined;
  readonly problem: string | undefined;
  /** The condition reason of `problem` when it has its own (a valuesFrom reference's); else InvalidAnnotation. */
  readonly problemReason?: string | undefined;
  /** The problem may pass with no watched change (RBAC granted later): look again at the recheck period. */
  readonly problemRetry?: boolean | undefined;
  /** A dependency is not Ready: why. */
  readonly waitingFor?: string | undefined;
  /** What the valuesFrom references gave, read this reconcile: merged around the spec for the run's vars. */
  readonly referenced?: { readonly below: Readonly<Record<string, unknown>>; readonly above: Readonly<Record<string, unknown>> } | undefined;
  readonly desiredInputs: string;
  readonly record: RunRecord | undefined;
  readonly tenant: Tenant | undefined;
  readonly confinement: Confinement;
  readonly namespace: string;
}

export class AnsibleReconciler implements Engine {
  /**
   * Per CR (uid): each dependent's content digest right after the last run, to tell someone
   * else's change from the run's own. Lost on restart: then only a deleted dependent is drift
   * until the next run (a restart must not run converged CRs).
   */
  private readonly baselines = new Map<string, Map<string, string>>();
  /** Per CR (uid), with valuesFrom: the references its spec (by digest) lists, or what is wrong with them; no values. */
  private readonly referenceLists = new Map<
    string,
    { readonly specDigest: string; readonly split: { readonly ok: true; readonly references: readonly ValuesReference[]; readonly dependencies: readonly DependencyRef[] } | { readonly ok: false; readonly reason: string; readonly problem: string } }
  >();

  constructor(private readonly deps: AnsibleReconcilerDeps) {}

  /** The CR with this uid is gone. */
  forget(uid: string): void {
    this.baselines.delete(uid);
    this.referenceLists.delete(uid);
  }

  /** The CR with this queue key left this replica: its references and dependencies are no longer watched for it. */
  forgetReferences(key: string): void {
    this.deps.valuesSources?.forget(key);
    this.deps.dependencies?.forget(key);
  }

  async reconcile(cached: CustomResource, log: Logger, signal?: AbortSignal): Promise<ReconcileOutcome> {
    let d = this.derive(cached);
    const uid = cached.metadata.uid ?? '';
    const serviceAccountMissing = await saMissing(this.deps.serviceAccounts, d.tenant);
    // Read on deletion too: the finalizer's run gets the same vars as every other run.
    if (d.problem === undefined && !serviceAccountMissing) d = await this.withReferences(cached, d);
    const observed = await this.observeDependents(uid, d);
    const finalizerName = d.target.source.finalizer?.name;
    const next = planAnsible({
      deleting: cached.metadata.deletionTimestamp !== undefined,
      finalizerName,
      hasFinalizer: finalizerName !== undefined && (cached.metadata.finalizers ?? []).includes(finalizerName),
      skipFinalizer: d.options?.skipFinalizer ?? false,
      problem: d.problem,
      serviceAccountMissing,
      waitingFor: d.waitingFor,
      desiredInputs: d.desiredInputs,
      record: d.record,
      drift: observed.drift,
      periodMs: d.options?.reconcilePeriodMs ?? d.target.runPeriodMs ?? 0,
      now: this.deps.clock.now(),
    });
    log.debug({ plan: next.kind, ...(next.kind === 'run' ? { trigger: next.trigger } : {}) }, 'planned');
    // The one exit (core/outcome.ts): the status the step ended with is written here, once.
    const exit = await this.act(cached, next, d, observed.readiness, log, signal);
    return leave(exit, async (s) => {
      await this.writeStatus(s.cr, d, s.change, s.generation);
      return {};
    });
  }

  private async act(cr: CustomResource, next: AnsiblePlan, d: Derived, readiness: Readiness | undefined, log: Logger, signal: AbortSignal | undefined): Promise<Exit<EndStatus>> {
    switch (next.kind) {
      case 'released':
        return { outcome: {} };
      case 'skip-finalizer': {
        const name = d.target.source.finalizer?.name ?? '';
        this.deps.events.emit(cr, 'Warning', AnsibleEventReasons.finalizerSkipped, `finalizer ${name} removed without running it: annotation ${AnsibleAnnotations.skipFinalizer} is "true"`);
        log.warn({ finalizer: name }, 'finalizer skipped by annotation');
        await this.deps.writer.setFinalizers(cr, (cr.metadata.finalizers ?? []).filter((f) => f !== name));
        return { outcome: {} };
      }
      case 'irreconcilable': {
        const reason = d.problemReason ?? AnsibleReasons.invalid;
        this.deps.events.emit(cr, 'Warning', d.problemReason ?? AnsibleEventReasons.invalid, next.message);
        const retry = d.problemRetry === true && d.target.recheckPeriodMs > 0 ? { requeueAfterMs: d.target.recheckPeriodMs } : {};
        return { outcome: retry, status: { cr, change: { kind: 'problem', reason, message: next.message } } };
      }
      case 'waiting':
        return { outcome: d.target.recheckPeriodMs > 0 ? { requeueAfterMs: d.target.recheckPeriodMs } : {}, status: { cr, change: { kind: 'waiting', message: next.message } } };
      case 'no-service-account': {
        const message = d.tenant === undefined ? 'no ServiceAccount configured' : missingServiceAccountMessage(d.tenant, 'ansible');
        this.deps.events.emit(cr, 'Warning', AnsibleEventReasons.serviceAccountNotFound, message);
        return {
          outcome: {},
          status: { cr, change: { kind: 'problem', reason: AnsibleReasons.serviceAccountNotFound, message } },
          failure: new ReconcileFailure(AnsibleReasons.serviceAccountNotFound, message),
        };
      }
      case 'current': {
        let current = cr;
        if (next.addFinalizer) current = await this.addFinalizer(current, d);
        return { outcome: requeue([next.nextRunInMs, d.target.recheckPeriodMs > 0 ? d.target.recheckPeriodMs : undefined]), status: { cr: current, change: { kind: 'current', readiness } } };
      }
      case 'run': {
        let current = cr;
        if (next.addFinalizer) current = await this.addFinalizer(current, d);
        log.info({ trigger: next.trigger, why: next.why }, 'ansible run needed');
        return this.runOnce(current, d, next.trigger, next.why, log, signal);
      }
      case 'run-finalizer':
        return this.runOnce(cr, d, 'finalizer', 'the resource is being deleted', log, signal);
    }
  }

  /**
   * A kind with `valuesFrom`: the CR's references (from its spec, read once per spec digest) and
   * the entry's, read now; what they hold counts in the run fingerprint, so a change of a
   * referenced key runs the role again and nothing else does.
   */
  private async withReferences(cached: CustomResource, d: Derived): Promise<Derived> {
    const settings = d.target.valuesFrom;
    const sources = this.deps.valuesSources;
    const dependsOn = d.target.dependsOn;
    const graph = this.deps.dependencies;
    const judges = dependsOn !== undefined && graph !== undefined;
    if ((settings === undefined || sources === undefined) && !judges) return d;
    const uid = cached.metadata.uid ?? '';
    const specDigest = contentDigestOf(cached);
    let known = this.referenceLists.get(uid);
    if (known?.specDigest !== specDigest) {
      const full = cached.spec !== undefined ? cached : await this.deps.writer.read(cached);
      known = { specDigest, split: splitComposition(full.spec, settings === undefined ? undefined : sources?.split.bind(sources), settings, judges ? graph.split.bind(graph) : undefined, dependsOn) };
      if (uid !== '') this.referenceLists.set(uid, known);
    }
    if (!known.split.ok) return { ...d, problem: known.split.problem, problemReason: known.split.reason };
    const namespace = d.namespace === '' ? 'default' : d.namespace;
    // Dependencies first (not while deleting: a deletion is never held back), then the references.
    if (judges && cached.metadata.deletionTimestamp === undefined) {
      const verdict = await graph.check({ key: `${namespace}/${cached.metadata.name}`, namespace, dependencies: known.split.dependencies, settings: dependsOn });
      if (verdict.kind === 'waiting') return { ...d, waitingFor: verdict.message };
      if (verdict.kind === 'problem') return { ...d, problem: verdict.message, problemReason: verdict.reason };
    }
    if (settings === undefined || sources === undefined) return d;
    const read = await sources.read({ key: `${namespace}/${cached.metadata.name}`, namespace, references: known.split.references, settings, tenant: d.tenant });
    if (!read.ok) return { ...d, problem: read.problem, problemReason: read.reason, problemRetry: read.retry };
    return { ...this.derive(cached, read.digest), referenced: read };
  }

  /** The CR as the run sees it: without the valuesFrom and dependsOn fields, its spec merged between what the references gave. */
  private withReferencedValues(full: CustomResource, d: Derived): CustomResource {
    const { valuesFrom, dependsOn } = d.target;
    if (valuesFrom === undefined && dependsOn === undefined) return full;
    let spec: unknown = full.spec;
    if (valuesFrom !== undefined && this.deps.valuesSources !== undefined) {
      const split = this.deps.valuesSources.split(spec, valuesFrom);
      spec = split.ok ? split.spec : spec;
    }
    if (dependsOn !== undefined && this.deps.dependencies !== undefined) {
      const split = this.deps.dependencies.split(spec, dependsOn);
      spec = split.ok ? split.spec : spec;
    }
    const plain = isPlainObject(spec) ? spec : {};
    return { ...full, spec: d.referenced === undefined ? plain : deepMerge(deepMerge(d.referenced.below, plain), d.referenced.above) };
  }

  private derive(cr: CustomResource, referenced?: string): Derived {
    const target = this.deps.target();
    const parsed = parseAnsibleOptions(cr.metadata.annotations);
    const namespace = cr.metadata.namespace ?? '';
    const specDigest = contentDigestOf(cr);
    const desiredInputs = runFingerprint({
      specDigest,
      annotations: target.source.watchAnnotationsChanges ? (cr.metadata.annotations ?? {}) : undefined,
      kind: target.inputs,
      referenced,
    });
    const tenantNamespace = namespace === '' ? 'default' : namespace;
    return {
      target,
      options: parsed.ok ? parsed.options : undefined,
      problem: parsed.ok ? undefined : parsed.problems.join('; '),
      desiredInputs,
      record: this.recordOn(cr, target),
      tenant: tenantOf(target, tenantNamespace),
      confinement: { namespace: tenantNamespace, allowClusterScoped: target.allowClusterScoped, allowCrossNamespace: target.allowCrossNamespace },
      namespace,
    };
  }

  private recordOn(cr: CustomResource, target: AnsibleTarget): RunRecord | undefined {
    if (target.bookkeeping === 'status') return recordOf(cr.status?.['chartpilot']);
    const raw = cr.metadata.annotations?.[RUN_RECORD_ANNOTATION];
    if (raw === undefined) return undefined;
    try {
      return recordOf(JSON.parse(raw));
    } catch {
      return undefined;
    }
  }

  /**
   * Readiness and drift of the recorded dependents, from the caches; what looks like drift there is
   * confirmed with a fresh read (caches lag behind the run that just wrote). Without a baseline
   * (after a restart) the cache's view becomes it: only a deleted dependent is drift then.
   */
  private async observeDependents(uid: string, d: Derived): Promise<{ drift: string[]; readiness: Readiness | undefined }> {
    const view = this.deps.dependents;
    const inventory = watchedDependents(d.record?.inventory ?? [], d.target.source);
    if (view === undefined || !d.target.watchDependentResources) return { drift: [], readiness: undefined };
    if (inventory.length === 0) return { drift: [], readiness: d.record === undefined ? undefined : readinessOf([]) };
    const cached = await view.cached(inventory, d.confinement, uid);
    if (cached === undefined) return { drift: [], readiness: undefined };
    let objects = cached;
    const baseline = this.baselines.get(uid);
    let drift = driftOf(digests(objects), baseline);
    if (drift.length > 0) {
      objects = await view.fresh(inventory, d.confinement);
      drift = driftOf(digests(objects), baseline);
    }
    if (baseline === undefined && uid !== '') this.baselines.set(uid, baselineOf(objects));
    return { drift, readiness: readinessOf(objects.map((o) => ({ ...o.ref, live: o.live }))) };
  }

  private async addFinalizer(cr: CustomResource, d: Derived): Promise<CustomResource> {
    const name = d.target.source.finalizer?.name;
    if (name === undefined) return cr;
    return this.deps.writer.setFinalizers(cr, [...(cr.metadata.finalizers ?? []), name]);
  }

  /**
   * Writes the status keys chartpilot owns, only when they change; kinds without status keep only
   * the record. `generation`: the one the status speaks for (observedGeneration), `cr`'s unless a
   * run saw an older one.
   */
  private async writeStatus(cr: CustomResource, d: Derived, change: StatusChange, generation = cr.metadata.generation): Promise<void> {
    const stallAfter = this.deps.stallAfterFailures ?? DEFAULT_STALL_AFTER_FAILURES;
    const now = new Date(this.deps.clock.now()).toISOString().replace(/\.\d{3}Z$/u, 'Z');
    if (d.target.bookkeeping === 'annotation') {
      const record = change.kind === 'ran' ? change.record : undefined;
      if (record === undefined) return;
      const text = canonicalJson(record);
      if (cr.metadata.annotations?.[RUN_RECORD_ANNOTATION] !== text) await this.deps.writer.patchAnnotations(cr, { [RUN_RECORD_ANNOTATION]: text });
      return;
    }
    const patch = statusPatch(cr.status, change, {
      manageStatus: d.target.source.manageStatus,
      generation,
      now,
      watchDependents: d.target.watchDependentResources,
      inputs: d.desiredInputs,
      stallAfter,
    });
    if (patch !== undefined) await this.deps.writer.patchStatus(cr, patch);
  }

  /**
   * Runs the role (or the finalizer) once, Reconciling telling why (written before the run, the
   * one write not left to the exit), and returns the status recording the outcome.
   */
  private async runOnce(cr: CustomResource, d: Derived, trigger: RunTrigger | 'finalizer', why: string, log: Logger, signal: AbortSignal | undefined): Promise<Exit<EndStatus>> {
    const { target } = d;
    const deleting = trigger === 'finalizer';
    const uid = cr.metadata.uid ?? '';
    const full = await this.deps.writer.read(cr);
    // What the role is given: with valuesFrom, the spec merged with what the references hold.
    const asRun = this.withReferencedValues(full, d);
    const runnable: AnsibleRunnable = deleting ? (target.finalizerRunnable ?? finalizerRunnableOf(target.source) ?? target.source) : target.source;
    const what = runnable.role !== undefined ? `role ${basename(runnable.role)}` : `playbook ${basename(runnable.playbook ?? '')}`;
    const running = runningMessage(deleting ? 'finalizer' : 'run', `${what} for ${cr.metadata.name}`, this.deps.settings.timeoutMs);
    await this.writeStatus(full, d, { kind: 'running', message: `${running}: ${why}` });
    const extra = deleting ? target.source.finalizer?.vars : undefined;
    const started = this.deps.clock.now();
    let outcome: RunOutcome;
    let written: readonly WrittenObject[] = [];
    try {
      const runtime = await this.deps.runtime();
      const access = this.deps.proxy.openSession({
        owner: { apiVersion: apiVersionOf(target.gvk), kind: target.gvk.kind, name: cr.metadata.name, namespace: d.namespace, uid },
        confinement: d.confinement,
        ...(d.tenant === undefined ? {} : { impersonate: d.tenant.user }),
        injectOwnerRef: this.deps.settings.injectOwnerRef,
        log,
      });
      try {
        const s = this.deps.settings;
        outcome = await this.deps.runs.run({
          runtime,
          runnable: { ...(runnable.role === undefined ? {} : { role: runnable.role }), ...(runnable.playbook === undefined ? {} : { playbook: runnable.playbook }) },
          extraVars: this.deps.extraVars(asRun, target, extra),
          kubeconfig: access.kubeconfig,
          verbosity: d.options?.verbosity ?? s.verbosity,
          extraArgs: s.extraArgs,
          rolesPath: s.rolesPath,
          collectionsPath: s.collectionsPath,
          artifactsDir: join(s.artifactsDir, d.namespace === '' ? '_cluster' : d.namespace, cr.metadata.name),
          maxArtifacts: target.source.maxRunnerArtifacts,
          timeoutMs: s.timeoutMs,
          ...(signal === undefined ? {} : { signal }),
          secrets: this.deps.secrets?.(asRun, target) ?? secretsOf(asRun.spec),
          onEvent: (e) => {
            if (e.event === 'runner_on_failed') log.debug({ event: e.event }, 'task failed');
          },
        });
        written = access.objects();
      } finally {
        access.close();
      }
    } catch (err) {
      // The runtime is missing, or the run could not be set up: said on the CR, retried with backoff.
      outcome = {
        result: 'error',
        stats: { ok: 0, changed: 0, skipped: 0, failures: 0 },
        failedTasks: [],
        requeueAfterMs: undefined,
        statusWrittenByRole: false,
        message: errorMessage(err),
        durationMs: this.deps.clock.now() - started,
      };
    }
    const succeeded = outcome.result === 'successful';
    const seconds = outcome.durationMs / 1000;
    this.deps.onRun?.({ trigger, succeeded, seconds });
    log.info(
      { trigger, result: outcome.result, ok: outcome.stats.ok, changed: outcome.stats.changed, failures: outcome.stats.failures, durationMs: Math.round(outcome.durationMs), ...(outcome.cpuMs === undefined ? {} : { cpuMs: Math.round(outcome.cpuMs) }) },
      'ansible run finished',
    );

    // The CR as it is now: the role may have written its status (k8s_status) or been deleted meanwhile.
    const after = await this.deps.writer.read(cr).catch((err: unknown) => {
      if (isNotFound(err)) return undefined;
      throw err;
    });
    if (after === undefined) return { outcome: {} };
    const now = this.deps.clock.now();
    const inventory = nextInventory(d.record?.inventory ?? [], written);
    let readiness: Readiness | undefined;
    if (succeeded && d.target.watchDependentResources && this.deps.dependents !== undefined) {
      // The baseline is what the run left, read fresh: caches may not show the run's writes yet.
      const fresh = await this.deps.dependents.fresh(watchedDependents(inventory, target.source), d.confinement);
      if (uid !== '') this.baselines.set(uid, baselineOf(fresh));
      readiness = readinessOf(fresh.map((o) => ({ ...o.ref, live: o.live })));
    }
    const runAgainAt = succeeded && outcome.requeueAfterMs !== undefined ? new Date(now + outcome.requeueAfterMs).toISOString() : undefined;
    // Only a success records its inputs; a failure keeps the old ones (so it runs again), and the
    // objects it made join the inventory (a later run that finds them unchanged writes nothing).
    const record: RunRecord = succeeded
      ? { inputs: d.desiredInputs, ranAt: new Date(now).toISOString(), ...(runAgainAt === undefined ? {} : { runAgainAt }), inventory }
      : { inputs: d.record?.inputs ?? '', ranAt: d.record?.ranAt ?? '', ...(d.record?.runAgainAt === undefined ? {} : { runAgainAt: d.record.runAgainAt }), inventory };
    const reason = succeeded ? AnsibleReasons.successful : failureReason(outcome);
    const message = succeeded ? '' : failureMessage(outcome, this.deps.settings.timeoutMs);
    const result = { ...outcome.stats, completion: completionTime(now) };
    // Patched onto the CR as it is now, but for the generation the run ran with: a spec changed
    // during the run is not done yet (its run follows), and observedGeneration must not say so.
    // A finalizer that ran lets the CR go: nothing to record.
    const status: EndStatus | undefined =
      deleting && succeeded ? undefined : { cr: after, change: { kind: 'ran', succeeded, reason, message, result, record, readiness }, generation: full.metadata.generation };

    if (outcome.result === 'canceled') {
      // The operator is stopping: nothing to retry here; the next start runs it again (nothing was recorded).
      log.info('the run was stopped with the operator; it runs again at the next start');
      return { outcome: {}, status };
    }
    if (!succeeded) {
      const eventReason = deleting ? AnsibleEventReasons.finalizerFailed : AnsibleEventReasons.runFailed;
      const text = deleting
        ? `${message}; the finalizer ${target.source.finalizer?.name ?? ''} stays until a run succeeds (fix the role, or annotate ${AnsibleAnnotations.skipFinalizer}="true" to let the resource go without it)`
        : message;
      this.deps.events.emit(after, 'Warning', eventReason, text);
      return { outcome: {}, status, failure: new ReconcileFailure(reason, text) };
    }
    if (deleting) {
      const name = target.source.finalizer?.name ?? '';
      await this.deps.writer.setFinalizers(after, (after.metadata.finalizers ?? []).filter((f) => f !== name));
      this.forget(uid);
      return { outcome: {} };
    }
    this.deps.events.emit(after, 'Normal', AnsibleEventReasons.runSuccessful, `ran ${describeRunnable(target.source)} (${trigger}): ok=${outcome.stats.ok} changed=${outcome.stats.changed} skipped=${outcome.stats.skipped}`);
    const periodMs = d.options?.reconcilePeriodMs ?? target.runPeriodMs;
    return { status, outcome: requeue([outcome.requeueAfterMs, periodMs !== undefined && periodMs > 0 ? periodMs : undefined, target.recheckPeriodMs > 0 ? target.recheckPeriodMs : undefined]) };
  }
}

function digests(objects: readonly LiveObject[]): { ref: ObjectRef; content: string | undefined }[] {
  return objects.map((o) => ({ ref: o.ref, content: o.live === undefined ? undefined : contentDigest(o.live) }));
}

function baselineOf(objects: readonly LiveObject[]): Map<string, string> {
  const m = new Map<string, string>();
  for (const o of objects) if (o.live !== undefined) m.set(refKey(o.ref), contentDigest(o.live));
  return m;
}

function requeue(delays: readonly (number | undefined)[]): ReconcileOutcome {
  const set = delays.filter((n): n is number => n !== undefined && n >= 0);
  return set.length === 0 ? {} : { requeueAfterMs: Math.max(1, Math.min(...set)) };
}

/** A refusal by the proxy or RBAC reads as HTTP 403 / Forbidden in the task's error. */
const FORBIDDEN = /\bforbidden\b|\b403\b/iu;

export function failureReason(outcome: RunOutcome): string {
  switch (outcome.result) {
    case 'timeout':
      return AnsibleReasons.timeout;
    case 'error':
      return AnsibleReasons.runError;
    case 'canceled':
      return AnsibleReasons.interrupted;
    default:
      return outcome.failedTasks.some((t) => FORBIDDEN.test(t.message)) || FORBIDDEN.test(outcome.message) ? AnsibleReasons.forbidden : AnsibleReasons.failed;
  }
}

function failureMessage(outcome: RunOutcome, timeoutMs: number): string {
  switch (outcome.result) {
    case 'timeout':
      return `the run did not end within ${Math.round(timeoutMs / 1000)}s (--ansible-run-timeout) and was killed; ${outcome.message}`.replace(/; $/u, '');
    case 'canceled':
      return 'the operator stopped during the run; it runs again when the operator is back';
    default:
      return outcome.message !== '' ? outcome.message : outcome.failedTasks.map((t) => `${t.task}: ${t.message}`).join('\n');
  }
}

function describeRunnable(r: AnsibleRunnable): string {
  return r.role !== undefined ? `role ${r.role}` : `playbook ${r.playbook ?? ''}`;
}

/** Every string of the spec worth redacting from messages (as the helm path redacts values). */
export function secretsOf(spec: unknown): string[] {
  const out = new Set<string>();
  const stack: unknown[] = [spec];
  let budget = 10_000;
  while (stack.length > 0 && budget-- > 0) {
    const v = stack.pop();
    if (typeof v === 'string') {
      if (v.length >= 4) out.add(v);
    } else if (Array.isArray(v)) stack.push(...(v as unknown[]));
    else if (typeof v === 'object' && v !== null) stack.push(...Object.values(v as Record<string, unknown>));
  }
  return [...out];
}

/**
 * What the CR asks for: its spec (from the cache's summary, no read needed) and, for a kind
 * without a spec such as a core Secret, its other top-level fields (`data`, `stringData`, …).
 */
export function contentDigestOf(cr: CustomResource): string {
  const { metadata: _m, status: _s, spec, specSummary, apiVersion: _a, kind: _k, ...rest } = cr as CustomResource & Record<string, unknown>;
  const specDigest = specSummary?.digest ?? summarizeSpec(spec).digest;
  return Object.keys(rest).length === 0 ? specDigest : summarizeSpec({ spec: specDigest, rest }).digest;
}

/**
 * The dependents whose drift and readiness are watched: ansible-operator's `blacklist` kinds never
 * are, and cluster-scoped ones only with `watchClusterScopedResources`.
 */
export function watchedDependents(refs: readonly ObjectRef[], source: Pick<AnsibleSource, 'blacklist' | 'watchClusterScopedResources'>): ObjectRef[] {
  return refs.filter((r) => {
    if (r.namespace === undefined && !source.watchClusterScopedResources) return false;
    const slash = r.apiVersion.lastIndexOf('/');
    const group = slash < 0 ? '' : r.apiVersion.slice(0, slash);
    const version = r.apiVersion.slice(slash + 1);
    return !source.blacklist.some((b) => b.kind === r.kind && b.group === group && (b.version === '' || b.version === version));
  });
}

/** The spec's references and dependencies (names only), or what is wrong with either field. */
function splitComposition(
  spec: unknown,
  splitValues: ((spec: unknown, settings: ValuesFromSettings) => SplitSpec) | undefined,
  valuesFrom: ValuesFromSettings | undefined,
  splitDependencies: ((spec: unknown, settings: DependsOnSettings) => SplitDependencies) | undefined,
  dependsOn: DependsOnSettings | undefined,
): { readonly ok: true; readonly references: readonly ValuesReference[]; readonly dependencies: readonly DependencyRef[] } | { readonly ok: false; readonly reason: string; readonly problem: string } {
  let rest = spec;
  let references: readonly ValuesReference[] = [];
  if (splitValues !== undefined && valuesFrom !== undefined) {
    const split = splitValues(rest, valuesFrom);
    if (!split.ok) return split;
    rest = split.spec;
    references = split.references;
  }
  let dependencies: readonly DependencyRef[] = [];
  if (splitDependencies !== undefined && dependsOn !== undefined) {
    const split = splitDependencies(rest, dependsOn);
    if (!split.ok) return split;
    dependencies = split.dependencies;
  }
  return { ok: true, references, dependencies };
}
