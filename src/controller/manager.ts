/**
 * Turns validated watches entries into running controllers: resolves each kind's API resource,
 * computes its chart digest, and wires reconciler, informers and queue together.
 */
import type { RecordKeys } from '../helm/record-mac.js';
import type { Logger } from 'pino';
import { applyOverrides } from '../config/overrides.js';
import { apiVersionOf, gvkKey, isAnsibleEntry, type AnsibleSource, type WatchEntry } from '../config/types.js';
import { createReleaseStore } from '../helm/storage.js';
import { RecordVerdicts } from '../helm/record-verdicts.js';
import { StartupRecords } from '../helm/startup-records.js';
import type { HelmClient } from '../helm/types.js';
import type { KubeClient } from '../kube/rest.js';
import type { ApiResource, KubeObject } from '../kube/types.js';
import type { EventSink } from '../core/ports.js';
import { FINALIZERS } from '../engines/helm/names.js';
import { Reconciler } from '../engines/helm/reconciler.js';
import type { ServerTimes } from '../core/ports.js';
import type { ReconcileTarget } from '../engines/helm/target.js';
import { canonicalJson } from '../lib/json.js';
import { ScopeMap } from '../dependents/scopes.js';
import type { DependentSelection, SwapDelays } from '../dependents/selection.js';
import { DependentWatcher, type DependentCacheStats } from '../dependents/watcher.js';
import { chartDigest } from '../config/chart-digest.js';
import { statusProgram } from '../config/status-expressions.js';
import { ChartSnapshots, type ChartSnapshot } from '../config/chart-snapshots.js';
import { Reasons } from '../engines/helm/names.js';
import { chartSummary } from '../engines/helm/chart-summary.js';
import type { CustomResource } from '../core/model.js';
import { chooseCanary, gone, heldEventMessage, initialRollout, offer, report, serve, type RolloutState, type Transition } from './chart-rollout.js';
import { systemWallClock, type Clock } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { createCrWriter } from '../kube/cr-writer.js';
import { createSpecReader } from './cr-reader.js';
import { CrController, keyOf, type CrControllerOptions, type ShardHooks } from './cr-controller.js';
import { ReleaseKeeper } from '../dependents/release-keeper.js';
import { ReferencedObjects } from './referenced-values.js';
import { DependencyGraph } from './dependency-graph.js';
import { ServiceAccountCache } from './service-accounts.js';
import type { WorkQueueMetrics } from '../lib/work-queue.js';
import { ChartTracker } from './chart-tracker.js';
import { limitConcurrentCalls } from '../helm/limited-actions.js';
import { StoppedCalls } from '../helm/stopped-calls.js';
import type { ChartState } from '../registry/refresh-plan.js';
import type { ChartResolver } from '../registry/resolver.js';
import { AnsibleReconciler, type AnsibleReconcilerDeps, type RunSettings } from '../engines/ansible/reconciler.js';
import type { AnsibleRuns, RunProxy } from '../engines/ansible/ports.js';
import type { AnsibleRuntimePaths } from '../engines/ansible/runner.js';
import { createDependentsView } from '../engines/ansible/dependents-view.js';
import type { RunTrigger } from '../engines/ansible/plan.js';
import { finalizerRunnableOf, finalizersOf, type AnsibleTarget } from '../engines/ansible/target.js';
import { getDiscoveryDocument } from '../kube/objects.js';
import { groupVersionPath } from '../kube/resource.js';

