/**
 * Helm's release records, read straight from the Secrets Helm stores them in — metadata only, so
 * deciding "is this release current?" costs one small LIST and no helm process.
 */
import type { KubeClient } from '../kube/rest.js';
import { KubeApiError } from '../kube/errors.js';
import type { KubeList } from '../kube/types.js';
import { ReleaseLabels } from '../reconcile/names.js';
import type { ReleaseStore } from '../reconcile/ports.js';
import type { StoredRevision } from '../reconcile/types.js';

const METADATA_LIST = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';

/** Helm's storage labels on every release Secret (driver "secret", Helm's default). */
export function revisionFromLabels(secretName: string, labels: Readonly<Record<string, string>>, createdAt: string | undefined): StoredRevision | undefined {
  const revision = Number(labels.version);
  if (!Number.isInteger(revision) || revision < 1) return undefined;
  return {
    revision,
    status: labels.status ?? 'unknown',
    fingerprint: labels[ReleaseLabels.fingerprint],
    ownerKind: labels[ReleaseLabels.ownerKind],
    createdAt,
    secretName,
  };
}

export function createReleaseStore(client: KubeClient): ReleaseStore {
  return {
    async revisions(namespace, release) {
      // An empty metadata-only list comes back with `items: null`.
      const list = await client.request<Omit<KubeList, 'items'> & { items: KubeList['items'] | null }>('GET', `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets`, {
        query: { labelSelector: `owner=helm,name=${release}` },
        accept: METADATA_LIST,
      });
      const out: StoredRevision[] = [];
      for (const item of list.items ?? []) {
        const r = revisionFromLabels(item.metadata.name, item.metadata.labels ?? {}, item.metadata.creationTimestamp);
        if (r !== undefined) out.push(r);
      }
      return out;
    },
    async deleteRevision(namespace, revision) {
      try {
        await client.request('DELETE', `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets/${encodeURIComponent(revision.secretName)}`);
      } catch (err) {
        if (!(err instanceof KubeApiError && err.status === 404)) throw err;
      }
    },
  };
}
