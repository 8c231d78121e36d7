/**
 * A member lets go of one CR: once nothing of it runs here any more, it removes the CR's shard
 * and drain labels (the acknowledgement), so the sharder may give it to another member. Only
 * while the label still names this member: a CR the sharder already reassigned is left alone.
 */
import { isConflict, isNotFound } from '../../kube/errors.js';
import { findObject, mergePatchObject } from '../../kube/objects.js';
import type { KubeClient } from '../../kube/rest.js';
import type { ApiResource } from '../../kube/types.js';
import { drainLabel, shardLabel } from './names.js';

const ATTEMPTS = 5;

/** Resolves true when the labels were removed, false when the CR is gone or no longer this member's. */
export async function acknowledge(client: KubeClient, resource: ApiResource, at: { namespace: string | undefined; name: string }, ring: string, member: string): Promise<boolean> {
  const address = { resource, namespace: at.namespace, name: at.name };
  for (let attempt = 1; ; attempt++) {
    const obj = await findObject(client, address);
    if (obj?.metadata.labels?.[shardLabel(ring)] !== member) return false;
    try {
      await mergePatchObject(client, address, { metadata: { resourceVersion: obj.metadata.resourceVersion, labels: { [shardLabel(ring)]: null, [drainLabel(ring)]: null } } });
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      // Written meanwhile (a status write landing, the sharder's drain label): read it again.
      if (!isConflict(err) || attempt >= ATTEMPTS) throw err;
    }
  }
}
