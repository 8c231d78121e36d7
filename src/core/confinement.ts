/**
 * Confinement, in one place: which objects a CR's release may touch. Every path that reads or
 * writes a release's objects outside helm (drift repair, readiness, uninstall-wait) asks this,
 * so a record's content can never steer the operator to an object its watches entry does not
 * allow — whatever namespace or kind the record names.
 */
/** Where a CR's objects may be: its namespace, and elsewhere only as its watches entry allows. */
export interface Confinement {
  readonly namespace: string;
  readonly allowClusterScoped: boolean;
  readonly allowCrossNamespace: boolean;
}

/** Where an object lives, as the API server (not the manifest) says. `unknown`: not (yet) known. */
export type ObjectScope = 'namespaced' | 'cluster' | 'unknown';

/**
 * Whether an object of `scope` in `namespace` (undefined for cluster-scoped) is within `c`: the
 * CR's own namespace always; another namespace or the cluster scope only when the entry allows
 * it. A scope nobody knows yet is refused: fail closed.
 */
export function isAllowedTarget(c: Confinement, object: { readonly namespace?: string | undefined }, scope: ObjectScope): boolean {
  switch (scope) {
    case 'cluster':
      return c.allowClusterScoped;
    case 'namespaced':
      if (object.namespace === undefined || object.namespace === '') return false;
      return object.namespace === c.namespace || c.allowCrossNamespace;
    case 'unknown':
      return false;
  }
}
