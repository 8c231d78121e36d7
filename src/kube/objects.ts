/**
 * Typed verbs on API objects — get, list, create, patch, apply, delete — over the REST client. The
 * rest of the operator uses these instead of building URLs and content types itself, so how an
 * object is addressed and which patch type means what is decided here, once.
 */
import { isNotFound } from './errors.js';
import { ACCEPT_METADATA_LIST, type KubeClient, type Query } from './rest.js';
import type { ApiResource, KubeList, KubeObject } from './types.js';

/** Core kinds the operator itself reads and writes (not discovered: every cluster serves them). */
export const CoreResources = {
  secret: { group: '', version: 'v1', apiVersion: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true },
  event: { group: '', version: 'v1', apiVersion: 'v1', kind: 'Event', plural: 'events', namespaced: true },
  serviceAccount: { group: '', version: 'v1', apiVersion: 'v1', kind: 'ServiceAccount', plural: 'serviceaccounts', namespaced: true },
  lease: { group: 'coordination.k8s.io', version: 'v1', apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', plural: 'leases', namespaced: true },
  selfSubjectAccessReview: {
    group: 'authorization.k8s.io',
    version: 'v1',
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SelfSubjectAccessReview',
    plural: 'selfsubjectaccessreviews',
    namespaced: false,
  },
  subjectAccessReview: {
    group: 'authorization.k8s.io',
    version: 'v1',
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    plural: 'subjectaccessreviews',
    namespaced: false,
  },
  tokenReview: {
    group: 'authentication.k8s.io',
    version: 'v1',
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenReview',
    plural: 'tokenreviews',
    namespaced: false,
  },
} as const satisfies Record<string, ApiResource>;

export interface CallOptions {
  readonly signal?: AbortSignal | undefined;
  /** Whole-request deadline; the client's default (30 s) otherwise. */
  readonly timeoutMs?: number | undefined;
  /** Make the request as this user (e.g. `system:serviceaccount:<ns>:<name>`); the client's own identity otherwise. */
  readonly impersonateUser?: string | undefined;
}

/** Where one object lives. `namespace` is ignored for cluster-scoped resources. */
export interface ObjectAddress {
  readonly resource: ApiResource;
  readonly namespace?: string | undefined;
  readonly name: string;
}

function objectPath(client: KubeClient, at: ObjectAddress, subresource?: string): string {
  return client.pathFor(at.resource, at.resource.namespaced ? at.namespace : undefined, at.name, subresource);
}

function call(o: CallOptions | undefined): { signal?: AbortSignal; timeoutMs?: number; impersonateUser?: string } {
  return {
    ...(o?.signal === undefined ? {} : { signal: o.signal }),
    ...(o?.timeoutMs === undefined ? {} : { timeoutMs: o.timeoutMs }),
    ...(o?.impersonateUser === undefined ? {} : { impersonateUser: o.impersonateUser }),
  };
}

export async function getObject<T extends KubeObject = KubeObject>(client: KubeClient, at: ObjectAddress, o?: CallOptions): Promise<T> {
  return client.request<T>('GET', objectPath(client, at), call(o));
}

/** The object, or undefined when it does not exist. */
export async function findObject<T extends KubeObject = KubeObject>(client: KubeClient, at: ObjectAddress, o?: CallOptions): Promise<T | undefined> {
  try {
    return await getObject<T>(client, at, o);
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

export interface ListOptions extends CallOptions {
  readonly labelSelector?: string | undefined;
  readonly fieldSelector?: string | undefined;
  readonly limit?: number | undefined;
  /** The next page of a paged LIST (the previous page's `metadata.continue`). */
  readonly continue?: string | undefined;
  /** Only metadata (PartialObjectMetadataList): much smaller for Secrets and large objects. */
  readonly metadataOnly?: boolean | undefined;
}

/** A LIST in one namespace, or across all of them (or of a cluster-scoped kind) with namespace undefined. */
export async function listObjects<T extends KubeObject = KubeObject>(
  client: KubeClient,
  resource: ApiResource,
  namespace: string | undefined,
  o: ListOptions = {},
): Promise<KubeList<T>> {
  const query: Query = { labelSelector: o.labelSelector, fieldSelector: o.fieldSelector, limit: o.limit, continue: o.continue };
  // An empty metadata-only list comes back with `items: null`.
  const list = await client.request<Omit<KubeList<T>, 'items'> & { items: T[] | null }>('GET', client.pathFor(resource, namespace), {
    query,
    ...(o.metadataOnly === true ? { accept: ACCEPT_METADATA_LIST } : {}),
    ...call(o),
  });
  return { ...list, items: list.items ?? [] };
}

export interface WriteOptions extends CallOptions {
  /** `All`: validated and admitted but not stored. */
  readonly dryRun?: boolean | undefined;
  readonly fieldManager?: string | undefined;
}

function writeQuery(o: WriteOptions | undefined, extra: Query = {}): Query {
  return { ...(o?.dryRun === true ? { dryRun: 'All' } : {}), ...(o?.fieldManager === undefined ? {} : { fieldManager: o.fieldManager }), ...extra };
}

/** POST into a collection (namespace undefined for cluster-scoped kinds, e.g. access reviews). */
export async function createObject<T = KubeObject>(
  client: KubeClient,
  resource: ApiResource,
  namespace: string | undefined,
  body: unknown,
  o?: WriteOptions,
): Promise<T> {
  return client.request<T>('POST', client.pathFor(resource, resource.namespaced ? namespace : undefined), { body, query: writeQuery(o), ...call(o) });
}

/** PUT: replaces the object; its metadata.resourceVersion makes it a compare-and-swap. */
export async function replaceObject<T extends KubeObject = KubeObject>(client: KubeClient, at: ObjectAddress, body: unknown, o?: WriteOptions): Promise<T> {
  return client.request<T>('PUT', objectPath(client, at), { body, query: writeQuery(o), ...call(o) });
}

export interface PatchOptions extends WriteOptions {
  /** e.g. `status`. */
  readonly subresource?: string | undefined;
}

/** JSON merge patch (RFC 7386): null deletes a key; a `metadata.resourceVersion` makes it a compare-and-swap. */
export async function mergePatchObject<T extends KubeObject = KubeObject>(client: KubeClient, at: ObjectAddress, patch: unknown, o?: PatchOptions): Promise<T> {
  return client.request<T>('PATCH', objectPath(client, at, o?.subresource), {
    body: patch,
    contentType: 'application/merge-patch+json',
    query: writeQuery(o),
    ...call(o),
  });
}

export interface ApplyOptions extends PatchOptions {
  readonly fieldManager: string;
  /** Take over fields other managers own instead of failing with a conflict. */
  readonly force: boolean;
}

/** Server-side apply of `body` (the full intent of `fieldManager` for this object). */
export async function applyObject<T extends KubeObject = KubeObject>(client: KubeClient, at: ObjectAddress, body: unknown, o: ApplyOptions): Promise<T> {
  return client.request<T>('PATCH', objectPath(client, at, o.subresource), {
    body,
    contentType: 'application/apply-patch+yaml',
    query: writeQuery(o, { force: o.force }),
    ...call(o),
  });
}

/** DELETE; resolves false when the object was already gone. A `resourceVersion` precondition makes it a compare-and-delete (Conflict otherwise). */
export async function deleteObject(client: KubeClient, at: ObjectAddress, o?: CallOptions & { readonly resourceVersion?: string | undefined }): Promise<boolean> {
  try {
    const body = o?.resourceVersion === undefined ? {} : { body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { resourceVersion: o.resourceVersion } } };
    await client.request('DELETE', objectPath(client, at), { ...body, ...call(o) });
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}

/** The API server's version (`GET /version`): also the cheapest "is it reachable and are we allowed in?". */
export async function serverVersion(client: KubeClient, o?: CallOptions): Promise<string> {
  const v = await client.request<{ gitVersion?: string } | undefined>('GET', '/version', call(o));
  return v?.gitVersion ?? 'unknown';
}

/** A raw discovery document (`/api`, `/apis`, or a group/version's resource list), for code that reads kinds' scopes. */
export async function getDiscoveryDocument<T = unknown>(client: KubeClient, path: string, o?: CallOptions & { readonly accept?: string }): Promise<T> {
  return client.request<T>('GET', path, { ...(o?.accept === undefined ? {} : { accept: o.accept }), ...call(o) });
}
