/** Writes of an Ansible kind's reconciler to the CR itself: merge patches of chartpilot's own keys only. */
import { getObject, mergePatchObject, type ObjectAddress } from '../kube/objects.js';
import { isNotFound } from '../kube/errors.js';
import type { KubeClient } from '../kube/rest.js';
import type { ApiResource, KubeObject } from '../kube/types.js';
import type { CustomResource } from '../reconcile/model.js';
import type { AnsibleCrWriter } from './reconciler.js';

/** `onWritten`: every write, with the version it started from and the object made (the controller skips its echoes). */
export function createAnsibleCrWriter(client: KubeClient, resource: ApiResource, onWritten?: (from: string | undefined, written: KubeObject) => void): AnsibleCrWriter {
  const at = (cr: CustomResource): ObjectAddress => ({ resource, namespace: cr.metadata.namespace, name: cr.metadata.name });
  const told = (cr: CustomResource, written: unknown): void => {
    const meta = (written as Partial<KubeObject> | undefined)?.metadata;
    if (meta?.name !== undefined) onWritten?.(cr.metadata.resourceVersion, written as KubeObject);
  };
  return {
    read: (cr) => getObject<CustomResource & KubeObject>(client, at(cr)),
    async patchStatus(cr, patch) {
      try {
        told(cr, await mergePatchObject(client, at(cr), { status: patch }, { subresource: 'status' }));
      } catch (err) {
        if (isNotFound(err)) return; // deleted meanwhile: nothing to report on
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
