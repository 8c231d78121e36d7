/**
 * Whether a release's workloads are up, in the spirit of kstatus (what Flux and `kubectl wait`
 * users expect): each kind that has a rollout is judged by its own status fields, a failure the
 * controller reported (deadline exceeded, job failed) is told apart from "still in progress", and
 * every other kind counts as ready once it exists. Pure: the caller supplies the live objects.
 */
import type { KubeObject } from '../kube/types.js';
import type { Readiness } from '../core/model.js';
import { describeRef, type LiveOrMissing, type ObjectRef } from './types.js';

export type { Readiness };
import { asPlainObject } from '../lib/json.js';

export type { LiveOrMissing } from './types.js';

/** One object's verdict. */
export interface ObjectReadiness {
  ready: boolean;
  failed: boolean;
  reason: string;
  /** Without the object's name; readinessOf prefixes it. */
  detail: string;
}

export const ReadinessReasons = {
  allReady: 'AllResourcesReady',
  missing: 'ResourceMissing',
  terminating: 'ResourceTerminating',
  deploymentNotAvailable: 'DeploymentNotAvailable',
  progressDeadlineExceeded: 'ProgressDeadlineExceeded',
  statefulSetNotReady: 'StatefulSetNotReady',
  daemonSetNotReady: 'DaemonSetNotReady',
  jobNotComplete: 'JobNotComplete',
  jobFailed: 'JobFailed',
  pvcNotBound: 'PersistentVolumeClaimNotBound',
  loadBalancerPending: 'LoadBalancerPending',
  podNotReady: 'PodNotReady',
  podFailed: 'PodFailed',
} as const;

/** How many not-ready objects a message names before it says "and N more". */
const MAX_LISTED = 3;

export function readinessOf(objects: readonly LiveOrMissing[]): Readiness {
  const notReady: { ref: ObjectRef; r: ObjectReadiness }[] = [];
  for (const o of objects) {
    const r = objectReadiness(o, o.live);
    if (!r.ready) notReady.push({ ref: o, r });
  }
  if (notReady.length === 0) {
    const n = objects.length;
    return { ready: true, failed: false, reason: ReadinessReasons.allReady, message: `all ${n} resource${n === 1 ? ' is' : 's are'} ready` };
  }
  // Failures first: they are what a user must act on. Stable otherwise (the caller's order).
  const ordered = [...notReady.filter((x) => x.r.failed), ...notReady.filter((x) => !x.r.failed)];
  const first = ordered[0];
  const listed = ordered.slice(0, MAX_LISTED).map((x) => `${describeRef(x.ref)}: ${x.r.detail}`);
  const more = ordered.length - listed.length;
  if (more > 0) listed.push(`and ${more} more not ready`);
  return { ready: false, failed: first?.r.failed ?? false, reason: first?.r.reason ?? ReadinessReasons.missing, message: listed.join('; ') };
}

/** One object's readiness; `live` undefined = the object does not exist. */
export function objectReadiness(ref: ObjectRef, live: KubeObject | undefined): ObjectReadiness {
  if (live === undefined) return notReady(ReadinessReasons.missing, 'does not exist');
  if (live.metadata.deletionTimestamp !== undefined) return notReady(ReadinessReasons.terminating, 'is being deleted');
  const group = groupOf(ref.apiVersion);
  const check = CHECKS[`${ref.kind}.${group}`];
  return check ? check(live) : READY;
}

type Check = (o: KubeObject) => ObjectReadiness;

const READY: ObjectReadiness = { ready: true, failed: false, reason: '', detail: 'ready' };

const CHECKS: Readonly<Record<string, Check>> = {
  'Deployment.apps': deployment,
  'StatefulSet.apps': statefulSet,
  'DaemonSet.apps': daemonSet,
  'Job.batch': job,
  'PersistentVolumeClaim.': pvc,
  'Service.': service,
  'Pod.': pod,
};

function deployment(o: KubeObject): ObjectReadiness {
  const R = ReadinessReasons.deploymentNotAvailable;
  const s = statusOf(o);
  const progressing = condition(s, 'Progressing');
  // Reported even before the controller caught up with the spec: it is about the last rollout.
  if (progressing?.status === 'False' && progressing.reason === 'ProgressDeadlineExceeded') {
    return failed(ReadinessReasons.progressDeadlineExceeded, `progress deadline exceeded${suffix(progressing.message)}`);
  }
  const gen = notObserved(o, s);
  if (gen) return notReady(R, gen);
  const want = int(specOf(o).replicas) ?? 1;
  const updated = int(s.updatedReplicas) ?? 0;
  const total = int(s.replicas) ?? 0;
  const available = int(s.availableReplicas) ?? 0;
  if (updated < want) return notReady(R, `${updated}/${want} replicas updated`);
  if (total > updated) return notReady(R, `${total - updated} old replica${total - updated === 1 ? '' : 's'} pending termination`);
  if (available < want) return notReady(R, `${available}/${want} replicas available`);
  return READY;
}

