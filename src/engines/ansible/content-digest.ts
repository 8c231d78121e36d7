/**
 * A digest of what a dependent is meant to be, for telling drift: everything but its status and
 * its metadata except labels. Controllers write status and annotations (a Deployment's revision)
 * on their own, and the server bumps versions; none of that is someone changing what the role
 * made. Labels count: a selector may depend on them.
 */
import { createHash } from 'node:crypto';
import type { KubeObject } from '../../kube/types.js';
import { canonicalJsonOfAnyDepth } from '../../lib/json.js';

export function contentDigest(obj: KubeObject): string {
  const { status: _status, metadata, ...rest } = obj as KubeObject & { status?: unknown };
  return createHash('sha256')
    .update(canonicalJsonOfAnyDepth({ ...rest, labels: metadata.labels ?? {} }))
    .digest('base64url');
}