export interface ManagerOptions {
  readonly client: KubeClient;
  /** The per-CR record keys (from the master key, helm/seal-key.ts): which release records chartpilot wrote for which CR. */
  readonly recordKeys: RecordKeys;
  readonly helm: HelmClient;
  readonly events: EventSink;
  readonly log: Logger;
  readonly watchNamespaces: readonly string[];
  /** Where the operator runs: the watches entries' own valuesFrom references are read there. */
  readonly operatorNamespace: string;
  readonly defaultReconcilePeriodMs: number;
  readonly defaultConcurrency: number;
  readonly helmTimeoutMs: number;
  readonly historyMax: number;
  /** `--default-service-account`: what entries without `serviceAccount` run as; undefined = the operator. */
  readonly defaultServiceAccount?: string | undefined;
  /** The API server's clocks when this process started (plan.ts's lock rule reads only these). */
  readonly server: ServerTimes;
  /** operator-sdk's --suppress-override-values: no OverrideValuesInUse Warning events. */
  readonly suppressOverrideValues?: boolean;
  /** --stall-after-failures (both engines); default 5, 0 = never. */
  readonly stallAfterFailures?: number | undefined;
  readonly queueMetrics?: (controller: string) => WorkQueueMetrics;
  readonly onReconciled?: (controller: string, result: 'success' | 'error' | 'requeue_after', durationMs: number) => void;
  /** A CR of a watched kind appeared, changed (`present` again) or went (per-CR metrics); `resource` says which kind. */
  readonly onResource?: (resource: ApiResource, change: 'present' | 'gone', obj: KubeObject) => void;
  /** A drift repair of one of a CR's objects (per-CR metrics); `resource` says which kind the CR is. */
  readonly onDriftRepaired?: (resource: ApiResource, cr: { readonly metadata: { readonly namespace?: string; readonly name: string } }, objectKind: string) => void;
  /** Charts from registries: how they are resolved and pulled, and how often by default. */
  readonly charts?: { readonly resolver: Pick<ChartResolver, 'resolve' | 'cached'>; readonly defaultRefreshIntervalMs: number; readonly clock?: Clock };
  /** Where the private copies of local charts helm is given are made (chart-snapshots.ts); the system's temporary directory by default. */
  readonly chartCopiesDir?: string;
  /** Builds each kind's controller; a plain CrController unless a test substitutes one. */
  readonly createController?: (opts: CrControllerOptions) => CrController;
  /** See ReconcilerDeps.statusPaceMs; default STATUS_PACE_MS. */
  readonly statusPaceMs?: number;
  /** Labels every install and upgrade with a call id and remembers the calls a stop stopped; a new one unless given. */
  readonly stoppedCalls?: StoppedCalls;
  /**
   * What Ansible kinds run with, or how to start it when the first Ansible kind is added (hot
   * reload may add one to an operator that had none); without it an Ansible entry cannot be added.
   */
  readonly ansible?: AnsibleEngine | (() => Promise<AnsibleEngine>);
  /**
   * `--shards`: every kind's informers hold only the CRs labelled for this replica (`selector`,
   * added to the entry's own), and hand CRs back as `hooks` say; the dependent watches hold only
   * the objects of the uid buckets `dependents.selection` names (changed by selectDependents).
   */
  readonly shard?: {
    readonly selector: string;
    readonly hooks: (resource: ApiResource) => ShardHooks;
    readonly dependents: { readonly selection: DependentSelection; readonly swapDelays: SwapDelays };
  };
}

/** The edges of the Ansible engine and the operator-wide settings of its runs. */
export interface AnsibleEngine {
  readonly runs: AnsibleRuns;
  readonly proxy: RunProxy;
  readonly extraVars: AnsibleReconcilerDeps['extraVars'];
  readonly secrets?: AnsibleReconcilerDeps['secrets'];
  readonly runtime: () => Promise<AnsibleRuntimePaths>;
  readonly settings: RunSettings;
  /** Content digest of a role directory or a playbook (role-digest.ts). */
  readonly digest: (runnable: { readonly role?: string | undefined; readonly playbook?: string | undefined }) => Promise<string>;
  /** After every run (metrics): `gvk` as ansible-operator labels it. */
  readonly onRun?: (gvk: string, run: { readonly trigger: RunTrigger | 'finalizer'; readonly succeeded: boolean; readonly seconds: number }) => void;
}

/**
 * A running controller. `current` is mutated in place on reload: the reconciler reads the target
 * through a closure over this very object.
 */
interface Running {
  readonly controller: CrController;
  readonly current: Current;
  /** What the kind is served as (the dependency graph watches it when others depend on its CRs). */
  readonly resource: ApiResource;
  /** For a chart from a registry: what keeps it resolved (replaced when the entry's reference changes). */
  tracker: ChartTracker | undefined;
}

interface Current {
  entry: WatchEntry;
  /** What the entry resolves to now (for a chart kind: with the chart as it is on disk or in the registry). */
  target: ReconcileTarget | AnsibleTarget;
  /** A chart kind: which chart each CR is served, the last good one until a changed one proved itself on one CR. */
  rollout?: RolloutState;
}

export function ownerKindOf(entry: WatchEntry): string {
  return entry.group === '' ? entry.kind : `${entry.kind}.${entry.group}`;
}

