/**
 * What a run's writes say about whose objects they are, as ansible-operator's proxy does
 * (inject_owner.go): an object the CR can own (same namespace, or any object of a cluster-scoped
 * CR) gets an ownerReference to it, so the garbage collector removes it with the CR; any other
 * gets operator-sdk's `primary-resource` annotations, which an ownerReference across namespaces
 * could not express. Both also get chartpilot's owner labels (uid and uid bucket), so the dependent
 * watches find them (with --shards, only the replica whose share the bucket is).
 * Pure: it edits the body the proxy will send.
 */
import { getOwn, isPlainMap, setOwn, type PlainMap } from '../lib/json.js';
import { ownerLabels, PRIMARY_RESOURCE_ANNOTATION, PRIMARY_RESOURCE_TYPE_ANNOTATION } from '../engines/helm/names.js';

/** The custom resource a run reconciles. */
export interface SessionOwner {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  /** '' or undefined for a cluster-scoped kind. */
  readonly namespace?: string | undefined;
  readonly uid: string;
}

export type Placement = 'owned' | 'annotated';

/** Whether an object at (`scope`, `namespace`) can carry an ownerReference to `owner`. */
export function placementOf(owner: SessionOwner, scope: 'namespaced' | 'cluster', namespace: string | undefined): Placement {
  const ownerNamespace = owner.namespace ?? '';
  if (ownerNamespace === '') return 'owned'; // a cluster-scoped owner may own anything
  return scope === 'namespaced' && namespace === ownerNamespace ? 'owned' : 'annotated';
}

/** True when `body` is the owner itself (a role updating its own CR): it must not own itself. */
export function isOwnerItself(owner: SessionOwner, body: PlainMap, group: string, namespace: string | undefined): boolean {
  const meta = getOwn(body, 'metadata');
  if (!isPlainMap(meta)) return false;
  if (getOwn(meta, 'uid') === owner.uid) return true;
  const ownerGroup = owner.apiVersion.includes('/') ? owner.apiVersion.slice(0, owner.apiVersion.indexOf('/')) : '';
  return getOwn(body, 'kind') === owner.kind && group === ownerGroup && getOwn(meta, 'name') === owner.name && (namespace ?? '') === (owner.namespace ?? '');
}

/**
 * Marks `body` (an object about to be created, replaced or applied) as the owner's. The
 * ownerReference is added unless one to the owner's uid is there; it is the controller reference
 * unless the object already names a controller (an object may have only one), and blocks the
 * owner's foreground deletion, as chart objects' references do.
 */
export function stampOwnership(body: PlainMap, owner: SessionOwner, placement: Placement): void {
  const meta = mapIn(body, 'metadata');
  const labels = mapIn(meta, 'labels');
  for (const [key, value] of Object.entries(ownerLabels(owner.uid))) setOwn(labels, key, value);
  if (placement === 'annotated') {
    const annotations = mapIn(meta, 'annotations');
    setOwn(annotations, PRIMARY_RESOURCE_ANNOTATION, `${owner.namespace ?? ''}/${owner.name}`);
    setOwn(annotations, PRIMARY_RESOURCE_TYPE_ANNOTATION, primaryResourceType(owner));
    return;
  }
  const existing = getOwn(meta, 'ownerReferences');
  const refs: unknown[] = Array.isArray(existing) ? existing : [];
  if (refs.some((r) => isPlainMap(r) && getOwn(r, 'uid') === owner.uid)) return;
  const controller = !refs.some((r) => isPlainMap(r) && getOwn(r, 'controller') === true);
  refs.push({ apiVersion: owner.apiVersion, kind: owner.kind, name: owner.name, uid: owner.uid, controller, blockOwnerDeletion: true });
  setOwn(meta, 'ownerReferences', refs);
}

/** operator-sdk's `<Kind>.<group>` (`Memcached.cache.example.com`; a core kind ends in a dot). */
export function primaryResourceType(owner: SessionOwner): string {
  const slash = owner.apiVersion.indexOf('/');
  return `${owner.kind}.${slash < 0 ? '' : owner.apiVersion.slice(0, slash)}`;
}

function mapIn(parent: PlainMap, key: string): PlainMap {
  const v = getOwn(parent, key);
  if (isPlainMap(v)) return v;
  const fresh: PlainMap = {};
  setOwn(parent, key, fresh);
  return fresh;
}
