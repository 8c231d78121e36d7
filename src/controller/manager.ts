/**
 * Turns validated watches entries into running controllers: resolves each kind's API resource,
 * computes its chart digest, and wires reconciler, informers and queue together.
 */
import type { Logger } from 'pino';
import { applyOverrides } from '../config/overrides.js';
import { gvkKey, type WatchEntry } from '../config/types.js';
import { createReleaseStore } from '../helm/storage.js';
import type { HelmClient } from '../helm/types.js';
import type { KubeClient } from '../kube/rest.js';
import type { ApiResource, KubeObject } from '../kube/types.js';
import type { EventSink } from '../reconcile/ports.js';
import { Reconciler } from '../reconcile/reconciler.js';
import { sameTarget, type ReconcileTarget } from '../reconcile/target.js';
import { ScopeMap } from '../dependents/scopes.js';
import { DependentWatcher } from '../dependents/watcher.js';
import { chartDigest } from '../config/chart-digest.js';
import { systemWallClock } from '../lib/clock.js';
import { createCrWriter } from './cr-writer.js';
import { CrController, type CrControllerOptions } from './cr-controller.js';
import { ReleaseKeeper } from '../dependents/release-keeper.js';
import { ServiceAccountCache } from './service-accounts.js';
import type { WorkQueueMetrics } from './workqueue.js';

export interface ManagerOptions {
  readonly client: KubeClient;
  readonly helm: HelmClient;
  readonly events: EventSink;
  readonly log: Logger;
  readonly watchNamespaces: readonly string[];
  readonly defaultReconcilePeriodMs: number;
  readonly defaultConcurrency: number;
  readonly helmTimeoutMs: number;
  readonly historyMax: number;
  /** `--default-service-account`: what entries without `serviceAccount` run as; undefined = the operator. */
  readonly defaultServiceAccount?: string | undefined;
  readonly processStartedAt: number;
  /** operator-sdk's --suppress-override-values: no OverrideValuesInUse Warning events. */
  readonly suppressOverrideValues?: boolean;
  readonly queueMetrics?: (controller: string) => WorkQueueMetrics;
  readonly onReconciled?: (controller: string, result: 'success' | 'error' | 'requeue_after', durationMs: number) => void;
  /** A CR of a watched kind appeared or went (per-CR metrics); `resource` says which kind. */
  readonly onResource?: (resource: ApiResource, change: 'present' | 'gone', obj: KubeObject) => void;
  /** Builds each kind's controller; a plain CrController unless a test substitutes one. */
  readonly createController?: (opts: CrControllerOptions) => CrController;
}

/**
 * A running controller. `current` is mutated in place on reload: the reconciler reads the target
 * through a closure over this very object.
 */
interface Running {
  readonly controller: CrController;
  readonly current: { entry: WatchEntry; target: ReconcileTarget };
}

export function ownerKindOf(entry: WatchEntry): string {
  return entry.group === '' ? entry.kind : `${entry.kind}.${entry.group}`;
}

export async function targetFor(entry: WatchEntry, defaultPeriodMs: number, defaultServiceAccount?: string): Promise<ReconcileTarget> {
  return {
    ownerKind: ownerKindOf(entry),
    chartPath: entry.chartPath,
    chartDigest: await chartDigest(entry.chartPath),
    overrides: entry.overrideValues,
    reconcilePeriodMs: entry.reconcilePeriodMs ?? defaultPeriodMs,
    watchDependentResources: entry.watchDependentResources,
    allowClusterScoped: entry.allowClusterScoped,
    allowCrossNamespace: entry.allowCrossNamespace,
    serviceAccount: entry.serviceAccount ?? defaultServiceAccount,
  };
}

export class Manager {
  private readonly running = new Map<string, Running>();
  private readonly releases;
  /** One watcher of every kind any release has, shared by all controllers. */
  private readonly dependents: DependentWatcher;
  private readonly keeper: ReleaseKeeper;
  /** Which ServiceAccounts exist: watched only once a kind runs as one. */
  private readonly serviceAccounts: ServiceAccountCache;

