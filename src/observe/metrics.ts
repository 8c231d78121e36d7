/**
 * The operator's Prometheus metrics. Names, labels and buckets follow controller-runtime
 * (`controller_runtime_*`, `workqueue_*`, `leader_election_master_status`) and operator-sdk
 * (`helm_operator_build_info`), so dashboards and alerts written for helm-operator keep working;
 * `chartpilot_*` adds what helm-operator never had (per-call Helm and API request counts).
 *
 * A private registry, not prom-client's global one: tests build several operators' worth of
 * metrics in one process, and a library we load can never leak series into our endpoint.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Lane, WorkQueueMetrics } from '../lib/work-queue.js';
import type { HelmCallEvent } from '../helm/cli-client.js';
import { ResourceMetrics, type ResourceMetricsDetail, type ResourceRef } from './resource-metrics.js';
import { TextGauge } from './text-gauge.js';

export type { ResourceRef } from './resource-metrics.js';

export type ReconcileResult = 'success' | 'error' | 'requeue' | 'requeue_after';

const RECONCILE_RESULTS: readonly ReconcileResult[] = ['success', 'error', 'requeue', 'requeue_after'];

/** controller-runtime's reconcile_time_seconds buckets (v0.15+): fine below 1 s, up to a minute. */
const RECONCILE_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0,
  3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
];
/** client-go's workqueue buckets: 10 ns … 10 s, ×10 each. */
const WORKQUEUE_BUCKETS = [1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 10];
/** A helm call ranges from a quick `status` to an install that waits minutes for hooks. */
const HELM_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
/** Waits a person notices: from immediate to the minutes a wave of installs can take. */
const LANE_WAIT_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300];
const KUBE_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

const RESOURCE_CREATED_AT = 'resource_created_at_seconds';

/** A custom resource of a watched kind, as resource_created_at_seconds labels it. */
export interface WatchedResource {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  /** undefined for a cluster-scoped kind. */
  readonly namespace: string | undefined;
  readonly name: string;
  /** metadata.creationTimestamp. */
  readonly createdAt: string | undefined;
}

function resourceLabels(r: WatchedResource): Record<'name' | 'namespace' | 'group' | 'version' | 'kind', string> {
  return { name: r.name, namespace: r.namespace ?? '', group: r.group, version: r.version, kind: r.kind };
}

export interface BuildInfo {
  readonly version: string;
  /** Source commit, when the build knows it; '' otherwise (operator-sdk's label is always present). */
  readonly commit?: string;
}

export interface OperatorMetricsOptions {
  readonly build: BuildInfo;
  /** prom-client's process_* and nodejs_* collectors; default true (tests turn them off). */
  readonly defaultMetrics?: boolean;
  /** `--resource-metrics`: which CRs have per-CR series (resource-metrics.ts); default attention. */
  readonly resourceDetail?: ResourceMetricsDetail;
}

export class OperatorMetrics {
  readonly registry = new Registry();

  private readonly reconcileTotal: Counter<'controller' | 'result'>;
  private readonly reconcileErrors: Counter<'controller'>;
  private readonly reconcileTime: Histogram<'controller'>;
  private readonly maxConcurrent: Gauge<'controller'>;
  private readonly activeWorkers: Gauge<'controller'>;
  private readonly queueDepth: Gauge<'name'>;
  private readonly queueAdds: Counter<'name'>;
  private readonly queueRetries: Counter<'name'>;
  private readonly queueDuration: Histogram<'name'>;
  private readonly workDuration: Histogram<'name'>;
  private readonly leaderStatus: Gauge<'name'>;
  private readonly helmCalls: Counter<'action' | 'outcome' | 'error_kind'>;
  private readonly helmDuration: Histogram<'action'>;
  private readonly kubeRequests: Counter<'method' | 'code'>;
  private readonly kubeDuration: Histogram<'method'>;
  /** One series per watched CR: kept as text (text-gauge.ts), outside prom-client's registry. */
  private readonly resourceCreatedAt: TextGauge<'name' | 'namespace' | 'group' | 'version' | 'kind'>;
  private readonly ansibleResults: Gauge<'GVK' | 'result'>;
  private readonly ansibleReconciles: Histogram<'GVK'>;
  private readonly ansibleRuns: Counter<'GVK' | 'trigger' | 'result'>;
  private readonly registryRequests: Counter<'method' | 'outcome'>;
  private readonly laneDepth: Gauge<'name' | 'lane'>;
  private readonly laneWait: Histogram<'name' | 'lane'>;
  /** Per-CR series: conditions, release, timestamps, drift repairs. */
  readonly resources: ResourceMetrics;

