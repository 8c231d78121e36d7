/** URL construction for API resources; pure, so every path shape is unit-testable. */
import type { ApiResource } from './types.js';

export function parseApiVersion(apiVersion: string): { group: string; version: string } {
  const slash = apiVersion.indexOf('/');
  return slash < 0
    ? { group: '', version: apiVersion }
    : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

/** `/api/v1` for the core group, `/apis/<group>/<version>` otherwise. */
export function groupVersionPath(group: string, version: string): string {
  return group === '' ? `/api/${version}` : `/apis/${group}/${version}`;
}

/**
 * Path of a collection, object or subresource. A namespaced resource without a namespace yields the
 * all-namespaces collection (for LIST/WATCH); a namespace given for a cluster-scoped resource is
 * ignored, so callers can pass the owner's namespace without checking scope first.
 */
export function resourcePath(r: ApiResource, namespace?: string, name?: string, subresource?: string): string {
  let p = groupVersionPath(r.group, r.version);
  if (r.namespaced && namespace) p += `/namespaces/${encodeURIComponent(namespace)}`;
  p += `/${r.plural}`;
  if (name !== undefined) {
    if (name === '') throw new TypeError(`empty name for ${r.kind}`);
    p += `/${encodeURIComponent(name)}`;
    if (subresource) p += `/${subresource}`;
  }
  return p;
}
