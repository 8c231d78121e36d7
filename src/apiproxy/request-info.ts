/**
 * What an API request addresses, read from its URL the way the API server reads it
 * (apiserver's RequestInfoFactory): group, version, namespace, resource, name, subresource. Pure,
 * so every path shape is table-tested.
 */

export interface ResourceRequest {
  readonly kind: 'resource';
  /** '' for the core group (`/api/v1`). */
  readonly group: string;
  readonly version: string;
  /** undefined when the URL names none (a cluster-scoped resource, or all namespaces). */
  readonly namespace: string | undefined;
  /** The resource's plural name (`configmaps`). */
  readonly resource: string;
  readonly name: string | undefined;
  readonly subresource: string | undefined;
  /** `?watch=true`/`1`, or the legacy `/watch/` path prefix. */
  readonly watch: boolean;
  /** `?dryRun=All`: the server changes nothing. */
  readonly dryRun: boolean;
}

/** Anything else: discovery (`/api`, `/apis/apps/v1`), `/openapi/v2`, `/version`, `/healthz`. */
export interface OtherRequest {
  readonly kind: 'other';
}

export type RequestTarget = ResourceRequest | OtherRequest;

/** Subresources of a Namespace object itself (`/api/v1/namespaces/x/status`), not resources in it. */
const NAMESPACE_SUBRESOURCES = new Set(['status', 'finalize']);

/** Reads `url` (path and query, as a proxy receives it). Throws URIError on a malformed escape. */
export function requestTarget(url: string): RequestTarget {
  const parsed = new URL(url, 'http://proxy.invalid');
  const segments = parsed.pathname.split('/').filter((s) => s !== '').map((s) => decodeURIComponent(s));
  const query = parsed.searchParams;
  let parts: string[];
  let group: string;
  let version: string;
  if (segments[0] === 'api' && segments.length >= 2) {
    group = '';
    version = segments[1] ?? '';
    parts = segments.slice(2);
  } else if (segments[0] === 'apis' && segments.length >= 3) {
    group = segments[1] ?? '';
    version = segments[2] ?? '';
    parts = segments.slice(3);
  } else {
    return { kind: 'other' };
  }
  if (parts.length === 0) return { kind: 'other' }; // a group/version's discovery document
  let watch = isTrue(query.get('watch'));
  if (parts[0] === 'watch') {
    watch = true;
    parts = parts.slice(1);
  }
  let namespace: string | undefined;
  if (parts[0] === 'namespaces' && parts.length > 1) {
    namespace = parts[1];
    // `/namespaces/x/configmaps/…` is a resource in x; `/namespaces/x[/status]` is the Namespace x.
    if (parts.length > 2 && !NAMESPACE_SUBRESOURCES.has(parts[2] ?? '')) parts = parts.slice(2);
  }
  const [resource, name, subresource] = parts;
  if (resource === undefined || resource === '') return { kind: 'other' };
  return {
    kind: 'resource',
    group,
    version,
    namespace,
    resource,
    name,
    subresource,
    watch,
    dryRun: query.getAll('dryRun').length > 0,
  };
}

function isTrue(v: string | null): boolean {
  return v === 'true' || v === '1';
}