  constructor(opts: OperatorMetricsOptions) {
    const registers = [this.registry];
    // ansible-operator's (internal/ansible/metrics): a gauge that only counts up, and the time of
    // each run (its "reconcile" is always a run; chartpilot's reconciles without a run are not in it).
    this.ansibleResults = new Gauge({
      name: 'ansible_operator_reconcile_result',
      help: 'Gauge of reconciles and their results.',
      labelNames: ['GVK', 'result'],
      registers,
    });
    this.ansibleReconciles = new Histogram({ name: 'ansible_operator_reconciles', help: 'How long in seconds a reconcile takes.', labelNames: ['GVK'], registers });
    this.ansibleRuns = new Counter({
      name: 'chartpilot_ansible_runs_total',
      help: 'Ansible runs by what triggered them (first, inputs-changed, drift, requeue-after, period, finalizer) and result',
      labelNames: ['GVK', 'trigger', 'result'],
      registers,
    });
    this.reconcileTotal = new Counter({
      name: 'controller_runtime_reconcile_total',
      help: 'Total number of reconciliations per controller',
      labelNames: ['controller', 'result'],
      registers,
    });
    this.reconcileErrors = new Counter({
      name: 'controller_runtime_reconcile_errors_total',
      help: 'Total number of reconciliation errors per controller',
      labelNames: ['controller'],
      registers,
    });
    this.reconcileTime = new Histogram({
      name: 'controller_runtime_reconcile_time_seconds',
      help: 'Length of time per reconciliation per controller',
      labelNames: ['controller'],
      buckets: RECONCILE_BUCKETS,
      registers,
    });
    this.maxConcurrent = new Gauge({
      name: 'controller_runtime_max_concurrent_reconciles',
      help: 'Maximum number of concurrent reconciles per controller',
      labelNames: ['controller'],
      registers,
    });
    this.activeWorkers = new Gauge({
      name: 'controller_runtime_active_workers',
      help: 'Number of currently used workers per controller',
      labelNames: ['controller'],
      registers,
    });
    this.queueDepth = new Gauge({ name: 'workqueue_depth', help: 'Current depth of workqueue', labelNames: ['name'], registers });
    this.queueAdds = new Counter({
      name: 'workqueue_adds_total',
      help: 'Total number of adds handled by workqueue',
      labelNames: ['name'],
      registers,
    });
    this.queueRetries = new Counter({
      name: 'workqueue_retries_total',
      help: 'Total number of retries handled by workqueue',
      labelNames: ['name'],
      registers,
    });
    this.queueDuration = new Histogram({
      name: 'workqueue_queue_duration_seconds',
      help: 'How long in seconds an item stays in workqueue before being requested',
      labelNames: ['name'],
      buckets: WORKQUEUE_BUCKETS,
      registers,
    });
    this.workDuration = new Histogram({
      name: 'workqueue_work_duration_seconds',
      help: 'How long in seconds processing an item from workqueue takes',
      labelNames: ['name'],
      buckets: WORKQUEUE_BUCKETS,
      registers,
    });
    this.leaderStatus = new Gauge({
      name: 'leader_election_master_status',
      help: 'Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master',
      labelNames: ['name'],
      registers,
    });
    const buildInfo = new Gauge({
      name: 'helm_operator_build_info',
      help: 'Build information for the helm-operator binary',
      labelNames: ['commit', 'version'],
      registers,
    });
    buildInfo.labels({ commit: opts.build.commit ?? '', version: opts.build.version }).set(1);
    this.helmCalls = new Counter({
      name: 'chartpilot_helm_calls_total',
      help: 'Helm client calls by action and outcome; error_kind is empty on success',
      labelNames: ['action', 'outcome', 'error_kind'],
      registers,
    });
    this.helmDuration = new Histogram({
      name: 'chartpilot_helm_call_duration_seconds',
      help: 'Duration of Helm client calls (all helm processes of one call)',
      labelNames: ['action'],
      buckets: HELM_BUCKETS,
      registers,
    });
    this.kubeRequests = new Counter({
      name: 'chartpilot_kube_requests_total',
      help: 'Kubernetes API requests by method and HTTP status code (<error> when no response arrived); WATCH counts watch connections',
      labelNames: ['method', 'code'],
      registers,
    });
    this.kubeDuration = new Histogram({
      name: 'chartpilot_kube_request_duration_seconds',
      help: 'Kubernetes API request latency (for WATCH: until the response headers)',
      labelNames: ['method'],
      buckets: KUBE_BUCKETS,
      registers,
    });
    // operator-sdk's per-CR gauge (operator-lib's ResourceCreatedAt): its e2e tests and dashboards look for it.
    this.resourceCreatedAt = new TextGauge(RESOURCE_CREATED_AT, 'Timestamp at which a resource was created', ['name', 'namespace', 'group', 'version', 'kind']);
    this.registryRequests = new Counter({
      name: 'chartpilot_registry_requests_total',
      help: 'Requests to chart registries (OCI, Helm repositories) by method and outcome (ok, not_modified, unauthorized, not_found, rate_limited, client_error, server_error, unreachable)',
      labelNames: ['method', 'outcome'],
      registers,
    });
    this.laneDepth = new Gauge({
      name: 'chartpilot_workqueue_lane_depth',
      help: 'Keys waiting in a work queue lane (change, delete, followUp)',
      labelNames: ['name', 'lane'],
      registers,
    });
    this.laneWait = new Histogram({
      name: 'chartpilot_workqueue_lane_wait_seconds',
      help: 'How long a key waited in a work queue lane before a worker took it',
      labelNames: ['name', 'lane'],
      buckets: LANE_WAIT_BUCKETS,
      registers,
    });
    this.resources = new ResourceMetrics(this.registry, opts.resourceDetail);
    if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }

