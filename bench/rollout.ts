/**
 * When a Deployment counts as available and as rolled out, and when a CR counts as Ready for its
 * current spec: the predicates behind the settled wait and the per-CR Ready lag.
 */
import type { Condition } from './cluster-ops.js';

export interface DeploymentView {
  metadata: { name: string; generation?: number; resourceVersion?: string; annotations?: Record<string, string> };
  spec?: { replicas?: number };
  status?: {
    observedGeneration?: number;
    replicas?: number;
    updatedReplicas?: number;
    availableReplicas?: number;
    conditions?: Condition[];
  };
}

export interface CrReadyView {
  metadata: { name: string; generation?: number; resourceVersion?: string };
  status?: { conditions?: Condition[] };
}

/**
 * The release a Deployment belongs to: helm annotates every object it creates with its release's
 * name (charts name their objects as they like: webapp after the release, podinfo
 * `<release>-podinfo`). Without the annotation, the Deployment's own name.
 */
export function releaseOf(d: DeploymentView): string {
  return d.metadata.annotations?.['meta.helm.sh/release-name'] ?? d.metadata.name;
}

/** The Deployment's own Available condition is True (minimum availability reached). */
export function isAvailable(d: DeploymentView): boolean {
  return d.status?.conditions?.some((c) => c.type === 'Available' && c.status === 'True') === true;
}

/**
 * What `kubectl rollout status` waits for, a little stricter: the controller has seen the
 * current spec (observedGeneration ≥ generation), every wanted replica runs the current pod
 * template and is available, no pod of an older template is left, and Available=True.
 */
export function isRolledOut(d: DeploymentView): boolean {
  const want = d.spec?.replicas ?? 1;
  const s = d.status;
  if (s === undefined) return false;
  return (s.observedGeneration ?? 0) >= (d.metadata.generation ?? 1)
    && (s.updatedReplicas ?? 0) === want
    && (s.replicas ?? 0) === want
    && (s.availableReplicas ?? 0) === want
    && isAvailable(d);
}

/**
 * The CR is Ready for its current spec: Ready=True written for this very generation, and the
 * generation is at least minGeneration (an upgrade must not count the Ready of the old spec,
 * which is still there until the bench's spec patch lands).
 */
export function isReadyFor(cr: CrReadyView, minGeneration: number): boolean {
  const gen = cr.metadata.generation ?? 0;
  if (gen < minGeneration) return false;
  const ready = cr.status?.conditions?.find((c) => c.type === 'Ready');
  return ready?.status === 'True' && ready.observedGeneration === gen;
}

/** The operator writes a Ready condition that means something (not chartpilot's ReadinessNotTracked). */
export function tracksReadiness(cr: CrReadyView): boolean {
  const ready = cr.status?.conditions?.find((c) => c.type === 'Ready');
  return ready !== undefined && !(ready.status === 'Unknown' && ready.reason === 'ReadinessNotTracked');
}
