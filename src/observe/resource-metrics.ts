/**
 * Per-CR series: what an application's owner asks Prometheus (which releases fail, which are not
 * Ready, since when, which keep drifting). Labels are kind, namespace and name only — never a
 * value, a message or a reason, so a CR has a handful of series and no more whatever its status
 * says. Each CR's series go when it goes.
 *
 * By default (`attention`) only CRs that need attention (resource-state.ts `needsAttention`: not
 * Ready, or failed, irreconcilable, paused…) have them: those are what the alerts and a person
 * look up, and 10,000 healthy CRs would otherwise be ~70,000 series no query needs one by one.
 * Every CR is counted in two small aggregates instead (`chartpilot_resources` by Ready status,
 * `chartpilot_releases` by chart version). `all` exports every CR's series, as before.
 *
 * Times are exported as Unix timestamps, not ages: a gauge holding an age would be stale between
 * scrapes, while `time() - chartpilot_release_last_deployed_timestamp_seconds` is exact in
 * Prometheus (Flux and kube-state-metrics do the same).
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import { needsAttention, resourceStateOf, type ResourceState } from './resource-state.js';

/** `--resource-metrics`: which CRs have per-CR series. */
export type ResourceMetricsDetail = 'attention' | 'all';

export interface ResourceRef {
  readonly kind: string;
  /** '' for a cluster-scoped kind. */
  readonly namespace: string;
  readonly name: string;
}

type RefLabel = 'kind' | 'namespace' | 'name';

const refKey = (r: ResourceRef): string => `${r.kind}\u0000${r.namespace}\u0000${r.name}`;
const refLabels = (r: ResourceRef): Record<RefLabel, string> => ({ kind: r.kind, namespace: r.namespace, name: r.name });

export class ResourceMetrics {
  private readonly condition: Gauge<RefLabel | 'type' | 'status'>;
  private readonly releaseInfo: Gauge<RefLabel | 'chart' | 'chart_version' | 'app_version'>;
  private readonly revision: Gauge<RefLabel>;
  private readonly lastDeployed: Gauge<RefLabel>;
  private readonly readyChanged: Gauge<RefLabel>;
  private readonly driftRepairs: Counter<RefLabel | 'object_kind'>;
  private readonly resources: Gauge<'kind' | 'namespace' | 'ready'>;
  private readonly releases: Gauge<'kind' | 'chart' | 'chart_version'>;
  /** Every CR's state (exported or not), to move the aggregates and remove exactly its series. */
  private readonly states = new Map<string, ResourceState>();
  /** The aggregates' counts by their label values (joined by NUL), to drop a series at 0. */
  private readonly resourceCounts = new Map<string, number>();
  private readonly releaseCounts = new Map<string, number>();
  /** Object kinds each CR's repairs were counted for. */
  private readonly repairedKinds = new Map<string, Set<string>>();

  constructor(registry: Registry, private readonly detail: ResourceMetricsDetail = 'attention') {
    const registers = [registry];
    this.resources = new Gauge({
      name: 'chartpilot_resources',
      help: 'Custom resources in the cache, by kind, namespace and the status of their Ready condition (None: no Ready condition yet)',
      labelNames: ['kind', 'namespace', 'ready'],
      registers,
    });
    this.releases = new Gauge({
      name: 'chartpilot_releases',
      help: 'Deployed releases of custom resources, by kind, chart and chart version',
      labelNames: ['kind', 'chart', 'chart_version'],
      registers,
    });
    this.condition = new Gauge({
      name: 'chartpilot_resource_condition',
      help: "A custom resource's status conditions (Flux's gotk_reconcile_condition): 1 for the status the condition has; absent conditions have no series",
      labelNames: ['kind', 'namespace', 'name', 'type', 'status'],
      registers,
    });
    this.releaseInfo = new Gauge({
      name: 'chartpilot_release_info',
      help: "The chart of a custom resource's deployed release (always 1)",
      labelNames: ['kind', 'namespace', 'name', 'chart', 'chart_version', 'app_version'],
      registers,
    });
    this.revision = new Gauge({
      name: 'chartpilot_release_revision',
      help: "The Helm revision of a custom resource's deployed release",
      labelNames: ['kind', 'namespace', 'name'],
      registers,
    });
    this.lastDeployed = new Gauge({
      name: 'chartpilot_release_last_deployed_timestamp_seconds',
      help: 'Unix time of the last successful install or upgrade (Ansible kinds: run) of a custom resource; age = time() - this',
      labelNames: ['kind', 'namespace', 'name'],
      registers,
    });
    this.readyChanged = new Gauge({
      name: 'chartpilot_resource_ready_transition_timestamp_seconds',
      help: "Unix time at which a custom resource's Ready condition last changed status; age = time() - this",
      labelNames: ['kind', 'namespace', 'name'],
      registers,
    });
    this.driftRepairs = new Counter({
      name: 'chartpilot_drift_repairs_total',
      help: "Drift repairs of a custom resource's objects (a field set back or an object recreated), by the repaired object's kind",
      labelNames: ['kind', 'namespace', 'name', 'object_kind'],
      registers,
    });
  }