function statefulSet(o: KubeObject): ObjectReadiness {
  const R = ReadinessReasons.statefulSetNotReady;
  const s = statusOf(o);
  const gen = notObserved(o, s);
  if (gen) return notReady(R, gen);
  const spec = specOf(o);
  const want = int(spec.replicas) ?? 1;
  const ready = int(s.readyReplicas) ?? 0;
  const strategy = asPlainObject(spec.updateStrategy);
  const type = typeof strategy.type === 'string' ? strategy.type : 'RollingUpdate';
  if (type === 'RollingUpdate') {
    const partition = int(asPlainObject(strategy.rollingUpdate).partition) ?? 0;
    const updated = int(s.updatedReplicas) ?? 0;
    if (partition > 0) {
      // A partitioned rollout stops at the partition by design: never "all current".
      const target = Math.max(0, want - partition);
      if (updated < target) return notReady(R, `${updated}/${target} replicas updated`);
    } else {
      if (updated < want) return notReady(R, `${updated}/${want} replicas updated`);
      if (s.currentRevision !== s.updateRevision) return notReady(R, `rolling update to revision ${String(s.updateRevision)} in progress`);
    }
  }
  if (ready < want) return notReady(R, `${ready}/${want} replicas ready`);
  return READY;
}

function daemonSet(o: KubeObject): ObjectReadiness {
  const R = ReadinessReasons.daemonSetNotReady;
  const s = statusOf(o);
  const gen = notObserved(o, s);
  if (gen) return notReady(R, gen);
  const desired = int(s.desiredNumberScheduled) ?? 0;
  const updated = int(s.updatedNumberScheduled) ?? 0;
  const ready = int(s.numberReady) ?? 0;
  if (updated < desired) return notReady(R, `${updated}/${desired} pods updated`);
  if (ready < desired) return notReady(R, `${ready}/${desired} pods ready`);
  return READY;
}

function job(o: KubeObject): ObjectReadiness {
  const s = statusOf(o);
  const failedCond = condition(s, 'Failed');
  if (failedCond?.status === 'True') {
    return failed(ReadinessReasons.jobFailed, `failed${suffix(failedCond.reason)}${failedCond.message ? `: ${failedCond.message}` : ''}`);
  }
  if (condition(s, 'Complete')?.status === 'True') return READY;
  const completions = int(specOf(o).completions) ?? 1;
  return notReady(ReadinessReasons.jobNotComplete, `${int(s.succeeded) ?? 0}/${completions} completions`);
}

function pvc(o: KubeObject): ObjectReadiness {
  const phase = statusOf(o).phase;
  if (phase === 'Bound') return READY;
  return notReady(ReadinessReasons.pvcNotBound, `phase ${typeof phase === 'string' ? phase : 'unknown'}`);
}

function service(o: KubeObject): ObjectReadiness {
  if (specOf(o).type !== 'LoadBalancer') return READY;
  const ingress = asPlainObject(statusOf(o).loadBalancer).ingress;
  if (Array.isArray(ingress) && ingress.length > 0) return READY;
  return notReady(ReadinessReasons.loadBalancerPending, 'no load balancer address yet');
}

function pod(o: KubeObject): ObjectReadiness {
  const s = statusOf(o);
  if (s.phase === 'Succeeded') return READY;
  if (s.phase === 'Failed') return failed(ReadinessReasons.podFailed, `failed${suffix(typeof s.reason === 'string' ? s.reason : undefined)}`);
  if (condition(s, 'Ready')?.status === 'True') return READY;
  return notReady(ReadinessReasons.podNotReady, `not ready (phase ${typeof s.phase === 'string' ? s.phase : 'unknown'})`);
}

/** Why the controller's status is not about the current spec yet, if it is not. */
function notObserved(o: KubeObject, s: Record<string, unknown>): string | undefined {
  const generation = o.metadata.generation;
  if (generation === undefined) return undefined;
  const observed = int(s.observedGeneration);
  if (observed === undefined || observed < generation) return `waiting for the controller to observe generation ${generation}`;
  return undefined;
}

interface Condition {
  status?: string;
  reason?: string;
  message?: string;
}

function condition(status: Record<string, unknown>, type: string): Condition | undefined {
  const conditions = status.conditions;
  if (!Array.isArray(conditions)) return undefined;
  const c: unknown = conditions.find((x: unknown) => asPlainObject(x).type === type);
  if (c === undefined) return undefined;
  const r = asPlainObject(c);
  return {
    status: typeof r.status === 'string' ? r.status : undefined,
    reason: typeof r.reason === 'string' ? r.reason : undefined,
    message: typeof r.message === 'string' ? r.message : undefined,
  };
}

function notReady(reason: string, detail: string): ObjectReadiness {
  return { ready: false, failed: false, reason, detail };
}

function failed(reason: string, detail: string): ObjectReadiness {
  return { ready: false, failed: true, reason, detail };
}

function suffix(text: string | undefined): string {
  return text ? ` (${text})` : '';
}

function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

function statusOf(o: KubeObject): Record<string, unknown> {
  return asPlainObject(o.status);
}

function specOf(o: KubeObject): Record<string, unknown> {
  return asPlainObject(o.spec);
}

function int(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}
