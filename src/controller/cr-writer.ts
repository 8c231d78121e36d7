/** Writes to the custom resource itself: its status subresource and its finalizers. */
import type { KubeClient } from '../kube/rest.js';
import { isNotFound } from '../kube/errors.js';
import { mergePatchObject, type ObjectAddress } from '../kube/objects.js';
import type { ApiResource, KubeObject } from '../kube/types.js';
import type { CrWriter } from '../reconcile/ports.js';
import type { CrStatus, CustomResource } from '../reconcile/model.js';

/** A merge patch that also clears the status keys (at any depth) the new status no longer has. */
export function statusMergePatch(previous: CrStatus | undefined, next: CrStatus): Record<string, unknown> {
  return { status: mergePatchFrom(previous ?? {}, next) };
}

/** RFC 7386: `next`, with null for each key `previous` has and `next` lacks; objects in both diffed alike (arrays are replaced whole). */
function mergePatchFrom(previous: Readonly<Record<string, unknown>>, next: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const patch: Record<string, unknown> = { ...next };
  for (const [key, was] of Object.entries(previous)) {
    if (!(key in next)) patch[key] = null;
    else if (isPlainObject(was) && isPlainObject(next[key])) patch[key] = mergePatchFrom(was, next[key]);
  }
  return patch;
}

function isPlainObject(v: unknown): v is Readonly<Record<string, unknown>> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * `onWritten`: told of every write (finalizers, status), with the resourceVersion the writer
 * started from and the object the API server returned, so the controller can tell a cache that
 * has not caught up with our own writes from a change made by someone else.
 */
export function createCrWriter(client: KubeClient, resource: ApiResource, onWritten?: (from: string | undefined, written: KubeObject) => void): CrWriter {
  const at = (cr: CustomResource): ObjectAddress => ({ resource, namespace: cr.metadata.namespace, name: cr.metadata.name });
  // Only an answer that is the object (the API server's always is) tells which version was made.
  const told = (cr: CustomResource, written: unknown): void => {
    const meta = (written as Partial<KubeObject> | undefined)?.metadata;
    if (meta?.name !== undefined) onWritten?.(cr.metadata.resourceVersion, written as KubeObject);
  };
  return {
    async patchStatus(cr, status) {
      try {
        const written = await mergePatchObject(client, at(cr), statusMergePatch(cr.status, status), { subresource: 'status' });
        told(cr, written);
        return (written as Partial<KubeObject> | undefined)?.metadata?.resourceVersion;
      } catch (err) {
        // The resource is gone (deleted after its finalizer was removed): nothing to report on.
        if (isNotFound(err)) return undefined;
        throw err;
      }
    },
    async setFinalizers(cr, finalizers) {
      // resourceVersion makes this a compare-and-swap: a concurrent change → 409 → retried.
      const written = await mergePatchObject<CustomResource & KubeObject>(client, at(cr), { metadata: { finalizers, resourceVersion: cr.metadata.resourceVersion } });
      told(cr, written);
      return written;
    },
  };
}
