/**
 * Helm's release records, read straight from the Secrets Helm stores them in — metadata only, so
 * deciding "is this release current?" costs one small LIST and no helm process.
 */
import type { KubeClient } from '../kube/rest.js';
import { CoreResources, deleteObject, listObjects } from '../kube/objects.js';
import { ReleaseLabels } from '../reconcile/names.js';
import type { ReleaseStore } from '../reconcile/ports.js';
import type { StoredRevision } from '../reconcile/types.js';

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
      const list = await listObjects(client, CoreResources.secret, namespace, { labelSelector: `owner=helm,name=${release}`, metadataOnly: true });
      const out: StoredRevision[] = [];
      for (const item of list.items) {
        const r = revisionFromLabels(item.metadata.name, item.metadata.labels ?? {}, item.metadata.creationTimestamp);
        if (r !== undefined) out.push(r);
      }
      return out;
    },
    async deleteRevision(namespace, revision) {
      await deleteObject(client, { resource: CoreResources.secret, namespace, name: revision.secretName });
    },
  };
}
