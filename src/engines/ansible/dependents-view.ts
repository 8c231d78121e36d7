/**
 * The dependents of an Ansible CR as the shared dependent watcher caches them, or read fresh.
 * Only objects within the CR's confinement are looked at, whatever a record on the CR lists.
 */
import type { Logger } from 'pino';
import type { DependentWatcher } from '../../dependents/watcher.js';
import { findObject } from '../../kube/objects.js';
import type { KubeClient } from '../../kube/rest.js';
import { errorMessage } from '../../lib/errors.js';
import { isAllowedTarget } from '../../core/confinement.js';
import type { ObjectRef } from '../../core/model.js';
import type { Confinement } from '../../core/confinement.js';
import type { DependentsView, LiveObject } from './ports.js';

export interface DependentsViewOptions {
  readonly client: KubeClient;
  readonly watcher: Pick<DependentWatcher, 'ensureWatching' | 'waitForSync' | 'waitForOwner' | 'isWatching' | 'get'>;
  readonly log: Logger;
  /** How long to wait for a newly watched kind's first LIST; default 20 s. */
  readonly syncTimeoutMs?: number;
}

export function createDependentsView(opts: DependentsViewOptions): DependentsView {
  const allowed = async (refs: readonly ObjectRef[], c: Confinement): Promise<ObjectRef[]> => {
    const out: ObjectRef[] = [];
    for (const r of refs) {
      const resource = await opts.client.resourceFor(r.apiVersion, r.kind).catch(() => undefined);
      if (resource === undefined) continue; // the kind is gone (a CRD removed): nothing to judge
      if (isAllowedTarget(c, { namespace: r.namespace }, resource.namespaced ? 'namespaced' : 'cluster')) out.push(r);
    }
    return out;
  };
  return {
    async cached(refs, confinement, ownerUid) {
      const within = await allowed(refs, confinement);
      const kinds = new Map(within.map((r) => [`${r.apiVersion}/${r.kind}`, r]));
      for (const r of kinds.values()) {
        try {
          await opts.watcher.ensureWatching(r.apiVersion, r.kind);
        } catch (err) {
          opts.log.warn({ kind: r.kind, err: errorMessage(err) }, 'cannot watch a kind of these dependents; their drift is not noticed');
        }
      }
      const synced = AbortSignal.timeout(opts.syncTimeoutMs ?? 20_000);
      try {
        await opts.watcher.waitForSync(synced);
      } catch {
        return undefined;
      }
      // --shards: caches that do not hold this owner's share would show every object missing.
      if (!(await opts.watcher.waitForOwner(ownerUid, synced))) return undefined;
      const out: LiveObject[] = [];
      for (const r of within) {
        if (!opts.watcher.isWatching(r.apiVersion, r.kind)) continue;
        out.push({ ref: r, live: opts.watcher.get(r.apiVersion, r.kind, r.namespace, r.name) });
      }
      return out;
    },
    async fresh(refs, confinement) {
      const out: LiveObject[] = [];
      for (const r of await allowed(refs, confinement)) {
        const resource = await opts.client.resourceFor(r.apiVersion, r.kind);
        out.push({ ref: r, live: await findObject(opts.client, { resource, namespace: resource.namespaced ? r.namespace : undefined, name: r.name }) });
      }
      return out;
    },
  };
}
