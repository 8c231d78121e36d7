/** Writes of either engine to the custom resource itself: merge patches of its status, annotations and finalizers. */
import type { CrWriter } from '../core/ports.js';
import type { CustomResource } from '../core/model.js';
import { isNotFound } from './errors.js';
import { getObject, mergePatchObject, type ObjectAddress } from './objects.js';
import type { KubeClient } from './rest.js';
import type { ApiResource, KubeObject } from './types.js';

/**
 * `onWritten`: told of every write, with the resourceVersion the writer started from and the
 * object the API server returned, so the controller can tell a cache that has not caught up with
 * our own writes from a change made by someone else.
 */
export function createCrWriter(client: KubeClient, resource: ApiResource, onWritten?: (from: string | undefined, written: KubeObject) => void): CrWriter {
  const at = (cr: CustomResource): ObjectAddress => ({ resource, namespace: cr.metadata.namespace, name: cr.metadata.name });
  // Only an answer that is the object (the API server's always is) tells which version was made.
  const told = (cr: CustomResource, written: unknown): string | undefined => {
    const meta = (written as Partial<KubeObject> | undefined)?.metadata;
    if (meta?.name === undefined) return undefined;
    onWritten?.(cr.metadata.resourceVersion, written as KubeObject);
    return meta.resourceVersion;
  };
  return {
    read: (cr) => getObject<CustomResource & KubeObject>(client, at(cr)),
    async patchStatus(cr, patch) {
      try {
        return told(cr, await mergePatchObject(client, at(cr), { status: patch }, { subresource: 'status' }));
      } catch (err) {
        // The resource is gone (deleted after its finalizer was removed): nothing to report on.
        if (isNotFound(err)) return undefined;
        throw err;
      }
    },
    async patchAnnotations(cr, annotations) {
      told(cr, await mergePatchObject(client, at(cr), { metadata: { annotations } }));
    },
    async setFinalizers(cr, finalizers) {
      // resourceVersion makes this a compare-and-swap: a concurrent change → 409 → retried.
      const written = await mergePatchObject<CustomResource & KubeObject>(client, at(cr), { metadata: { finalizers, resourceVersion: cr.metadata.resourceVersion } });
      told(cr, written);
      return written;
    },
  };
}