/** The target of `entry`; a chart from a registry is what `chart` (its tracker's state) says. */
export async function targetFor(entry: WatchEntry, defaultPeriodMs: number, defaultServiceAccount?: string, chart?: ChartState, local?: ChartSnapshot): Promise<ReconcileTarget> {
  const source =
    entry.remote === undefined && local !== undefined
      ? { chartPath: local.path, chartDigest: local.digest }
      : entry.remote === undefined || chart === undefined
      ? { chartPath: entry.chartPath, chartDigest: await chartDigest(entry.chartPath) }
      : chart.kind === 'ready'
        ? { chartPath: chart.chart.path, chartDigest: chart.chart.digest }
        : { chartPath: '', chartDigest: '', chartUnavailable: { reason: chart.reason, message: chart.message } };
  return {
    ownerKind: ownerKindOf(entry),
    ...source,
    overrides: entry.overrideValues,
    reconcilePeriodMs: entry.reconcilePeriodMs ?? defaultPeriodMs,
    watchDependentResources: entry.watchDependentResources,
    allowClusterScoped: entry.allowClusterScoped,
    allowCrossNamespace: entry.allowCrossNamespace,
    serviceAccount: entry.serviceAccount ?? defaultServiceAccount,
    ...(entry.driftDetection === undefined ? {} : { driftDetection: entry.driftDetection }),
    ...(entry.valuesFrom === undefined ? {} : { valuesFrom: entry.valuesFrom }),
    ...(entry.dependsOn === undefined ? {} : { dependsOn: entry.dependsOn }),
    ...(entry.status === undefined ? {} : { status: statusProgram(entry.status) }),
  };
}

/**
 * A rollout's progress ("0/2 replicas updated", then "… available") is written to a CR at most
 * this often: each retelling is an API write, and a wave of installs would make several per CR.
 * Ready turning True, a failure or a new revision is written at once.
 */
export const STATUS_PACE_MS = 5_000;

/** Workers per helm slot: enough that one waits at the slot while another finishes around its call. */
const WORKERS_PER_HELM_SLOT = 2;

export class Manager {
  private readonly running = new Map<string, Running>();
  private readonly releases;
  /** One watcher of every kind any release has, shared by all controllers. */
  private readonly dependents: DependentWatcher;
  private readonly keeper: ReleaseKeeper;
  /** Which ServiceAccounts exist: watched only once a kind runs as one. */
  private readonly serviceAccounts: ServiceAccountCache;
  /** Secrets and ConfigMaps that kinds with valuesFrom read values from: watched once one is referenced. */
  private readonly referenced: ReferencedObjects;
  /** What CRs depend on (dependsOn), across the served kinds. */
  private readonly graph: DependencyGraph;

  private readonly statusPaceMs: number;
  private readonly stoppedCalls: StoppedCalls;
  /** What helm is given of local charts: a copy per content, so the last good one can still be served. */
  private readonly snapshots: ChartSnapshots;
  /** The rollouts of kinds a reload is restarting (remove, then add): a restart must not skip a held chart's check. */
  private readonly restarting = new Map<string, RolloutState>();

  constructor(private readonly opts: ManagerOptions) {
    this.statusPaceMs = opts.statusPaceMs ?? STATUS_PACE_MS;
    this.stoppedCalls = opts.stoppedCalls ?? new StoppedCalls();
    this.snapshots = new ChartSnapshots(opts.chartCopiesDir);
    const origins = new RecordVerdicts(opts.client, { keys: opts.recordKeys });
    // The first look at each CR after a start or takeover reads the records of one LIST of them all.
    const startup = new StartupRecords({ client: opts.client, namespaces: opts.watchNamespaces, log: opts.log.child({ controller: 'releases' }) });
    this.releases = createReleaseStore(opts.client, origins, startup);
    const log = opts.log.child({ controller: 'dependents' });
    const lookAgain = (ownerUid: string, paced: boolean): void => {
      // Only owners in this replica's CR caches: with --shards, an object another replica's
      // owner has (a forged bucket label puts it anywhere) names no CR here, and nothing runs.
      for (const r of this.running.values()) {
        const key = r.controller.keyForUid(ownerUid);
        if (key === undefined) continue;
        if (paced) r.controller.enqueueAfter(key, this.statusPaceMs, { respectBackoff: true });
        else r.controller.enqueue(key, { respectBackoff: true });
      }
    };
    this.dependents = new DependentWatcher({
      client: opts.client,
      namespaces: opts.watchNamespaces,
      log,
      // A dependent changed (spec, status or existence): its owner re-checks drift and readiness;
      // our own apply/rollback changes dependents too, so a hint never bypasses a retry backoff.
      // Progress that leaves the object's verdict as it was is told at the status pace anyway:
      // one look after that long covers every such update meanwhile.
      onChange: (ownerUid, change) => {
        lookAgain(ownerUid, !change.verdictChanged);
      },
      ...(opts.shard === undefined
        ? {}
        : {
            selection: opts.shard.dependents.selection,
            swapDelays: opts.shard.dependents.swapDelays,
            // A pass that found its objects not watched yet (its CR just moved here) runs again now.
            onCovered: (ownerUid: string) => {
              lookAgain(ownerUid, false);
            },
          }),
    });
    this.keeper = new ReleaseKeeper({
      client: opts.client,
      watcher: this.dependents,
      // With shards an object's bucket label decides whose caches hold it: repair passes set it right.
      fixBucketLabels: opts.shard !== undefined,
      scopes: new ScopeMap({ client: opts.client, log }),
      log,
      readManifest: (at) => origins.ownManifest(at),
      // The release's objects as the caches hold them now are what this reconcile judges: the
      // hints their earlier events queued (helm's own creates, a rollout's progress) are covered.
      onReading: (namespace, release) => {
        for (const r of this.running.values()) r.controller.hintsCovered(`${namespace}/${release}`);
      },
    });
    this.referenced = new ReferencedObjects({
      client: opts.client,
      namespaces: opts.watchNamespaces,
      operatorNamespace: opts.operatorNamespace,
      log: opts.log.child({ controller: 'references' }),
    });
    this.graph = new DependencyGraph({
      client: opts.client,
      namespaces: opts.watchNamespaces,
      log: opts.log.child({ controller: 'dependencies' }),
      served: () => [...this.running.values()].map((r) => ({ kind: { group: r.current.entry.group, version: r.current.entry.version, kind: r.current.entry.kind }, resource: r.resource })),
    });
    this.serviceAccounts = new ServiceAccountCache({
      client: opts.client,
      namespaces: opts.watchNamespaces,
      log: opts.log.child({ controller: 'serviceaccounts' }),
      // Created: its CRs recover now; deleted: they say so now (not at their next period).
      onChange: (namespace, name) => {
        for (const r of this.running.values()) if (r.current.target.serviceAccount === name) r.controller.enqueueNamespace(namespace);
      },
    });
  }

