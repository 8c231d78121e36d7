/**
 * The objects kinds with `valuesFrom` reference: read when a CR is reconciled (a CR's own as its
 * tenant, the entry's as the operator), and watched, so that a change re-checks exactly the CRs
 * that reference the object, at once. The watch is metadata-only (no data is cached: what a key
 * holds is read by the reconcile that uses it) and started per kind and namespace scope the first
 * time a reference needs it. Only the referenced keys reach the fingerprint (config/values-from.ts),
 * so an update of another key re-checks the CR and upgrades nothing.
 */
import type { Logger } from 'pino';
import { Informer } from '../kube/informer.js';
import { isForbidden } from '../kube/errors.js';
import { CoreResources, findObject } from '../kube/objects.js';
import type { KubeClient } from '../kube/rest.js';
import type { ApiResource, KubeObject } from '../kube/types.js';
import type { ReferencedValues, ReferencesRead, SplitSpec, ValuesFromSettings, ValuesSourceKind, ValuesSources } from '../core/values-from.js';
import { ValuesFromReasons } from '../core/values-from.js';
import { composeReferenced, keyHashes, planReads, splitSpec, type FetchedObject, type PlannedRead } from '../config/values-from.js';
import { isPlainObject } from '../lib/json.js';

export interface ReferencedObjectsOptions {
  readonly client: KubeClient;
  /** Namespaces the operator watches; [] = all (one cluster-wide watch per kind). */
  readonly namespaces: readonly string[];
  /** Where the entries' own references are read. */
  readonly operatorNamespace: string;
  readonly log: Logger;
}

const RESOURCES: Readonly<Record<ValuesSourceKind, ApiResource>> = {
  Secret: CoreResources.secret,
  ConfigMap: { group: '', version: 'v1', apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true },
};
const ALL = '';

/** `kind/namespace/name`: one referenced object. */
function objectId(kind: string, namespace: string, name: string): string {
  return `${kind}/${namespace}/${name}`;
}

/** The referenced objects of every kind's CRs, and the watches that tell their changes. */
export class ReferencedObjects {
  /** Object → the CRs (owner keys) that reference it. */
  private readonly referrers = new Map<string, Set<string>>();
  /** Owner key → the objects it references, and whom to tell. */
  private readonly references = new Map<string, { readonly ids: ReadonlySet<string>; readonly tell: () => void }>();
  private readonly informers = new Map<string, Informer<KubeObject>>();
  /** Each referenced object as last read: its resourceVersion and each key's SHA-256 (never its data). */
  private readonly lastRead = new Map<string, { readonly resourceVersion: string; readonly hashes: Readonly<Record<string, string>> }>();
  private stopped = false;

  constructor(private readonly opts: ReferencedObjectsOptions) {}

  /** The port one kind's reconciler reads through; `tell(key)` re-checks one of its CRs (should only enqueue). */
  forKind(kind: string, tell: (key: string) => void): ValuesSources {
    return {
      split: (spec: unknown, settings: ValuesFromSettings): SplitSpec => splitSpec(spec, settings),
      read: (input) => this.read(`${kind}|${input.key}`, input, () => {
        tell(input.key);
      }),
      forget: (key) => {
        this.track(`${kind}|${key}`, new Set(), () => undefined);
      },
    };
  }

  /** How many objects are referenced (metrics, tests). */
  get watchedObjects(): number {
    return this.referrers.size;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all([...this.informers.values()].map((i) => i.stop()));
  }

  private async read(owner: string, input: ReferencesRead, tell: () => void): Promise<ReferencedValues> {
    const plan = planReads(input.namespace, this.opts.operatorNamespace, input.references, input.settings);
    // Watched before read: a change while this reads is told, not lost between the two.
    this.track(owner, new Set(plan.ok ? plan.reads.map((r) => objectId(r.ref.kind, r.namespace, r.ref.name)) : []), tell);
    if (!plan.ok) return plan;
    const fetched: { read: PlannedRead; object: FetchedObject }[] = [];
    for (const read of plan.reads) {
      const id = objectId(read.ref.kind, read.namespace, read.ref.name);
      if (input.values === false) {
        const unchanged = this.unchanged(id, read.ref.kind, read.namespace, read.ref.name);
        if (unchanged !== undefined) {
          fetched.push({ read, object: { found: true, hashes: unchanged } });
          continue;
        }
      }
      const impersonate = read.asTenant ? input.tenant?.user : undefined;
      let live: KubeObject | undefined;
      try {
        live = await findObject(this.opts.client, { resource: RESOURCES[read.ref.kind], namespace: read.namespace, name: read.ref.name }, { impersonateUser: impersonate });
      } catch (err) {
        if (!isForbidden(err)) throw err;
        const who = impersonate === undefined ? 'the operator' : impersonate;
        const fix =
          impersonate === undefined
            ? `grant the operator get on ${RESOURCES[read.ref.kind].plural} in namespace ${read.namespace} (chartpilot generate rbac does for kinds with valuesFrom)`
            : `grant ServiceAccount ${input.tenant?.namespace ?? ''}/${input.tenant?.serviceAccount ?? ''} get on ${RESOURCES[read.ref.kind].plural} in namespace ${read.namespace} (chartpilot generate rbac --tenant-namespace ${read.namespace})`;
        return {
          ok: false,
          reason: ValuesFromReasons.forbidden,
          retry: true,
          problem: `${who} may not read ${read.ref.kind} ${read.namespace}/${read.ref.name} (${read.label}): ${fix}. Nothing is installed or upgraded until then; the deployed release is left as it is`,
        };
      }
      if (live === undefined) {
        this.lastRead.delete(id);
        fetched.push({ read, object: { found: false } });
        continue;
      }
      const data = dataOf(read.ref.kind, live);
      const rv = live.metadata.resourceVersion;
      if (rv !== undefined && this.referrers.has(id)) this.lastRead.set(id, { resourceVersion: rv, hashes: keyHashes(data) });
      fetched.push({ read, object: { found: true, data } });
    }
    return composeReferenced(fetched);
  }

