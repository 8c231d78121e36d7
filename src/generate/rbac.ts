/**
 * `chartpilot generate rbac`: the least-privilege permissions of the operator, as RBAC objects.
 * Pure: the kinds the charts create are found elsewhere (rbac-plan.ts); this module only turns
 * them into rules, with a comment on every rule saying why it is there.
 */
import type { Document } from 'yaml';
import type { ChartObject, RbacOptions, RbacOutput, RbacPlan } from './rbac-model.js';
import { bindingDoc, bindRules, byText, copiedRoleRules, CR_VERBS, LEASE_VERBS, objectRules, READ_VERBS, roleDoc, sourceText, STORAGE_VERBS, type CommentedRule } from './rbac-rules.js';
import { tenantDocuments, tenantServiceAccounts } from './rbac-tenant.js';
import { DEFAULT_SEAL_KEY_SECRET } from '../helm/seal-key.js';

export type { ChartObject, RbacOptions, RbacOutput, RbacPlan, WatchedResource } from './rbac-model.js';

/** The operator's own needs: its kinds, Helm's storage, events, and impersonating its tenants. */
function operatorRules(plan: RbacPlan, clusterWide: boolean): CommentedRule[] {
  const rules: CommentedRule[] = [];
  const groups = [...new Set(plan.watched.map((w) => w.group))].sort(byText);
  for (const group of groups) {
    const plurals = plan.watched.filter((w) => w.group === group).map((w) => w.plural).sort(byText);
    const kinds = plan.watched.filter((w) => w.group === group).map((w) => w.kind).sort(byText).join(', ');
    rules.push(
      { rule: { apiGroups: [group], resources: plurals, verbs: [...CR_VERBS] }, why: `the watched kinds (${kinds}): watch them, read a spec when a reconcile needs it, add and remove the finalizer` },
      { rule: { apiGroups: [group], resources: plurals.map((p) => `${p}/status`), verbs: ['patch'] }, why: 'write status (conditions, deployed release)' },
      {
        rule: { apiGroups: [group], resources: plurals.map((p) => `${p}/finalizers`), verbs: ['update'] },
        why: 'set ownerReferences with blockOwnerDeletion on chart objects (needed where OwnerReferencesPermissionEnforcement is on, e.g. OpenShift)',
      },
    );
  }
  const tenants = tenantServiceAccounts(plan);
  const everyKindImpersonates = plan.watched.length > 0 && plan.watched.every((w) => w.serviceAccount !== undefined);
  rules.push(
    everyKindImpersonates
      ? {
          rule: { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list'] },
          why: "Helm's release storage, read only (each release's records are written by the ServiceAccount it runs as)",
        }
      : { rule: { apiGroups: [''], resources: ['secrets'], verbs: [...STORAGE_VERBS] }, why: "Helm's release storage (one Secret per revision, in the CR's namespace)" },
    { rule: { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] }, why: 'events on the custom resources (InstallSuccessful, UpgradeError, ...)' },
  );
  if (plan.watched.some((w) => w.valuesFrom?.specField !== undefined)) {
    rules.push({
      rule: { apiGroups: [''], resources: ['secrets', 'configmaps'], verbs: [...READ_VERBS] },
      why: "valuesFrom: read what CRs reference (as the operator where a kind has no ServiceAccount) and watch it (metadata only) so a change upgrades at once",
    });
  }
  if (tenants.length > 0) {
    rules.push(
      {
        rule: { apiGroups: [''], resources: ['serviceaccounts'], resourceNames: tenants, verbs: ['impersonate'] },
        why: "run every helm action and repair as the ServiceAccount of the resource's namespace: exactly these names, nothing else",
      },
      {
        rule: { apiGroups: [''], resources: ['serviceaccounts'], verbs: ['list', 'watch'] },
        why: 'know whether that ServiceAccount exists (a missing one is reported on the resource, never impersonated)',
      },
    );
  }
  if (clusterWide) {
    rules.push({
      rule: { apiGroups: ['authorization.k8s.io'], resources: ['selfsubjectaccessreviews'], verbs: ['create'] },
      why: 'the start-up check that these permissions are in place',
    });
  }
  return rules;
}

/**
 * The chart objects' rules: all verbs for what the operator creates itself, read only for what
 * tenants' ServiceAccounts create (the operator still watches it for drift and readiness).
 */
function chartObjectRules(objects: readonly ChartObject[]): CommentedRule[] {
  const own = objects.filter((o) => o.serviceAccount === undefined);
  const writable = new Set(own.map((o) => `${o.group}/${o.resource}`));
  const tenants = objects.filter((o) => o.serviceAccount !== undefined && !o.crdsDir && !writable.has(`${o.group}/${o.resource}`));
  return [...objectRules(own), ...objectRules(tenants, READ_VERBS, "objects the charts create as a tenant's ServiceAccount (read only: watched for drift and readiness)")];
}

function labelsOf(opts: RbacOptions): Record<string, string> {
  return { 'app.kubernetes.io/name': opts.name, 'app.kubernetes.io/component': 'rbac' };
}