  constructor(private readonly opts: ManagerOptions) {
    this.releases = createReleaseStore(opts.client);
    const log = opts.log.child({ controller: 'dependents' });
    this.dependents = new DependentWatcher({
      client: opts.client,
      namespaces: opts.watchNamespaces,
      log,
      // A dependent changed (spec, status or existence): its owner re-checks drift and readiness.
      onChange: (ownerUid) => {
        for (const r of this.running.values()) {
          const key = r.controller.keyForUid(ownerUid);
          // Our own apply/rollback changes dependents too: never let that bypass a retry backoff.
          if (key !== undefined) r.controller.enqueue(key, { respectBackoff: true });
        }
      },
    });
    this.keeper = new ReleaseKeeper({ client: opts.client, watcher: this.dependents, scopes: new ScopeMap({ client: opts.client, log }), log });
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

  /** Starts a controller for `entry` (its resource already resolved). */
  async add(entry: WatchEntry, resource: ApiResource): Promise<void> {
    const { opts } = this;
    const key = gvkKey(entry);
    const name = entry.kind.toLowerCase();
    const log = opts.log.child({ controller: name });
    const current = { entry, target: await targetFor(entry, opts.defaultReconcilePeriodMs, opts.defaultServiceAccount) };
    const reconciler = new Reconciler({
      helm: opts.helm,
      releases: this.releases,
      writer: createCrWriter(opts.client, resource),
      events: opts.events,
      clock: systemWallClock,
      applyOverrides,
      suppressOverrideValues: opts.suppressOverrideValues,
      helmTimeoutMs: opts.helmTimeoutMs,
      processStartedAt: opts.processStartedAt,
      historyMax: opts.historyMax,
      target: () => current.target,
      keeper: this.keeper,
      serviceAccounts: this.serviceAccounts,
    });
    const createController = opts.createController ?? ((o: CrControllerOptions) => new CrController(o));
    const controller = createController({
      name,
      resource,
      client: opts.client,
      namespaces: opts.watchNamespaces,
      labelSelector: entry.labelSelector,
      concurrency: entry.maxConcurrentReconciles ?? opts.defaultConcurrency,
      reconciler,
      log,
      ...(opts.queueMetrics === undefined ? {} : { queueMetrics: opts.queueMetrics(name) }),
      ...(opts.onReconciled === undefined
        ? {}
        : { onReconciled: (result: 'success' | 'error' | 'requeue_after', ms: number) => opts.onReconciled?.(name, result, ms) }),
      ...(opts.onResource === undefined ? {} : { onResource: (change: 'present' | 'gone', obj: KubeObject) => opts.onResource?.(resource, change, obj) }),
    });
    this.running.set(key, { controller, current });
    controller.start();
    log.info({ kind: entry.kind, group: entry.group, version: entry.version, chart: entry.chartPath }, 'controller started');
  }

  /** Stops and forgets the controller of `entry`'s kind. */
  async remove(key: string, drainTimeoutMs: number): Promise<void> {
    const running = this.running.get(key);
    if (running === undefined) return;
    this.running.delete(key);
    await running.controller.stop(drainTimeoutMs);
  }

  /** The chart or an entry's settings changed: new target, and every CR of the kind re-checked. */
  async refresh(key: string, entry: WatchEntry): Promise<boolean> {
    const running = this.running.get(key);
    if (running === undefined) return false;
    const next = await targetFor(entry, this.opts.defaultReconcilePeriodMs, this.opts.defaultServiceAccount);
    const prev = running.current.target;
    running.current.entry = entry;
    running.current.target = next;
    const changed = !sameTarget(prev, next);
    if (changed) running.controller.enqueueAll();
    return changed;
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

  async stop(drainTimeoutMs: number): Promise<void> {
    const all = [...this.running.keys()];
    await Promise.all(all.map((k) => this.remove(k, drainTimeoutMs)));
    await this.dependents.stop();
    await this.serviceAccounts.stop();
  }
}