  /** The key hashes of `id` as last read, when its watch (listed, live) shows the same resourceVersion now. */
  private unchanged(id: string, kind: ValuesSourceKind, namespace: string, name: string): Readonly<Record<string, string>> | undefined {
    const last = this.lastRead.get(id);
    if (last === undefined) return undefined;
    const informer = this.informers.get(`${kind}/${this.opts.namespaces.length === 0 ? ALL : namespace}`);
    if (informer === undefined || !informer.hasSynced()) return undefined;
    return informer.get(namespace, name)?.metadata.resourceVersion === last.resourceVersion ? last.hashes : undefined;
  }

  private track(owner: string, ids: ReadonlySet<string>, tell: () => void): void {
    const before = this.references.get(owner);
    for (const id of before?.ids ?? []) {
      if (ids.has(id)) continue;
      const set = this.referrers.get(id);
      set?.delete(owner);
      if (set?.size === 0) {
        this.referrers.delete(id);
        this.lastRead.delete(id);
      }
    }
    if (ids.size === 0) {
      this.references.delete(owner);
      return;
    }
    this.references.set(owner, { ids, tell });
    for (const id of ids) {
      let set = this.referrers.get(id);
      if (set === undefined) this.referrers.set(id, (set = new Set()));
      set.add(owner);
      this.watch(id);
    }
  }

  /** Starts the watch that covers `id`'s kind and namespace, once. */
  private watch(id: string): void {
    const [kind = '', namespace = ''] = id.split('/');
    const scope = this.opts.namespaces.length === 0 ? ALL : namespace;
    const key = `${kind}/${scope}`;
    if (this.stopped || this.informers.has(key)) return;
    const resource = RESOURCES[kind as ValuesSourceKind];
    const changed = (obj: KubeObject): void => {
      const owners = this.referrers.get(objectId(kind, obj.metadata.namespace ?? '', obj.metadata.name));
      for (const owner of owners ?? []) this.references.get(owner)?.tell();
    };
    const informer = new Informer<KubeObject>({
      client: this.opts.client,
      resource,
      ...(scope === ALL ? {} : { namespace: scope }),
      metadataOnly: true,
      // Names are all a change needs: the cache keeps nothing else of anyone's Secrets.
      transform: (obj) => ({ apiVersion: obj.apiVersion, kind: obj.kind, metadata: { name: obj.metadata.name, namespace: obj.metadata.namespace, uid: obj.metadata.uid, resourceVersion: obj.metadata.resourceVersion } }),
      log: this.opts.log,
      // The first LIST's adds are told too: an object made between a reconcile's read and this
      // watch's start is then not missed (a converged CR looks once more, and upgrades nothing).
      handlers: { onAdd: changed, onUpdate: (_old, obj) => { changed(obj); }, onDelete: changed },
    });
    this.informers.set(key, informer);
    informer.start();
    this.opts.log.info({ kind, namespace: scope === ALL ? 'all' : scope }, 'watching referenced objects: a kind reads values from them');
  }
}

/** A Secret's data decoded, or a ConfigMap's data (text per key). */
function dataOf(kind: ValuesSourceKind, obj: KubeObject): Record<string, string> {
  const raw = (obj as { data?: unknown }).data;
  const out: Record<string, string> = {};
  if (!isPlainObject(raw)) return out;
  for (const [k, v] of Object.entries(raw)) {
    if (typeof v !== 'string') continue;
    Object.defineProperty(out, k, { value: kind === 'Secret' ? Buffer.from(v, 'base64').toString('utf8') : v, enumerable: true, writable: true, configurable: true });
  }
  return out;
}