export function buildRbac(plan: RbacPlan, opts: RbacOptions): RbacOutput {
  const warnings = [...plan.warnings];
  const clusterWide = opts.roleNamespaces.length === 0;
  const labels = labelsOf(opts);
  const operator = { name: opts.serviceAccount, namespace: opts.namespace };

  // Cluster-scoped objects need the entry's permission (the operator refuses them otherwise).
  const refused = plan.objects.filter((o) => !o.namespaced && !o.crdsDir && !o.clusterScopedAllowed);
  for (const o of refused) {
    warnings.push(`${sourceText(o.chart)} creates the cluster-scoped ${o.kind}: not granted, because its watches entry does not set allowClusterScoped: true (the operator refuses such objects)`);
  }
  const granted = plan.objects.filter((o) => !refused.includes(o));
  for (const o of granted.filter((x) => x.crdsDir)) {
    warnings.push(
      o.serviceAccount === undefined
        ? `chart ${o.chart} ships CRDs in crds/: the operator is allowed to create CustomResourceDefinitions cluster-wide`
        : `chart ${o.chart} ships CRDs in crds/ and runs as ServiceAccount ${o.serviceAccount}, which helm then creates them as: install the CRDs beforehand, or bind a ClusterRole that allows it to that ServiceAccount`,
    );
  }
  const namespacedObjects = granted.filter((o) => o.namespaced);
  const clusterObjects = granted.filter((o) => !o.namespaced);

  // Roles and bindings a tenant's chart renders are the tenant's to hold (rbac-tenant.ts).
  const ownRoles = plan.roles.filter((r) => r.serviceAccount === undefined);
  const ownBound = plan.boundRoles.filter((b) => b.serviceAccount === undefined);
  const namespacedRoles = ownRoles.filter((r) => r.kind === 'Role');
  const clusterRoles = ownRoles.filter((r) => r.kind === 'ClusterRole' && plan.objects.some((o) => o.chart === r.chart && o.kind === 'ClusterRole' && !refused.includes(o)));
  const tenants = tenantDocuments(plan, opts, labels);
  warnings.push(...tenants.warnings);
  const header = headerComment(plan, opts, warnings);
  const documents: Document[] = [];
  const manager = `${opts.name}-manager`;

  if (clusterWide) {
    const rules = [
      ...operatorRules(plan, true),
      ...chartObjectRules(granted),
      ...copiedRoleRules([...namespacedRoles, ...clusterRoles]),
      ...bindRules(ownBound),
    ];
    documents.push(roleDoc('ClusterRole', manager, undefined, rules, labels, header), bindingDoc('ClusterRoleBinding', manager, undefined, 'ClusterRole', operator, labels));
  } else {
    // Rules copied from rendered ClusterRoles go here too (with any nonResourceURLs they have).
    const clusterRules = [
      ...chartObjectRules(clusterObjects),
      ...copiedRoleRules(clusterRoles),
      ...bindRules(ownBound.filter((b) => b.roleKind === 'ClusterRole')),
    ];
    if (clusterRules.length > 0) {
      const name = `${opts.name}-cluster-objects`;
      documents.push(
        roleDoc('ClusterRole', name, undefined, clusterRules, labels, ` Cluster-scoped objects the charts create; a Role cannot grant them.`),
        bindingDoc('ClusterRoleBinding', name, undefined, 'ClusterRole', operator, labels),
      );
    }
    const rules = [
      ...operatorRules(plan, false),
      ...chartObjectRules(namespacedObjects),
      ...copiedRoleRules(namespacedRoles),
      ...bindRules(ownBound.filter((b) => b.roleKind === 'Role')),
    ];
    [...opts.roleNamespaces].sort(byText).forEach((ns, i) => {
      documents.push(
        roleDoc('Role', manager, ns, rules, labels, i === 0 ? header : ` The same permissions in namespace ${ns}.`),
        bindingDoc('RoleBinding', manager, ns, 'Role', operator, labels),
      );
    });
  }

  const leader = `${opts.name}-leader-election`;
  documents.push(
    roleDoc(
      'Role',
      leader,
      opts.namespace,
      [{ rule: { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: [...LEASE_VERBS] }, why: 'the Lease of --leader-elect, in the operator namespace' }],
      labels,
      ' Leader election: only one replica acts at a time.',
    ),
    bindingDoc('RoleBinding', leader, opts.namespace, 'Role', operator, labels),
    ...sealKeyDocuments(opts, operator, labels),
    ...platformReferenceDocuments(plan, opts, operator, labels),
    ...tenants.documents,
  );
  const pullSecrets = [...new Set(opts.pullSecrets ?? [])].sort(byText);
  if (!clusterWide && pullSecrets.length > 0) {
    const name = `${opts.name}-chart-pull-secrets`;
    documents.push(
      roleDoc('Role', name, opts.namespace, [{ rule: { apiGroups: [''], resources: ['secrets'], resourceNames: pullSecrets, verbs: ['get'] }, why: 'chartPullSecret: credentials for charts from registries' }], labels, ' Charts from registries: their pull Secrets, in the operator namespace.'),
      bindingDoc('RoleBinding', name, opts.namespace, 'Role', operator, labels),
    );
  }
  return { documents, warnings };
}