  /** Starts a controller for `entry` (its resource already resolved); the engine is the entry's (chart or Ansible). */
  async add(entry: WatchEntry, resource: ApiResource): Promise<void> {
    if (isAnsibleEntry(entry)) return this.addAnsible(entry, resource);
    const { opts } = this;
    const key = gvkKey(entry);
    const name = entry.kind.toLowerCase();
    const log = opts.log.child({ controller: name });
    const tracker = await this.track(key, entry, log);
    const target = await this.chartTarget(entry, tracker?.state);
    const before = this.restarting.get(key);
    this.restarting.delete(key);
    const current: Current = { entry, target, rollout: before === undefined ? initialRollout(target) : offer(before, target, chartName(entry, tracker?.state)).state };
    await this.pruneCopies(current);
    // --max-concurrent-reconciles bounds what costs: helm processes. Reconciles around them (the
    // LIST and finalizer before, the status after a call) overlap with other CRs' helm calls, so
    // the next call starts the moment one ends, as with bare helm at that concurrency.
    const helmSlots = entry.maxConcurrentReconciles ?? opts.defaultConcurrency;
    const helm = limitConcurrentCalls(this.stoppedCalls.track(opts.helm), helmSlots);
    const reconciler = new Reconciler({
      helm,
      releases: this.releases,
      // The controller is made below; a write only happens once it runs.
      writer: createCrWriter(opts.client, resource, (from, written) => {
        controller.noteOwnWrite(from, written);
      }),
      events: opts.events,
      clock: systemWallClock,
      applyOverrides,
      suppressOverrideValues: opts.suppressOverrideValues,
      stallAfterFailures: opts.stallAfterFailures,
      helmTimeoutMs: opts.helmTimeoutMs,
      server: opts.server,
      stoppedCalls: this.stoppedCalls,
      historyMax: opts.historyMax,
      target: (cr) => this.serveChart(current, cr),
      onChartTrial: (cr, served, trial) => {
        if (current.rollout === undefined) return;
        this.applyRollout(running, report(current.rollout, keyOf(cr), served, trial), cr);
      },
      keeper: this.keeper,
      onDriftRepaired: (cr, objectKind) => opts.onDriftRepaired?.(resource, cr, objectKind),
      serviceAccounts: this.serviceAccounts,
      statusPaceMs: this.statusPaceMs,
      // The cache keeps no specs; a reconcile reads one when it must derive values from it.
      specs: createSpecReader(opts.client, resource),
      // A referenced object changed: its CRs look again (a retry's backoff still holds).
      valuesSources: this.referenced.forKind(key, (crKey) => {
        controller.enqueue(crKey, { respectBackoff: true });
      }),
      // A dependency changed (Ready, gone, a new edge that may close a cycle): its dependents look again.
      dependencies: this.graph.forKind(ownerKindOf(entry), (crKey) => {
        controller.enqueue(crKey, { respectBackoff: true });
      }),
    });
    const createController = opts.createController ?? ((o: CrControllerOptions) => new CrController(o));
    const controller = createController({
      name,
      resource,
      client: opts.client,
      namespaces: opts.watchNamespaces,
      labelSelector: this.selectorFor(entry),
      concurrency: helmSlots * WORKERS_PER_HELM_SLOT,
      // Status refreshes after a dependent changed: workers of their own, so they never wait for an install.
      followUpWorkers: helmSlots,
      onStopping: () => {
        helm.stop();
      },
      reconciler,
      finalizers: () => FINALIZERS,
      // Each CR's fingerprint derived as it arrives: a restart reads no CR again to check it.
      onSpec: (cr) => {
        reconciler.sawSpec(cr);
      },
      log,
      ...this.controllerHooks(name, resource, reconciler, (gone_) => {
        // Gone from this replica's cache: deleted (its finalizer ran, or someone removed it) or
        // handed to another shard. Its release's parsed objects and contests would stay for ever.
        this.keeper.forget(gone_.metadata.namespace ?? 'default', gone_.metadata.name);
        reconciler.forgetReferences(keyOf(gone_));
        if (current.rollout !== undefined) this.applyRollout(running, gone(current.rollout, keyOf(gone_)));
      }),
    });
    const running: Running = { controller, current, tracker, resource };
    this.running.set(key, running);
    controller.start();
    log.info({ kind: entry.kind, group: entry.group, version: entry.version, chart: entry.remote?.reference ?? entry.chartPath }, 'controller started');
  }