  /** The CR is in the cache with this status (added or updated). Unchanged series are left as they are. */
  observe(ref: ResourceRef, status: unknown): void {
    const key = refKey(ref);
    const next = resourceStateOf(status);
    const prev = this.states.get(key);
    if (prev !== undefined && sameState(prev, next)) return;
    if (prev !== undefined) this.leave(ref, prev);
    this.states.set(key, next);
    this.count(ref, next, 1);
    if (this.exported(next)) this.addState(ref, next);
  }

  private exported(s: ResourceState): boolean {
    return this.detail === 'all' || needsAttention(s);
  }

  /** Moves the aggregates by `delta` for a CR in state `s`. */
  private count(ref: ResourceRef, s: ResourceState, delta: 1 | -1): void {
    bump(this.resources, this.resourceCounts, { kind: ref.kind, namespace: ref.namespace, ready: s.conditions.get('Ready') ?? 'None' }, delta);
    if (s.release !== undefined) bump(this.releases, this.releaseCounts, { kind: ref.kind, chart: s.release.chart, chart_version: s.release.chartVersion }, delta);
  }

  /** The CR is no longer in state `s`: out of the aggregates, and its series (if any) removed. */
  private leave(ref: ResourceRef, s: ResourceState): void {
    this.count(ref, s, -1);
    if (this.exported(s)) this.removeState(ref, s);
  }

  private addState(ref: ResourceRef, next: ResourceState): void {
    const labels = refLabels(ref);
    for (const [type, st] of next.conditions) this.condition.labels({ ...labels, type, status: st }).set(1);
    if (next.release !== undefined) {
      const r = next.release;
      this.releaseInfo.labels({ ...labels, chart: r.chart, chart_version: r.chartVersion, app_version: r.appVersion }).set(1);
      if (r.revision !== undefined) this.revision.labels(labels).set(r.revision);
    }
    if (next.lastDeployedAt !== undefined) this.lastDeployed.labels(labels).set(next.lastDeployedAt);
    if (next.readyChangedAt !== undefined) this.readyChanged.labels(labels).set(next.readyChangedAt);
  }

  /** One repair of an object of `objectKind` (e.g. `Deployment`) that belongs to `ref`'s release. */
  driftRepaired(ref: ResourceRef, objectKind: string): void {
    const key = refKey(ref);
    let kinds = this.repairedKinds.get(key);
    if (kinds === undefined) this.repairedKinds.set(key, (kinds = new Set()));
    kinds.add(objectKind);
    this.driftRepairs.labels({ ...refLabels(ref), object_kind: objectKind }).inc();
  }

  /** The CR went (deleted, or its kind is no longer watched): all its series go. */
  gone(ref: ResourceRef): void {
    const key = refKey(ref);
    const prev = this.states.get(key);
    if (prev !== undefined) this.leave(ref, prev);
    this.states.delete(key);
    for (const objectKind of this.repairedKinds.get(key) ?? []) this.driftRepairs.remove({ ...refLabels(ref), object_kind: objectKind });
    this.repairedKinds.delete(key);
  }

  /** How many CRs are counted (tests, cardinality). */
  get size(): number {
    return this.states.size;
  }

  private removeState(ref: ResourceRef, s: ResourceState): void {
    const labels = refLabels(ref);
    for (const [type, st] of s.conditions) this.condition.remove({ ...labels, type, status: st });
    if (s.release !== undefined) {
      const r = s.release;
      this.releaseInfo.remove({ ...labels, chart: r.chart, chart_version: r.chartVersion, app_version: r.appVersion });
      this.revision.remove(labels);
    }
    this.lastDeployed.remove(labels);
    this.readyChanged.remove(labels);
  }
}

/** Adds `delta` to the aggregate series `labels`; a series whose count reaches 0 is removed. */
function bump<L extends string>(gauge: Gauge<L>, counts: Map<string, number>, labels: Record<L, string>, delta: 1 | -1): void {
  const key = Object.values<string>(labels).join('\u0000');
  const n = (counts.get(key) ?? 0) + delta;
  if (n > 0) {
    counts.set(key, n);
    gauge.labels(labels).set(n);
  } else {
    counts.delete(key);
    gauge.remove(labels);
  }
}

function sameState(a: ResourceState, b: ResourceState): boolean {
  if (a.conditions.size !== b.conditions.size) return false;
  for (const [type, st] of a.conditions) if (b.conditions.get(type) !== st) return false;
  const ra = a.release;
  const rb = b.release;
  const sameRelease =
    ra === undefined || rb === undefined
      ? ra === rb
      : ra.chart === rb.chart && ra.chartVersion === rb.chartVersion && ra.appVersion === rb.appVersion && ra.revision === rb.revision;
  return sameRelease && a.lastDeployedAt === b.lastDeployedAt && a.readyChangedAt === b.readyChangedAt;
}
