/** Writes to the custom resource itself: its status subresource and its finalizers. */
import type { KubeClient } from '../kube/rest.js';
import { KubeApiError } from '../kube/errors.js';
import type { ApiResource } from '../kube/types.js';
import type { CrWriter } from '../reconcile/ports.js';
import type { CrStatus, CustomResource } from '../reconcile/types.js';

/** A merge patch that also clears top-level status keys the new status no longer has. */
export function statusMergePatch(previous: CrStatus | undefined, next: CrStatus): Record<string, unknown> {
  const patch: Record<string, unknown> = { ...next };
  for (const key of Object.keys(previous ?? {})) {
    if (!(key in next)) patch[key] = null;
  }
  return { status: patch };
}

export function createCrWriter(client: KubeClient, resource: ApiResource): CrWriter {
  const path = (cr: CustomResource, sub?: string): string =>
    client.pathFor(resource, resource.namespaced ? cr.metadata.namespace : undefined, cr.metadata.name, sub);
  return {
    async patchStatus(cr, status) {
      try {
        await client.request('PATCH', path(cr, 'status'), {
          body: statusMergePatch(cr.status, status),
          contentType: 'application/merge-patch+json',
        });
      } catch (err) {
        // The resource is gone (deleted after its finalizer was removed): nothing to report on.
        if (err instanceof KubeApiError && err.status === 404) return;
        throw err;
      }
    },
    async setFinalizers(cr, finalizers) {
      // resourceVersion makes this a compare-and-swap: a concurrent change → 409 → retried.
      return client.request<CustomResource>('PATCH', path(cr), {
        body: { metadata: { finalizers, resourceVersion: cr.metadata.resourceVersion } },
        contentType: 'application/merge-patch+json',
      });
    },
  };
}
