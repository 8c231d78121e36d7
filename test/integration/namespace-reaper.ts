// Clears what keeps a finished test's namespace from going away. Tests stop their operators and
// then delete their namespaces; CRs that still carry an operator's finalizer hold such a namespace
// in Terminating for the rest of the run, and kube-controller-manager's namespace controller sweeps
// every one of them again about once a second: a DELETE of the collection and a LIST of every
// namespaced type (~125 with the tests' CRDs) per sweep. Measured mid-run with ~45 namespaces held
// that way: ~350 requests/s, 92 % of all the API server served, for most of the run (it burned
// about half a core of the API server plus etcd and the controller manager's share).
//
// The reaper runs in the test runner's process (global-setup.ts): every few seconds it lists the
// namespaces the harness made (label chartpilot.test/namespace, newNamespace in harness.ts) and,
// for each one terminating for longer than the grace period, removes the finalizers of the objects
// its conditions say remain. No test deletes a namespace of its own before it ends (newNamespace
// deletes it in the test's after hook), so nothing a test still watches is touched.
import { isNotFound } from '../../src/kube/errors.js';
import type { KubeClient } from '../../src/kube/rest.js';

/** The label newNamespace (harness.ts) puts on every namespace it makes. */
export const TEST_NAMESPACE_LABEL = 'chartpilot.test/namespace';

interface Condition {
  readonly type: string;
  readonly status: string;
  readonly message?: string;
}

export interface NamespaceObject {
  readonly metadata: { readonly name: string; readonly deletionTimestamp?: string };
  readonly status?: { readonly conditions?: readonly Condition[] };
}

interface ObjectList {
  readonly items: readonly { readonly metadata: { readonly name: string; readonly finalizers?: readonly string[] } }[];
}

interface ApiGroup {
  readonly preferredVersion?: { readonly version: string };
}

/**
 * The resources (`plural.group`, or `plural` for the core group) that the namespace controller
 * reports as remaining in `ns`: its NamespaceContentRemaining condition reads "Some resources are
 * remaining: <resource> has <n> resource instances, …", a core one as `configmaps.`
 * (kube-controller-manager v1.33). Empty when nothing is reported.
 */
export function remainingResources(ns: NamespaceObject): string[] {
  const condition = ns.status?.conditions?.find((c) => c.type === 'NamespaceContentRemaining' && c.status === 'True');
  // A core-group resource reads `configmaps.` (GroupResource with an empty group, then a dot).
  const found = [...(condition?.message ?? '').matchAll(/([a-z0-9][a-z0-9.-]*) has \d+ resource instances/gu)].map((m) => (m[1] ?? '').replace(/\.$/u, ''));
  return [...new Set(found.filter((r) => r !== ''))];
}

/** Whether `ns` has been terminating for at least graceMs at `now`. */
export function terminatingLongerThan(ns: NamespaceObject, graceMs: number, now: number): boolean {
  const since = ns.metadata.deletionTimestamp === undefined ? Number.NaN : Date.parse(ns.metadata.deletionTimestamp);
  return Number.isFinite(since) && now - since >= graceMs;
}

export interface NamespaceReaper {
  stop(): Promise<void>;
}

export interface NamespaceReaperOptions {
  readonly intervalMs?: number;
  /** How long a namespace must have been terminating before its leftovers lose their finalizers. */
  readonly graceMs?: number;
  /** Told about a failed sweep (the next one tries again). */
  readonly onError?: (err: unknown) => void;
  /** Which namespaces it looks after; default the harness's label. */
  readonly labelSelector?: string;
  /** Told after it removed the finalizers of `count` objects in `namespace`. */
  readonly onCleared?: (namespace: string, count: number) => void;
}

/** Starts sweeping; the timer does not keep the process alive. */
export function startNamespaceReaper(client: KubeClient, opts: NamespaceReaperOptions = {}): NamespaceReaper {
  const intervalMs = opts.intervalMs ?? 3000;
  // Long enough for a live operator to take its own finalizer off (it does within a second or two).
  const graceMs = opts.graceMs ?? 10_000;
  const versions = new Map<string, string>();
  let running: Promise<void> | undefined;
  let stopped = false;

  const collectionPath = async (resource: string, namespace: string): Promise<string> => {
    const dot = resource.indexOf('.');
    if (dot < 0) return `/api/v1/namespaces/${namespace}/${resource}`;
    const plural = resource.slice(0, dot);
    const group = resource.slice(dot + 1);
    let version = versions.get(group);
    if (version === undefined) {
      version = (await client.request<ApiGroup>('GET', `/apis/${group}`)).preferredVersion?.version;
      if (version === undefined) throw new Error(`no preferred version for API group ${group}`);
      versions.set(group, version);
    }
    return `/apis/${group}/${version}/namespaces/${namespace}/${plural}`;
  };

  const sweep = async (): Promise<void> => {
    const namespaces = await client.request<{ items: NamespaceObject[] }>('GET', '/api/v1/namespaces', { query: { labelSelector: opts.labelSelector ?? TEST_NAMESPACE_LABEL } });
    const now = Date.now();
    for (const ns of namespaces.items) {
      if (stopped) return;
      if (!terminatingLongerThan(ns, graceMs, now)) continue;
      let cleared = 0;
      for (const resource of remainingResources(ns)) {
        const path = await collectionPath(resource, ns.metadata.name);
        const list = await client.request<ObjectList>('GET', path);
        for (const obj of list.items) {
          if ((obj.metadata.finalizers ?? []).length === 0) continue;
          try {
            await client.request('PATCH', `${path}/${encodeURIComponent(obj.metadata.name)}`, {
              body: { metadata: { finalizers: null } },
              contentType: 'application/merge-patch+json',
            });
            cleared++;
          } catch (err) {
            // Gone meanwhile: what the reaper wanted.
            if (!isNotFound(err)) throw err;
          }
        }
      }
      if (cleared > 0) opts.onCleared?.(ns.metadata.name, cleared);
    }
  };

  const timer = setInterval(() => {
    if (running !== undefined) return;
    running = sweep()
      .catch((err: unknown) => opts.onError?.(err))
      .finally(() => { running = undefined; });
  }, intervalMs);
  timer.unref();

  return {
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
