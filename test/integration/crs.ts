// Custom resources of a test kind: write them, read them, wait for their status; and what the
// operator made of them (Helm releases, events).
import { applyObject, createObject } from '../../src/kube/objects.js';
import type { ApiResource } from '../../src/kube/types.js';
import { resourceOf, type TestKind } from './crd.js';
import type { TestCluster } from './harness.js';
import type { RunningOperator } from './operator.js';
import { logTail } from './operator-log.js';
import { explained, waitFor } from './wait.js';

export interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}

export interface Cr {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata: {
    name: string;
    namespace?: string;
    generation?: number;
    finalizers?: string[];
    uid?: string;
    creationTimestamp?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  readonly spec?: unknown;
  readonly status?: {
    observedGeneration?: number;
    conditions?: Condition[];
    deployedRelease?: { name: string; revision?: number; chart?: string; version?: string; appVersion?: string };
  };
}

export function condition(cr: Cr | undefined, type: string): Omit<Condition, 'type'> | undefined {
  return cr?.status?.conditions?.find((c) => c.type === type);
}

/** The CR's Deployed condition is True. */
export const isDeployed = (cr: Cr): boolean => condition(cr, 'Deployed')?.status === 'True';

/** The JSON of a CR of `k` (for kubectl apply/create). */
export function crJson(k: TestKind, namespace: string, name: string, spec: unknown, metadata: { annotations?: Record<string, string>; labels?: Record<string, string> } = {}): string {
  return JSON.stringify({ apiVersion: `${k.group}/${k.version}`, kind: k.kind, metadata: { name, namespace, ...metadata }, spec });
}

export async function getCr(cluster: TestCluster, k: TestKind, namespace: string, name: string): Promise<Cr | undefined> {
  const r = await cluster.kubectl(['get', resourceOf(k), name, '-n', namespace, '-o', 'json'], { allowFail: true });
  if (r.exitCode !== 0) return undefined;
  return JSON.parse(r.stdout) as Cr;
}

/**
 * The CRs of one test kind in one namespace. Waits fail with the last status seen and the log
 * tail of `op`, the operator serving them (when given).
 */
export interface Crs {
  readonly kind: TestKind;
  readonly ns: string;
  /** Server-side apply of a CR with this spec (and annotations, which replace any it had). */
  apply(name: string, spec: unknown, annotations?: Record<string, string>): Promise<void>;
  /** A plain create (POST), as `kubectl create`: fails when the CR exists. */
  create(name: string, spec: unknown): Promise<void>;
  get(name: string): Promise<Cr | undefined>;
  /** Waits until the CR satisfies `test` (90 s unless timeoutMs), and returns it. */
  until(name: string, what: string, test: (cr: Cr) => boolean, timeoutMs?: number): Promise<Cr>;
  /** until Deployed=True. */
  deployed(name: string, timeoutMs?: number): Promise<Cr>;
  /** `kubectl delete --wait=false`: the operator's finalizer decides when it is gone. */
  delete(name: string): Promise<void>;
  /** Waits until the CR no longer exists (90 s unless timeoutMs). */
  gone(name: string, timeoutMs?: number): Promise<void>;
}

/** `k` as the API resource src/kube's calls address (test kinds are namespaced). */
function apiResourceOf(k: TestKind): ApiResource {
  return { group: k.group, version: k.version, apiVersion: `${k.group}/${k.version}`, kind: k.kind, plural: k.plural, namespaced: true };
}

export function crsOf(cluster: TestCluster, kind: TestKind, ns: string, op?: RunningOperator): Crs {
  const resource = apiResourceOf(kind);
  const crs: Crs = {
    kind,
    ns,
    // Server-side apply in this process (~0.2 CPU-s less than a kubectl process per call): the
    // test's field manager owns what it applied, so a field or annotation it drops from one apply
    // to the next is removed, as kubectl apply's last-applied merge removes it.
    apply: async (name, spec, annotations) => {
      const body = crJson(kind, ns, name, spec, annotations === undefined ? {} : { annotations });
      await applyObject(cluster.api(), { resource, namespace: ns, name }, body, { fieldManager: 'chartpilot-test', force: true });
    },
    // create and delete in this process: the same request kubectl makes, without its process.
    create: async (name, spec) => {
      await createObject(cluster.api(), resource, ns, crJson(kind, ns, name, spec));
    },
    get: (name) => getCr(cluster, kind, ns, name),
    until: (name, what, test, timeoutMs = 90_000) => {
      let last: Cr | undefined;
      return explained(
        waitFor(
          `${name}: ${what}`,
          async () => {
            last = await getCr(cluster, kind, ns, name);
            return last !== undefined && test(last) ? last : undefined;
          },
          { timeoutMs },
        ),
        () => `last status: ${JSON.stringify(last?.status)}${op === undefined ? '' : `\n${logTail(op)}`}`,
      );
    },
    deployed: (name, timeoutMs) => crs.until(name, 'Deployed', isDeployed, timeoutMs),
    delete: async (name) => {
      // Not objects.ts's deleteObject: that one takes a missing CR for success, and sets no propagation policy.
      const api = cluster.api();
      await api.request('DELETE', api.pathFor(resource, ns, name), { query: { propagationPolicy: 'Background' } });
    },
    gone: async (name, timeoutMs = 90_000) => {
      await waitFor(`${name} gone`, async () => (await getCr(cluster, kind, ns, name)) === undefined, { timeoutMs });
    },
  };
  return crs;
}

export interface HelmListEntry {
  name: string;
  namespace: string;
  revision: string | number;
  status: string;
  chart: string;
}

/** Every Helm release in `namespace`, whatever its status. */
export async function helmList(cluster: TestCluster, namespace: string): Promise<HelmListEntry[]> {
  const r = await cluster.helm(['list', '-n', namespace, '--deployed', '--failed', '--pending', '--superseded', '--uninstalling', '-o', 'json']);
  return JSON.parse(r.stdout) as HelmListEntry[];
}

export interface KubeEvent {
  reason: string;
  type: string;
  message: string;
}

/** The events about the object `name` in `namespace`. */
export async function eventsFor(cluster: TestCluster, namespace: string, name: string): Promise<KubeEvent[]> {
  const r = await cluster.kubectl(['get', 'events', '-n', namespace, '--field-selector', `involvedObject.name=${name}`, '-o', 'json']);
  return (JSON.parse(r.stdout) as { items: KubeEvent[] }).items;
}