  /** Starts a controller for an Ansible kind: the same informers, queue and dependents, its own reconciler. */
  private async addAnsible(entry: WatchEntry & { readonly ansible: AnsibleSource }, resource: ApiResource): Promise<void> {
    const { opts } = this;
    const engine = await this.ansibleEngine(entry.kind);
    const key = gvkKey(entry);
    const name = entry.kind.toLowerCase();
    const log = opts.log.child({ controller: name });
    const bookkeeping = (await hasStatusSubresource(opts.client, resource)) ? 'status' : 'annotation';
    const current = { entry, target: await this.ansibleTargetFor(entry, bookkeeping) };
    const gvkLabel = ansibleGvkLabel(entry);
    const reconciler = new AnsibleReconciler({
      target: () => current.target,
      runs: engine.runs,
      proxy: engine.proxy,
      extraVars: engine.extraVars,
      secrets: engine.secrets,
      runtime: engine.runtime,
      settings: engine.settings,
      writer: createCrWriter(opts.client, resource, (from, written) => {
        controller.noteOwnWrite(from, written);
      }),
      events: opts.events,
      clock: systemWallClock,
      dependents: createDependentsView({ client: opts.client, watcher: this.dependents, log }),
      serviceAccounts: this.serviceAccounts,
      stallAfterFailures: opts.stallAfterFailures,
      onRun: (run) => engine.onRun?.(gvkLabel, run),
      valuesSources: this.referenced.forKind(key, (crKey) => {
        controller.enqueue(crKey, { respectBackoff: true });
      }),
      dependencies: this.graph.forKind(ownerKindOf(entry), (crKey) => {
        controller.enqueue(crKey, { respectBackoff: true });
      }),
    });
    const createController = opts.createController ?? ((o: CrControllerOptions) => new CrController(o));
    const concurrency = entry.maxConcurrentReconciles ?? opts.defaultConcurrency;
    const controller = createController({
      name,
      resource,
      client: opts.client,
      namespaces: opts.watchNamespaces,
      labelSelector: this.selectorFor(entry),
      // Each run is an ansible-runner process (about a core while it runs): --max-concurrent-reconciles bounds them.
      concurrency,
      followUpWorkers: 1,
      reconciler,
      // The entry's finalizer, not Helm's: a status write to a CR being deleted must not let it go.
      finalizers: () => finalizersOf(current.target.source),
      log,
      ...this.controllerHooks(name, resource, reconciler, (gone_) => {
        reconciler.forgetReferences(keyOf(gone_));
      }),
    });
    this.running.set(key, { controller, current, tracker: undefined, resource });
    controller.start();
    log.info({ kind: entry.kind, group: entry.group, version: entry.version, role: entry.ansible.role, playbook: entry.ansible.playbook, bookkeeping }, 'controller started');
  }

  private async ansibleEngine(kind: string): Promise<AnsibleEngine> {
    const a = this.opts.ansible;
    if (a === undefined) throw new Error(`${kind}: Ansible kinds are not enabled in this manager`);
    return typeof a === 'function' ? a() : a;
  }

