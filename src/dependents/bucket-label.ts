/**
 * Setting an object's owner-bucket label right (--shards): the label decides which replica's cache
 * holds the object, so one that is missing (an object deployed before the label existed) or names
 * another bucket (edited by someone who may edit the object) leaves the object out of its owner's
 * caches. The owner's pass writes the right value with a merge patch of that one label, guarded by
 * the resourceVersion it judged: no helm call, no new revision, no field of the chart touched.
 */
import { isConflict, isNotFound } from '../kube/errors.js';
import { mergePatchObject } from '../kube/objects.js';
import type { KubeClient } from '../kube/rest.js';
import type { ApiResource, KubeObject } from '../kube/types.js';
import { bucketOf } from '../lib/uid-bucket.js';
import { OWNER_BUCKET_LABEL, OWNER_UID_LABEL } from '../engines/helm/names.js';

/** The field manager of these writes, so `managedFields` tells who set the label. */
export const BUCKET_LABEL_MANAGER = 'chartpilot';

/**
 * The value `live`'s bucket label must be set to, or undefined when it is right, or when the object
 * does not name this owner (whose object it is, the chart's owner label says: drift repair's job)
 * or is being deleted.
 */
export function bucketLabelFix(live: KubeObject, ownerUid: string): string | undefined {
  if (ownerUid === '' || live.metadata.deletionTimestamp !== undefined) return undefined;
  const labels = live.metadata.labels ?? {};
  if (labels[OWNER_UID_LABEL] !== ownerUid) return undefined;
  const expected = String(bucketOf(ownerUid));
  return labels[OWNER_BUCKET_LABEL] === expected ? undefined : expected;
}

/**
 * Writes the owner-bucket label of `live` when bucketLabelFix says so; true when written. An
 * object changed or gone since it was read is left for the pass its watch event brings.
 */
export async function fixBucketLabel(client: KubeClient, resource: ApiResource, live: KubeObject, ownerUid: string, impersonateUser?: string): Promise<boolean> {
  const value = bucketLabelFix(live, ownerUid);
  if (value === undefined) return false;
  const at = { resource, namespace: resource.namespaced ? live.metadata.namespace : undefined, name: live.metadata.name };
  try {
    await mergePatchObject(client, at, { metadata: { resourceVersion: live.metadata.resourceVersion, labels: { [OWNER_BUCKET_LABEL]: value } } }, { fieldManager: BUCKET_LABEL_MANAGER, impersonateUser });
    return true;
  } catch (err) {
    if (isConflict(err) || isNotFound(err)) return false;
    throw err;
  }
}
