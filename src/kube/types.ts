/**
 * The shapes of Kubernetes objects as this operator handles them: untyped beyond metadata, because
 * charts create arbitrary kinds and the operator never needs more than metadata to route events.
 */

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  deletionTimestamp?: string;
  finalizers?: string[];
  managedFields?: unknown[];
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

export interface ListMeta {
  resourceVersion?: string;
  continue?: string;
  remainingItemCount?: number;
}

export interface KubeList<T extends KubeObject = KubeObject> {
  apiVersion?: string;
  kind?: string;
  metadata: ListMeta;
  items: T[];
}

/** metav1.Status, as returned for errors and inside watch ERROR events. */
export interface KubeStatus {
  kind?: 'Status';
  apiVersion?: string;
  status?: 'Success' | 'Failure';
  message?: string;
  reason?: string;
  code?: number;
  details?: {
    name?: string;
    group?: string;
    kind?: string;
    uid?: string;
    causes?: { reason?: string; message?: string; field?: string }[];
    retryAfterSeconds?: number;
  };
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

/** A resource as found by discovery: everything needed to build its URLs. */
export interface ApiResource {
  group: string;
  version: string;
  apiVersion: string;
  kind: string;
  plural: string;
  namespaced: boolean;
}

/** Cache key of an object: `namespace/name` for namespaced objects, `name` otherwise. */
export function objectKey(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

export function keyOf(obj: KubeObject): string {
  return objectKey(obj.metadata.namespace, obj.metadata.name);
}
