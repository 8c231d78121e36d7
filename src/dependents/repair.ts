/**
 * Puts a drifted or deleted object back as the chart rendered it, with server-side apply.
 *
 * Apply (not update or merge patch) because it touches only the fields in the body: a label or a
 * sidecar someone else added stays, and a deleted object is simply created. The field manager
 * must be the one Helm uses (`helm`, verified with Helm 4.1.4, which applies server-side by
 * default): applying as another manager with force would make that manager co-own the chart's
 * fields, and the next `helm upgrade` that changes one of them would fail with
 * `conflict with "<manager>"` (verified on a real cluster). Applying as `helm`, the body must also
 * be what Helm applies: the manifest plus the ownership label and annotations Helm adds at apply
 * time — a field `helm` owned that is missing from our body would be removed from the object.
 */
import { KubeApiError } from '../kube/errors.js';
import { applyObject, findObject } from '../kube/objects.js';
import type { KubeClient } from '../kube/rest.js';
import type { ApiResource, KubeObject, ObjectMeta } from '../kube/types.js';
import { ownersOf } from './managed-fields.js';
import { specHash } from './spec-hash.js';
import type { DesiredObject } from './types.js';

export type RepairOutcome = 'created' | 'updated' | 'unchanged';

/** The field manager Helm (4, server-side apply) uses; repairs must use the same. */
export const HELM_FIELD_MANAGER = 'helm';

/** What Helm adds to every object it applies (and checks before adopting an existing one). */
export const HelmOwnership = {
  managedByLabel: 'app.kubernetes.io/managed-by',
  managedByValue: 'Helm',
  releaseNameAnnotation: 'meta.helm.sh/release-name',
  releaseNamespaceAnnotation: 'meta.helm.sh/release-namespace',
} as const;

export interface RepairOptions {
  /**
   * The release the object belongs to, so the body carries Helm's ownership metadata as Helm's
   * own apply does. Without it the metadata is copied from the live object when there is one; a
   * recreated object then lacks it until the next `helm upgrade` adds it back.
   */
  readonly release?: { readonly name: string; readonly namespace: string } | undefined;
  /** The object as the caller last saw it (null: known to be missing); saves a GET. */
  readonly current?: KubeObject | null | undefined;
  readonly signal?: AbortSignal | undefined;
  /**
   * Apply as this user (the release's tenant), so a repair can do no more than the tenant's own
   * helm could; reads stay the operator's. undefined = the operator's own identity.
   */
  readonly impersonateUser?: string | undefined;
  /**
   * Fields (JSON pointer segments) that are others' to set: never set back. Left out of the body,
   * unless our manager owns one (then the live value is sent, since leaving a field we own out of
   * an apply deletes it), with the object's resourceVersion so a change since it was read fails.
   */
  readonly leaveAlone?: readonly (readonly string[])[] | undefined;
}

/** A repair the API server refused (immutable field, admission webhook, missing RBAC, …). */
export class RepairError extends Error {
  override readonly name = 'RepairError';
  /** The API's StatusReason (Invalid, Forbidden, Conflict, NotFound, …) or Unknown. */
  readonly reason: string;
  constructor(message: string, options: { cause: unknown }) {
    super(message, options);
    this.reason = options.cause instanceof KubeApiError ? options.cause.reason : 'Unknown';
  }
}

/** Field managers are limited to 128 characters by the API server. */
const MAX_FIELD_MANAGER_LENGTH = 128;

/**
 * Server-side applies `desired` (force: the chart's fields win over whoever changed them) and
 * tells whether that created the object, changed it, or found nothing to change.
 */
export async function repairObject(
  client: KubeClient,
  resource: ApiResource,
  desired: DesiredObject,
  fieldManager: string,
  opts: RepairOptions = {},
): Promise<RepairOutcome> {
  if (fieldManager === '' || fieldManager.length > MAX_FIELD_MANAGER_LENGTH) {
    throw new RangeError(`fieldManager must be 1..${MAX_FIELD_MANAGER_LENGTH} characters`);
  }
  if (resource.kind !== desired.kind || resource.apiVersion !== desired.apiVersion) {
    throw new TypeError(`resource ${resource.kind}.${resource.apiVersion} does not serve ${desired.kind}.${desired.apiVersion}`);
  }
  const namespace = resource.namespaced ? desired.namespace : undefined;
  if (resource.namespaced && namespace === undefined) throw new TypeError(`${desired.kind} ${desired.name} is namespaced but has no namespace`);
  const at = { resource, namespace, name: desired.name };
  const where = `${desired.kind} ${namespace === undefined ? '' : `${namespace}/`}${desired.name}`;

  try {
    const before = opts.current !== undefined ? opts.current : ((await findObject(client, at, { signal: opts.signal })) ?? null);
    const rendered = applyBody(desired, namespace, opts.release ?? helmReleaseOf(before));
    const body = before === null || (opts.leaveAlone ?? []).length === 0 ? rendered : leavingAlone(rendered, before, opts.leaveAlone ?? [], fieldManager);
    const after = await applyObject(client, at, body, { fieldManager, force: true, signal: opts.signal, impersonateUser: opts.impersonateUser });
    if (before === null) return 'created';
    // Not the resourceVersion: a controller's status write between our GET and PATCH bumps it.
    return specHash(after) === specHash(before) ? 'unchanged' : 'updated';
  } catch (err) {
    if (err instanceof KubeApiError) throw new RepairError(`cannot repair ${where}: ${err.message}`, { cause: err });
    throw err;
  }
}

