/**
 * The API server's RBAC refusal, read out of whatever text carries it (a KubeApiError, helm's
 * stderr wrapped in a chain of contexts) and told back in one line that names who may not do what
 * where. Kubernetes words it as
 * `<resource> "<name>" is forbidden: User "<user>" cannot <verb> resource "<resource>" in API group
 * "<group>" in the namespace "<ns>"` (or `at the cluster scope`); helm wraps it in its own
 * contexts ("unable to continue with install: could not get information about …", "error calling
 * lookup: …", and for a lookup inside `tpl`, the template text — a CR's value — as well).
 */

export interface Forbidden {
  /** Who was refused, e.g. `system:serviceaccount:team-a:tenant`. */
  readonly user: string;
  readonly verb: string;
  /** `secrets`, `deployments/scale`, … */
  readonly resource: string;
  /** '' for the core group. */
  readonly group: string;
  /** undefined: at the cluster scope. */
  readonly namespace: string | undefined;
  /** The object's name when the request named one. */
  readonly name: string | undefined;
  /** The refused request was a `lookup` in a chart's templates. */
  readonly inLookup: boolean;
}

const FORBIDDEN =
  /(?:(?:[a-z0-9.-]+(?:\/[a-z0-9.-]+)?) (?:"([^"]*)" )?is forbidden: )?User "([^"]*)" cannot ([A-Za-z]+) resource "([^"]+)" in API group "([^"]*)" (?:in the namespace "([^"]+)"|at the cluster scope)/u;

/** The first RBAC refusal in `text`, or undefined when it holds none. */
export function parseForbidden(text: string): Forbidden | undefined {
  const m = FORBIDDEN.exec(text);
  if (m === null) return undefined;
  const [, name, user = '', verb = '', resource = '', group = '', namespace] = m;
  return {
    user,
    verb,
    resource,
    group,
    namespace,
    name: name === undefined || name === '' ? undefined : name,
    inLookup: /error calling lookup/u.test(text.slice(0, m.index)),
  };
}

/** `system:serviceaccount:a:t may not get secrets "s" in namespace kube-system (a lookup in the chart's templates)`. */
export function describeForbidden(f: Forbidden): string {
  const resource = f.group === '' ? f.resource : `${f.resource}.${f.group}`;
  const name = f.name === undefined ? '' : ` "${f.name}"`;
  const where = f.namespace === undefined ? 'at the cluster scope' : `in namespace ${f.namespace}`;
  return `${f.user} may not ${f.verb} ${resource}${name} ${where}${f.inLookup ? " (a lookup in the chart's templates)" : ''}`;
}