  /**
   * Announces a controller: like controller-runtime, every result series exists (at 0) from the
   * start, so `rate()` and absence alerts work before the first reconcile.
   */
  registerController(controller: string): void {
    for (const result of RECONCILE_RESULTS) this.reconcileTotal.labels({ controller, result }).inc(0);
    this.reconcileErrors.labels({ controller }).inc(0);
    this.activeWorkers.labels({ controller }).set(0);
  }

  maxConcurrentReconciles(controller: string, n: number): void {
    this.maxConcurrent.labels({ controller }).set(n);
  }

  /** Manager's `onReconciled` hook. */
  reconciled(controller: string, result: ReconcileResult, durationMs: number): void {
    this.reconcileTotal.labels({ controller, result }).inc();
    if (result === 'error') this.reconcileErrors.labels({ controller }).inc();
    this.reconcileTime.labels({ controller }).observe(durationMs / 1000);
  }

  /**
   * Manager's `queueMetrics` factory. The queue of a controller is named after it, as in
   * controller-runtime. Active workers are counted from the queue: a worker becomes busy when it
   * takes a key (queue latency observed) and free when its handler returns (work duration).
   */
  queueMetrics(name: string): WorkQueueMetrics {
    const labels = { name };
    const controller = { controller: name };
    this.queueDepth.labels(labels).set(0);
    this.queueAdds.labels(labels).inc(0);
    this.queueRetries.labels(labels).inc(0);
    for (const lane of QUEUE_LANES) this.laneDepth.labels({ name, lane }).set(0);
    return {
      onAdd: () => {
        this.queueAdds.labels(labels).inc();
      },
      onDepth: (depth) => {
        this.queueDepth.labels(labels).set(depth);
      },
      onRetry: () => {
        this.queueRetries.labels(labels).inc();
      },
      onLaneDepth: (lane, depth) => {
        this.laneDepth.labels({ name, lane }).set(depth);
      },
      onQueueLatency: (ms, lane) => {
        this.queueDuration.labels(labels).observe(ms / 1000);
        if (lane !== undefined) this.laneWait.labels({ name, lane }).observe(ms / 1000);
        this.activeWorkers.labels(controller).inc();
      },
      onWorkDuration: (ms) => {
        this.workDuration.labels(labels).observe(ms / 1000);
        this.activeWorkers.labels(controller).dec();
      },
    };
  }

