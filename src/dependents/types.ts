/** Shapes shared by the dependent-object modules (manifest, drift, readiness, watcher). */
import type { KubeObject } from '../kube/types.js';
import type { ObjectRef } from '../core/model.js';

export type { ObjectRef };


/** One object of a release as the chart rendered it. */
export interface DesiredObject {
  readonly apiVersion: string;
  readonly kind: string;
  /** undefined = cluster-scoped; the release namespace when the chart named none. */
  readonly namespace: string | undefined;
  readonly name: string;
  /** The rendered document, unchanged (metadata.namespace is not filled in here). */
  readonly object: KubeObject;
}

/** `(apiVersion, kind) → namespaced?`; undefined when the kind is not known (yet). */
export type IsNamespaced = (apiVersion: string, kind: string) => boolean | undefined;

/** An object of the release and what the cluster has for it now (undefined = missing). */
export interface LiveOrMissing extends ObjectRef {
  readonly live: KubeObject | undefined;
}

/** `Deployment web` — how messages name an object (the namespace is the CR's and adds only noise). */
export function describeRef(ref: ObjectRef): string {
  return `${ref.kind} ${ref.name}`;
}