  /** An Ansible entry's target: its role's (and finalizer's) digest, settings and flags. */
  private async ansibleTargetFor(entry: WatchEntry & { readonly ansible: AnsibleSource }, bookkeeping: AnsibleTarget['bookkeeping']): Promise<AnsibleTarget> {
    const engine = await this.ansibleEngine(entry.kind);
    const source = entry.ansible;
    const finalizerRunnable = finalizerRunnableOf(source);
    const own = source.finalizer !== undefined && (source.finalizer.role !== undefined || source.finalizer.playbook !== undefined);
    const serviceAccount = entry.serviceAccount ?? this.opts.defaultServiceAccount;
    const s = engine.settings;
    return {
      ownerKind: ownerKindOf(entry),
      gvk: { group: entry.group, version: entry.version, kind: entry.kind },
      apiVersion: apiVersionOf(entry),
      source,
      finalizerRunnable,
      inputs: {
        runnableDigest: await engine.digest(source),
        finalizerDigest: own && finalizerRunnable !== undefined ? await engine.digest(finalizerRunnable) : undefined,
        vars: source.vars,
        finalizer: source.finalizer === undefined ? undefined : { name: source.finalizer.name, vars: source.finalizer.vars },
        snakeCaseParameters: source.snakeCaseParameters,
        markUnsafe: source.markUnsafe,
        allowClusterScoped: entry.allowClusterScoped,
        allowCrossNamespace: entry.allowCrossNamespace,
        serviceAccount,
        rolesPath: s.rolesPath,
        collectionsPath: s.collectionsPath,
        ansibleArgs: s.extraArgs,
        injectOwnerRef: s.injectOwnerRef,
        ...(entry.valuesFrom === undefined ? {} : { valuesFrom: entry.valuesFrom }),
      },
      runPeriodMs: entry.reconcilePeriodMs,
      recheckPeriodMs: this.opts.defaultReconcilePeriodMs,
      watchDependentResources: entry.watchDependentResources,
      allowClusterScoped: entry.allowClusterScoped,
      allowCrossNamespace: entry.allowCrossNamespace,
      serviceAccount,
      bookkeeping,
      ...(entry.valuesFrom === undefined ? {} : { valuesFrom: entry.valuesFrom }),
      ...(entry.dependsOn === undefined ? {} : { dependsOn: entry.dependsOn }),
    };
  }

  /** The entry's selector, and with shards this replica's label. */
  private selectorFor(entry: WatchEntry): string | undefined {
    const shard = this.opts.shard?.selector;
    if (shard === undefined) return entry.labelSelector;
    return entry.labelSelector === undefined || entry.labelSelector === '' ? shard : `${entry.labelSelector},${shard}`;
  }

  /** What every kind's controller reports, whichever engine reconciles it: queue and reconcile metrics, CRs appearing and going. */
  private controllerHooks(
    name: string,
    resource: ApiResource,
    reconciler: { forget(uid: string): void },
    onGone?: (obj: KubeObject) => void,
  ): Pick<CrControllerOptions, 'queueMetrics' | 'onReconciled' | 'onResource' | 'shard'> {
    const { opts } = this;
    return {
      ...(opts.shard === undefined ? {} : { shard: opts.shard.hooks(resource) }),
      ...(opts.queueMetrics === undefined ? {} : { queueMetrics: opts.queueMetrics(name) }),
      ...(opts.onReconciled === undefined
        ? {}
        : { onReconciled: (result: 'success' | 'error' | 'requeue_after', ms: number) => opts.onReconciled?.(name, result, ms) }),
      onResource: (change: 'present' | 'gone', obj: KubeObject) => {
        if (change === 'gone' && obj.metadata.uid !== undefined) reconciler.forget(obj.metadata.uid);
        if (change === 'gone') onGone?.(obj);
        opts.onResource?.(resource, change, obj);
      },
    };
  }

  /**
   * Stops and forgets the controller of `entry`'s kind. `restarting`: it is added again next (a
   * reload changed how its controller is built), and keeps which chart is its last good one.
   */
  async remove(key: string, drainTimeoutMs: number, restarting = false): Promise<void> {
    const running = this.running.get(key);
    if (running === undefined) return;
    this.running.delete(key);
    if (restarting && running.current.rollout !== undefined) this.restarting.set(key, running.current.rollout);
    await running.tracker?.stop();
    await running.controller.stop(drainTimeoutMs);
    this.keeper.forgetKind(running.current.target.ownerKind);
  }