  /** The helm client's `log` option. */
  helmCall(event: HelmCallEvent): void {
    this.helmCalls.labels({ action: event.action, outcome: event.outcome, error_kind: event.errorKind ?? '' }).inc();
    this.helmDuration.labels({ action: event.action }).observe(event.durationMs / 1000);
  }

  /** KubeClient's `onRequest` hook. The path is left out on purpose: it would make a series per object. */
  kubeRequest(method: string, status: number, durationMs: number): void {
    this.kubeRequests.labels({ method, code: status === 0 ? '<error>' : String(status) }).inc();
    this.kubeDuration.labels({ method }).observe(durationMs / 1000);
  }

  /** The chart resolver's `onRequest` hook: `status` 0 when no response arrived. The URL is left out (a series per chart). */
  registryRequest(method: string, status: number): void {
    this.registryRequests.labels({ method, outcome: registryOutcome(status) }).inc();
  }

  /**
   * A watched CR exists with this status (added or updated): its per-CR series. `resourcePresent`
   * is operator-sdk's creation-time gauge, kept apart.
   */
  resourceStatus(ref: ResourceRef, status: unknown): void {
    this.resources.observe(ref, status);
  }

  /**
   * One drift repair of an object of `objectKind` belonging to `ref`'s release (called by the
   * drift repair code; counted per object kind, removed with the CR).
   */
  driftRepaired(ref: ResourceRef, objectKind: string): void {
    this.resources.driftRepaired(ref, objectKind);
  }

  /** A watched CR exists: its series holds its creation time (unknown → 0, as operator-sdk reports). */
  resourcePresent(r: WatchedResource): void {
    const created = r.createdAt === undefined ? Number.NaN : Date.parse(r.createdAt);
    this.resourceCreatedAt.set(resourceLabels(r), Number.isNaN(created) ? 0 : created / 1000);
  }

  /** A watched CR is gone (or no longer watched): its series goes too. */
  resourceGone(r: WatchedResource): void {
    this.resourceCreatedAt.remove(resourceLabels(r));
    this.resources.gone({ kind: r.kind, namespace: r.namespace ?? '', name: r.name });
  }

  /** One Ansible run ended; `gvk` as ansible-operator labels it (`group/version, Kind=Kind`). */
  ansibleRun(gvk: string, run: { readonly trigger: string; readonly succeeded: boolean; readonly seconds: number }): void {
    this.ansibleResults.inc({ GVK: gvk, result: run.succeeded ? 'succeeded' : 'failed' });
    this.ansibleReconciles.observe({ GVK: gvk }, run.seconds);
    this.ansibleRuns.inc({ GVK: gvk, trigger: run.trigger, result: run.succeeded ? 'succeeded' : 'failed' });
  }

  /** `leader_election_master_status`: 1 while this process holds the lease `name`, else 0. */
  leader(name: string, isLeader: boolean): void {
    this.leaderStatus.labels({ name }).set(isLeader ? 1 : 0);
  }

  /**
   * `--shards`: `chartpilot_shard_assigned_resources{ring,shard}` (CRs this replica holds, read at
   * each scrape) and `chartpilot_shard_ring_members{ring}` (live members it sees).
   */
  shardRing(ring: string, shard: string, assigned: () => number, members: () => number): void {
    const registers = [this.registry];
    new Gauge({
      name: 'chartpilot_shard_assigned_resources',
      help: 'Resources assigned to this replica in its shard ring, as its caches hold them',
      labelNames: ['ring', 'shard'],
      registers,
      collect() {
        this.set({ ring, shard }, assigned());
      },
    });
    new Gauge({
      name: 'chartpilot_shard_ring_members',
      help: 'Live members of the shard ring, as this replica sees their Leases',
      labelNames: ['ring'],
      registers,
      collect() {
        this.set({ ring }, members());
      },
    });
  }

