/**
 * Who acts for a custom resource. With a ServiceAccount configured, every helm action (release
 * storage and the chart's `lookup` calls included) and every repair of a CR in namespace N runs as
 * `system:serviceaccount:N:<name>`, so a CR author gets what that ServiceAccount may do in N and
 * nothing the operator may do beyond it. The API server gives the impersonated user the
 * ServiceAccount's groups (`system:serviceaccounts`, `system:serviceaccounts:N`,
 * `system:authenticated`) by itself; naming groups would need the right to impersonate any group.
 */
import { errorMessage } from '../lib/errors.js';
import { describeForbidden, parseForbidden } from '../lib/forbidden.js';
import type { ServiceAccountLookup } from './ports.js';

export interface Tenant {
  readonly namespace: string;
  readonly serviceAccount: string;
  /** The Kubernetes user name of the ServiceAccount. */
  readonly user: string;
}

export function serviceAccountUser(namespace: string, name: string): string {
  return `system:serviceaccount:${namespace}:${name}`;
}

/** The identity a CR in `namespace` acts as (its watches entry's serviceAccount), or undefined for the operator's own. */
export function tenantOf(entry: { readonly serviceAccount?: string | undefined }, namespace: string): Tenant | undefined {
  const sa = entry.serviceAccount;
  return sa === undefined ? undefined : { namespace, serviceAccount: sa, user: serviceAccountUser(namespace, sa) };
}

/** Whether the CR's ServiceAccount is missing; false when the kind acts as the operator or nothing can look. */
export async function serviceAccountMissing(lookup: ServiceAccountLookup | undefined, tenant: Tenant | undefined): Promise<boolean> {
  if (tenant === undefined || lookup === undefined) return false;
  return !(await lookup.exists(tenant.namespace, tenant.serviceAccount));
}

/** How each engine words what it runs, what the ServiceAccount needs, and what it leaves alone meanwhile. */
const ENGINE_WORDS = {
  helm: { runs: 'every Helm action', needs: 'what the chart needs', kept: 'The deployed release is left as it is' },
  ansible: { runs: 'every Ansible run', needs: 'what the role needs', kept: 'What earlier runs created is left as it is' },
} as const;

export type EngineName = keyof typeof ENGINE_WORDS;

/** Why nothing can run for the CR while its ServiceAccount is missing, and what fixes it. */
export function missingServiceAccountMessage(t: Tenant, engine: EngineName): string {
  const w = ENGINE_WORDS[engine];
  return (
    `ServiceAccount ${t.namespace}/${t.serviceAccount} does not exist: chartpilot runs ${w.runs} for this resource as ${t.user} ` +
    `(the watches entry's serviceAccount, or --default-service-account); create it and grant it ${w.needs} in namespace ${t.namespace} ` +
    `(chartpilot generate rbac --tenant-namespace ${t.namespace} writes that Role). ${w.kept}`
  );
}

/**
 * For an RBAC refusal (a helm error of kind 'forbidden', or an API error that says so): who may
 * not do what where, and whose rights to fix. undefined for any other error.
 */
export function forbiddenExplanation(err: unknown, tenant: Tenant | undefined): string | undefined {
  const kind = err instanceof Error && 'kind' in err ? err.kind : undefined;
  let what: string | undefined;
  if (kind === 'forbidden') what = errorMessage(err);
  else {
    const parsed = parseForbidden(errorMessage(err));
    if (parsed !== undefined) what = describeForbidden(parsed);
  }
  if (what === undefined) return undefined;
  let fix: string;
  if (tenant === undefined) fix = "grant the operator's identity what the chart needs (chartpilot generate rbac)";
  else if (/ may not impersonate /u.test(what)) {
    // The operator's own right is missing, not the tenant's (possible after a reload added serviceAccount).
    fix = `grant the operator impersonate on ServiceAccount ${tenant.serviceAccount} (chartpilot generate rbac --default-service-account ${tenant.serviceAccount})`;
  } else {
    fix =
      `this release runs as ServiceAccount ${tenant.namespace}/${tenant.serviceAccount}: grant it what the chart needs ` +
      `(chartpilot generate rbac --tenant-namespace ${tenant.namespace}), or change the resource's spec so the chart does not need it`;
  }
  return `${what}; ${fix}`;
}
