/**
 * Which writes of a run are allowed: the CR's confinement (core/confinement.ts, the same rule
 * the chart path uses) applied to where the API server will put the object — the URL's namespace
 * and the resource's scope from discovery, never what the body merely claims. Pure.
 */
import type { ResourceInfo } from './resources.js';
import type { ResourceRequest } from './request-info.js';
import { isAllowedTarget, type Confinement } from '../core/confinement.js';

export type WriteVerb = 'create' | 'update' | 'patch' | 'delete' | 'deletecollection';

export type WriteDecision =
  | { readonly allowed: true; readonly scope: 'namespaced' | 'cluster' }
  | { readonly allowed: false; readonly message: string };

export function writeVerb(method: string, target: ResourceRequest): WriteVerb | undefined {
  switch (method) {
    case 'POST':
      return 'create';
    case 'PUT':
      return 'update';
    case 'PATCH':
      return 'patch';
    case 'DELETE':
      return target.name === undefined ? 'deletecollection' : 'delete';
    default:
      return undefined;
  }
}

export interface WriteQuestion {
  readonly verb: WriteVerb;
  readonly target: ResourceRequest;
  /** undefined: discovery does not know the resource. */
  readonly info: ResourceInfo | undefined;
  /** metadata.namespace / metadata.name of the body, when it has them. */
  readonly bodyNamespace?: string | undefined;
  readonly bodyName?: string | undefined;
}

/** Allowed, or refused with a message naming the object, the rule and the setting that would allow it. */
export function decideWrite(c: Confinement, q: WriteQuestion): WriteDecision {
  const { target, info, verb } = q;
  const gv = target.group === '' ? target.version : `${target.group}/${target.version}`;
  if (info === undefined) {
    return refuse(
      `refused to ${verb} ${target.resource} (${gv}): the API server does not serve this resource, so where it would land is unknown; ` +
        'create its CustomResourceDefinition first (or fix the apiVersion/kind in the task)',
    );
  }
  const name = q.target.name ?? q.bodyName;
  const what = `${info.kind}${name === undefined ? '' : ` "${name}"`}${target.subresource === undefined ? '' : ` (${target.subresource})`}`;
  if (!info.namespaced) {
    if (isAllowedTarget(c, {}, 'cluster')) return { allowed: true, scope: 'cluster' };
    return refuse(
      `refused to ${verb} ${what} (${gv}): it is cluster-scoped, and objects of this custom resource must stay in its namespace ${c.namespace}; ` +
        'set allowClusterScoped: true on the watches entry to allow cluster-scoped objects',
    );
  }
  if (target.namespace === undefined) {
    if (verb === 'deletecollection') {
      return refuse(`refused to delete every ${info.kind} in all namespaces: objects of this custom resource are in namespace ${c.namespace}; name the namespace in the task`);
    }
    return refuse(`refused to ${verb} ${what} (${gv}): the request names no namespace; set metadata.namespace (e.g. to ansible_operator_meta.namespace)`);
  }
  if (q.bodyNamespace !== undefined && q.bodyNamespace !== '' && q.bodyNamespace !== target.namespace) {
    return refuse(
      `refused to ${verb} ${what}: its metadata.namespace "${q.bodyNamespace}" differs from the namespace "${target.namespace}" the request is sent to; make them the same`,
    );
  }
  if (isAllowedTarget(c, { namespace: target.namespace }, 'namespaced')) return { allowed: true, scope: 'namespaced' };
  return refuse(
    `refused to ${verb} ${what} in namespace ${target.namespace}: objects of this custom resource must stay in its namespace ${c.namespace}; ` +
      'set allowCrossNamespace: true on the watches entry to allow other namespaces',
  );
}

function refuse(message: string): WriteDecision {
  return { allowed: false, message };
}