  /**
   * The dependent watches (read at each scrape): `chartpilot_dependent_cached_objects{watch}`
   * (`owned`: the objects of the owners this replica watches, all of them without --shards;
   * `unbucketed`: with --shards, objects without an owner-bucket label, which every replica
   * watches), `chartpilot_dependent_watch_buckets` (uid buckets of 1024 selected) and
   * `chartpilot_dependent_watch_swaps_total` (swaps to a new share of the ring).
   */
  dependentCaches(stats: () => { readonly owned: number; readonly unbucketed: number; readonly buckets: number; readonly swaps: number }): void {
    const registers = [this.registry];
    new Gauge({
      name: 'chartpilot_dependent_cached_objects',
      help: 'Objects of the releases this replica\'s dependent watches cache: owned (the owners it watches; with --shards its share of the ring) and unbucketed (with --shards: objects without an owner-bucket label, watched by every replica)',
      labelNames: ['watch'],
      registers,
      collect() {
        const s = stats();
        this.set({ watch: 'owned' }, s.owned);
        this.set({ watch: 'unbucketed' }, s.unbucketed);
      },
    });
    new Gauge({
      name: 'chartpilot_dependent_watch_buckets',
      help: 'Owner uid buckets (of 1024) whose objects this replica\'s dependent watches select',
      registers,
      collect() {
        this.set(stats().buckets);
      },
    });
    new Counter({
      name: 'chartpilot_dependent_watch_swaps_total',
      help: 'Times this replica\'s dependent watches were swapped to a new share of the shard ring (one LIST per watched kind each)',
      registers,
      collect() {
        this.reset();
        this.inc(stats().swaps);
      },
    });
  }

  /**
   * `chartpilot_release_keeper_releases` (read at each scrape): the releases whose parsed objects
   * the release keeper holds for drift and readiness — this replica's CRs of chart kinds that have
   * been reconciled; it falls when CRs are deleted or handed to another shard.
   */
  releaseKeeper(releases: () => number): void {
    new Gauge({
      name: 'chartpilot_release_keeper_releases',
      help: 'Releases whose parsed objects the release keeper holds (this replica\'s reconciled CRs of chart kinds)',
      registers: [this.registry],
      collect() {
        this.set(releases());
      },
    });
  }

  /**
   * The helm engine (--helm-mode=engine), read at each scrape: its resident memory
   * (`chartpilot_helm_engine_resident_memory_bytes`, VmRSS; 0 while none runs), its calls in
   * flight and how many engines were started (1 + replacements after a hang or a death).
   */
  helmEngine(stats: () => { readonly pid: number | undefined; readonly inFlight: number; readonly starts: number }, residentBytes: (pid: number) => number): void {
    const registers = [this.registry];
    new Gauge({
      name: 'chartpilot_helm_engine_resident_memory_bytes',
      help: 'Resident memory of the helm engine process (chartpilot-helm in engine mode); 0 while none runs',
      registers,
      collect() {
        const pid = stats().pid;
        this.set(pid === undefined ? 0 : residentBytes(pid));
      },
    });
    new Gauge({
      name: 'chartpilot_helm_engine_calls_in_flight',
      help: 'Helm calls the engine is running',
      registers,
      collect() {
        this.set(stats().inFlight);
      },
    });
    new Counter({
      name: 'chartpilot_helm_engine_starts_total',
      help: 'Helm engine processes started: the first, and one per replacement after a hung call or a death',
      registers,
      collect() {
        this.reset();
        this.inc(stats().starts);
      },
    });
  }

  /** The Prometheus text exposition of every metric. */
  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: (await this.registry.metrics()) + this.resourceCreatedAt.render() };
  }

  /** Metric names served besides the registry's (no role's osdk_metric may take them). */
  get ownTextFamilies(): readonly string[] {
    return [RESOURCE_CREATED_AT];
  }
}

const QUEUE_LANES: readonly Lane[] = ['change', 'delete', 'followUp'];

/** An HTTP status of a registry request as the outcome an operator acts on; 0 = no response. */
export function registryOutcome(status: number): string {
  if (status === 0) return 'unreachable';
  if (status === 304) return 'not_modified';
  if (status >= 200 && status < 400) return 'ok';
  if (status === 401 || status === 403) return 'unauthorized';
  if (status === 404) return 'not_found';
  if (status === 429) return 'rate_limited';
  if (status >= 500) return 'server_error';
  return 'client_error';
}