  /**
   * A tracker for `entry`'s chart from a registry, first round done (undefined for a local chart).
   * When the chart changes it retargets the running controller and re-checks every CR of the kind,
   * exactly as a hot-reloaded local chart does.
   */
  private async track(key: string, entry: WatchEntry, log: Logger): Promise<ChartTracker | undefined> {
    const { remote } = entry;
    const charts = this.opts.charts;
    if (remote === undefined) return undefined;
    if (charts === undefined) throw new Error(`${remote.reference}: charts from registries are not enabled in this manager`);
    const tracker: ChartTracker = new ChartTracker({
      remote,
      resolver: charts.resolver,
      intervalMs: remote.refreshIntervalMs ?? charts.defaultRefreshIntervalMs,
      log,
      ...(charts.clock === undefined ? {} : { clock: charts.clock }),
      onChange: () => {
        const running = this.running.get(key);
        if (running?.tracker !== tracker) return;
        void this.retarget(running).catch((err: unknown) => {
          log.error({ err: errorMessage(err) }, 'cannot apply the new chart');
        });
      },
    });
    await tracker.init();
    return tracker;
  }

  private async retarget(running: Running): Promise<void> {
    if (isAnsibleEntry(running.current.entry)) return;
    const next = await this.chartTarget(running.current.entry, running.tracker?.state);
    running.current.target = next;
    if (running.current.rollout !== undefined) this.applyRollout(running, offer(running.current.rollout, next, chartName(running.current.entry, running.tracker?.state)));
  }

  /** The target of a chart entry, a local chart's content copied (chart-snapshots.ts). */
  private async chartTarget(entry: WatchEntry, chart: ChartState | undefined): Promise<ReconcileTarget> {
    const local = entry.remote === undefined ? await this.snapshots.take(entry.chartPath) : undefined;
    return targetFor(entry, this.opts.defaultReconcilePeriodMs, this.opts.defaultServiceAccount, chart, local);
  }

  /** The target a reconcile of `cr` is served (chart-rollout.ts); without a CR the one most CRs are. */
  private serveChart(current: Current, cr: CustomResource | undefined): ReconcileTarget {
    const rollout = current.rollout;
    if (rollout === undefined) return current.target as ReconcileTarget;
    if (cr === undefined) return rollout.stable;
    const served = serve(rollout, keyOf(cr));
    current.rollout = served.state;
    return served.target;
  }

  /** Makes a rollout transition take effect: who is re-checked, and the Event when a change is held. */
  private applyRollout(running: Running, t: Transition, cr?: CustomResource): void {
    const { current, controller } = running;
    current.rollout = t.state;
    const log = this.opts.log.child({ controller: current.entry.kind.toLowerCase() });
    const chart = t.state.candidate?.chart;
    switch (t.effect.kind) {
      case 'none':
        return;
      case 'held':
        log.warn({ chart, canary: t.effect.canary, err: t.effect.message }, 'the changed chart failed on the first resource it was tried on; the others keep the last good chart');
        if (cr !== undefined && chart !== undefined) this.opts.events.emit(cr, 'Warning', Reasons.chartChangeHeld, heldEventMessage(chart, t.effect.message));
        controller.enqueueAll();
        break;
      case 'canary':
        this.tryOnCanary(running, log);
        break;
      case 'all':
        this.tryOnCanary(running, log);
        controller.enqueueAll();
        break;
    }
    void this.pruneCopies(current).catch((err: unknown) => {
      log.warn({ err: errorMessage(err) }, 'cannot remove chart copies no longer served');
    });
  }

  /** A changed chart without a canary gets one (the healthiest CR, chart-rollout.ts), re-checked now. */
  private tryOnCanary(running: Running, log: Logger): void {
    const { current, controller } = running;
    if (current.rollout?.candidate === undefined) return;
    const options = controller.list().map((cr) => ({
      key: keyOf(cr),
      state: chartSummary(cr.status?.conditions ?? []).state,
      deleting: cr.metadata.deletionTimestamp !== undefined,
    }));
    const chosen = chooseCanary(current.rollout, options);
    current.rollout = chosen.state;
    const chart = current.rollout.candidate?.chart;
    if (chosen.canary === undefined) {
      log.info({ chart }, 'chart changed: no resource of this kind can try it now; the next one reconciled tries it first');
      return;
    }
    log.info({ chart, canary: chosen.canary }, 'chart changed: trying it on one resource first; the others follow once it is deployed there');
    controller.enqueue(chosen.canary);
  }

  /** Removes the chart copies no running kind serves any more (a few spares stay for reconciles still starting). */
  private async pruneCopies(adding?: Current): Promise<void> {
    const inUse = new Set<string>();
    const note = (r: RolloutState | undefined): void => {
      if (r === undefined) return;
      inUse.add(r.stable.chartPath);
      if (r.candidate !== undefined) inUse.add(r.candidate.target.chartPath);
    };
    for (const r of this.running.values()) note(r.current.rollout);
    for (const r of this.restarting.values()) note(r);
    note(adding?.rollout);
    await this.snapshots.prune(inUse);
  }