/**
 * The apply body: the rendered object, in its namespace, with Helm's ownership metadata, without
 * anything that would turn the apply into something else (a resourceVersion would make it a
 * conditional update; status is not ours to set).
 */
export function applyBody(
  desired: DesiredObject,
  namespace: string | undefined,
  release: { readonly name: string; readonly namespace: string } | undefined,
): KubeObject {
  const obj = structuredClone(desired.object);
  const { status: _status, ...rest } = obj;
  const metadata: ObjectMeta = { ...obj.metadata, name: desired.name };
  delete metadata.resourceVersion;
  delete metadata.uid;
  delete metadata.managedFields;
  delete metadata.creationTimestamp;
  delete metadata.generation;
  if (namespace === undefined) delete metadata.namespace;
  else metadata.namespace = namespace;
  if (release !== undefined) {
    metadata.labels = { ...metadata.labels, [HelmOwnership.managedByLabel]: HelmOwnership.managedByValue };
    metadata.annotations = {
      ...metadata.annotations,
      [HelmOwnership.releaseNameAnnotation]: release.name,
      [HelmOwnership.releaseNamespaceAnnotation]: release.namespace,
    };
  }
  return { ...rest, apiVersion: desired.apiVersion, kind: desired.kind, metadata };
}

/** The release named by a live object's Helm ownership annotations, if it has them. */
function helmReleaseOf(live: KubeObject | null): { name: string; namespace: string } | undefined {
  const a = live?.metadata.annotations;
  const name = a?.[HelmOwnership.releaseNameAnnotation];
  const namespace = a?.[HelmOwnership.releaseNamespaceAnnotation];
  return name !== undefined && namespace !== undefined ? { name, namespace } : undefined;
}

/**
 * `body` without the fields of `paths`, except those `fieldManager` owns in `live`: for those the
 * live value is sent (so the apply neither changes nor deletes them) and the apply is made
 * conditional on `live`'s resourceVersion. What this returns is exactly what the server receives.
 */
export function leavingAlone(body: KubeObject, live: KubeObject, paths: readonly (readonly string[])[], fieldManager: string): KubeObject {
  const out = structuredClone(body);
  let copied = false;
  for (const path of paths) {
    if (!has(out, path)) continue;
    const ours = ownersOf(live, path).some((o) => o.manager === fieldManager && o.operation === 'Apply' && o.subresource === undefined);
    const liveValue = valueAt(live, path);
    if (ours && liveValue !== undefined) {
      setAt(out, path, structuredClone(liveValue));
      copied = true;
    } else {
      removeAt(out, path);
    }
  }
  if (copied && live.metadata.resourceVersion !== undefined) out.metadata = { ...out.metadata, resourceVersion: live.metadata.resourceVersion };
  return out;
}

type Container = Record<string, unknown> | unknown[];

function child(node: unknown, seg: string): unknown {
  if (Array.isArray(node)) return /^\d+$/u.test(seg) ? node[Number(seg)] : undefined;
  if (node !== null && typeof node === 'object' && Object.hasOwn(node, seg)) return (node as Record<string, unknown>)[seg];
  return undefined;
}

function valueAt(root: unknown, path: readonly string[]): unknown {
  let node = root;
  for (const seg of path) node = child(node, seg);
  return node;
}

function has(root: unknown, path: readonly string[]): boolean {
  return valueAt(root, path) !== undefined;
}

function parentOf(root: unknown, path: readonly string[]): Container | undefined {
  const parent = valueAt(root, path.slice(0, -1));
  return parent !== null && typeof parent === 'object' ? (parent as Container) : undefined;
}

function setAt(root: unknown, path: readonly string[], value: unknown): void {
  const parent = parentOf(root, path);
  const last = path.at(-1);
  if (parent === undefined || last === undefined) return;
  if (Array.isArray(parent)) parent[Number(last)] = value;
  else parent[last] = value;
}

function removeAt(root: unknown, path: readonly string[]): void {
  const parent = parentOf(root, path);
  const last = path.at(-1);
  if (parent === undefined || last === undefined) return;
  if (Array.isArray(parent)) parent.splice(Number(last), 1);
  else Reflect.deleteProperty(parent, last);
}