/**
 * valuesFrom references of the watches entries themselves: read in the operator's namespace, the
 * named objects only; list and watch cannot be limited to names, and tell only metadata here.
 */
function platformReferenceDocuments(plan: RbacPlan, opts: RbacOptions, operator: { name: string; namespace: string }, labels: Record<string, string>): Document[] {
  const refs = plan.watched.flatMap((w) => w.valuesFrom?.references ?? []);
  if (refs.length === 0) return [];
  const rules: CommentedRule[] = [];
  for (const [kind, resource] of [['Secret', 'secrets'], ['ConfigMap', 'configmaps']] as const) {
    const names = [...new Set(refs.filter((r) => r.kind === kind).map((r) => r.name))].sort(byText);
    if (names.length === 0) continue;
    rules.push(
      { rule: { apiGroups: [''], resources: [resource], resourceNames: names, verbs: ['get'] }, why: `valuesFrom.references: the ${kind}s the watches entries read values from` },
      { rule: { apiGroups: [''], resources: [resource], verbs: ['list', 'watch'] }, why: `valuesFrom.references: watch them, so a change upgrades the kinds' releases at once` },
    );
  }
  const name = `${opts.name}-values-from`;
  return [
    roleDoc('Role', name, opts.namespace, rules, labels, " valuesFrom: the watches entries' own references, in the operator namespace."),
    bindingDoc('RoleBinding', name, opts.namespace, 'Role', operator, labels),
  ];
}

/**
 * The seal key: read (only that Secret) and made at first start (RBAC cannot limit create to a
 * name: the Role is in the operator's namespace only, where no tenant has rights).
 */
function sealKeyDocuments(opts: RbacOptions, operator: { name: string; namespace: string }, labels: Record<string, string>): Document[] {
  const name = `${opts.name}-seal-key`;
  const secret = DEFAULT_SEAL_KEY_SECRET;
  return [
    roleDoc(
      'Role',
      name,
      opts.namespace,
      [
        { rule: { apiGroups: [''], resources: ['secrets'], resourceNames: [secret], verbs: ['get'] }, why: `the seal key (${secret}): which Helm records the operator wrote` },
        { rule: { apiGroups: [''], resources: ['secrets'], verbs: ['create'] }, why: `make ${secret} at the first start (create cannot be limited to one name)` },
      ],
      labels,
      ' The seal key, in the operator namespace: proves which Helm release records chartpilot wrote for which resource.',
    ),
    bindingDoc('RoleBinding', name, opts.namespace, 'Role', operator, labels),
  ];
}

function headerComment(plan: RbacPlan, opts: RbacOptions, warnings: readonly string[]): string {
  const charts = plan.watched.some((w) => w.ansible !== true);
  const roles = plan.watched.some((w) => w.ansible === true);
  const lines = [
    ` Generated by \`${opts.command}\`: regenerate it when a ${charts ? 'chart' : 'role'}${charts && roles ? ' or role' : ''} changes, rather than editing it.`,
    ` Least privilege for the operator's ServiceAccount ${opts.namespace}/${opts.serviceAccount}` +
      (opts.roleNamespaces.length === 0 ? ', in all namespaces.' : `, in namespace(s) ${opts.roleNamespaces.join(', ')} only (set WATCH_NAMESPACE to match).`),
  ];
  if (charts) {
    lines.push(` Chart objects were found by rendering each chart with its default values (and any samples)`, ` and by reading its templates; resources resolved by ${plan.resolvedBy}.`);
  }
  if (roles) {
    lines.push(
      " Objects of Ansible kinds were found by reading their roles' and playbooks' k8s, k8s_info and k8s_status",
      ` tasks; kinds those compute at run time are listed under Review, to be granted by hand.${charts ? '' : ` Resources resolved by ${plan.resolvedBy}.`}`,
    );
  }
  if (opts.roleNamespaces.length > 0) {
    lines.push(' selfsubjectaccessreviews (the start-up check) need no rule: every authenticated user may create them (system:basic-user).');
  }
  const tenants = tenantServiceAccounts(plan);
  if (tenants.length > 0) {
    lines.push(
      ` Kinds that run as a ServiceAccount of the resource's namespace (${tenants.join(', ')}) are installed, upgraded, repaired and`,
      ' uninstalled by that ServiceAccount: the operator may impersonate exactly those names and reads what they create.',
      (opts.tenantNamespaces ?? []).length > 0
        ? ` Their Roles follow, for namespace(s) ${[...(opts.tenantNamespaces ?? [])].sort(byText).join(', ')}.`
        : ' Grant them in each namespace with --tenant-namespace <ns>.',
    );
  }
  if (warnings.length > 0) lines.push(' Review:', ...warnings.map((w) => ` - ${w}`));
  return lines.join('\n');
}