  /** The chart or an entry's settings changed: new target, and every CR of the kind re-checked. */
  async refresh(key: string, entry: WatchEntry): Promise<boolean> {
    const running = this.running.get(key);
    if (running === undefined) return false;
    if (isAnsibleEntry(entry)) {
      // The role's files or the entry changed: a new fingerprint runs every CR whose inputs it changes.
      const prev = running.current.target as AnsibleTarget;
      const next = await this.ansibleTargetFor(entry, prev.bookkeeping);
      running.current.entry = entry;
      running.current.target = next;
      const changed = !sameJson(prev, next);
      if (changed) running.controller.enqueueAll();
      return changed;
    }
    // A changed reference (or interval) gets a new tracker; an unchanged one costs no request.
    const interval = entry.remote?.refreshIntervalMs ?? this.opts.charts?.defaultRefreshIntervalMs ?? 0;
    if (entry.remote === undefined || running.tracker?.follows(entry.remote, interval) !== true) {
      const old = running.tracker;
      running.tracker = await this.track(key, entry, this.opts.log.child({ controller: entry.kind.toLowerCase() }));
      await old?.stop();
    }
    const next = await this.chartTarget(entry, running.tracker?.state);
    running.current.entry = entry;
    running.current.target = next;
    const rollout = running.current.rollout ?? initialRollout(next);
    const t = offer(rollout, next, chartName(entry, running.tracker?.state));
    this.applyRollout(running, t);
    return t.effect.kind !== 'none';
  }

  entries(): WatchEntry[] {
    return [...this.running.values()].map((r) => r.current.entry);
  }

  controllers(): CrController[] {
    return [...this.running.values()].map((r) => r.controller);
  }

  hasSynced(): boolean {
    return this.controllers().every((c) => c.hasSynced());
  }

  async waitForSync(signal?: AbortSignal): Promise<void> {
    await Promise.all(this.controllers().map((c) => c.waitForSync(signal)));
  }

  /** Shards: this replica's view of the ring changed, and with it the owners whose objects it should watch. */
  selectDependents(selection: DependentSelection): void {
    this.dependents.select(selection);
  }

  /** How many releases the release keeper remembers (metrics). */
  keptReleases(): number {
    return this.keeper.remembered;
  }

  /** What the dependent caches hold (metrics). */
  dependentStats(): DependentCacheStats {
    return this.dependents.stats();
  }

  /** Shards, on stop: every controller hands its CRs back as their running reconciles end. */
  async handOver(): Promise<void> {
    await Promise.all(this.controllers().map((c) => c.handOver()));
  }

  async stop(drainTimeoutMs: number): Promise<void> {
    const all = [...this.running.keys()];
    await Promise.all(all.map((k) => this.remove(k, drainTimeoutMs)));
    await this.dependents.stop();
    await this.serviceAccounts.stop();
    await this.referenced.stop();
    await this.graph.stop();
    await this.snapshots.dispose();
  }
}

/** What a kind's chart is called in messages: its watches.yaml path, or its registry reference and the version resolved. */
function chartName(entry: WatchEntry, chart: ChartState | undefined): string {
  if (entry.remote === undefined) return entry.chartPath;
  return chart?.kind === 'ready' ? `${entry.remote.reference} ${chart.chart.version}` : entry.remote.reference;
}

/** Whether two targets are the same in every field (see engines/helm/target.ts sameTarget; also for Ansible targets). */
function sameJson(a: ReconcileTarget | AnsibleTarget, b: ReconcileTarget | AnsibleTarget): boolean {
  return canonicalJson(a) === canonicalJson(b);
}

/** ansible-operator's GVK label value (Go's schema.GroupVersionKind.String()). */
export function ansibleGvkLabel(entry: WatchEntry): string {
  return `${entry.group}/${entry.version}, Kind=${entry.kind}`;
}

/**
 * Whether the kind has a status subresource (CRDs of Ansible kinds do; a core Secret does not): the
 * run record lives in status when it has, else in an annotation.
 */
async function hasStatusSubresource(client: KubeClient, resource: ApiResource): Promise<boolean> {
  try {
    const doc = await getDiscoveryDocument<{ resources?: { name?: unknown }[] }>(client, groupVersionPath(resource.group, resource.version));
    return (doc.resources ?? []).some((r) => r.name === `${resource.plural}/status`);
  } catch {
    return true;
  }
}
