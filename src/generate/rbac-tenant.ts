/**
 * What a tenant's ServiceAccount needs when chartpilot runs charts as it (`serviceAccount`,
 * `--default-service-account`): in each tenant namespace, per ServiceAccount, the ServiceAccount
 * itself, a Role with the charts' namespaced objects, Helm's release Secrets and what the charts'
 * own roles and bindings require, and the RoleBinding. A Role cannot grant cluster-scoped objects:
 * those are named in a warning instead.
 */
import { Document } from 'yaml';
import type { RbacOptions, RbacPlan } from './rbac-model.js';
import { bindingDoc, bindRules, byText, copiedRoleRules, objectRules, roleDoc, sourceText, STORAGE_VERBS, type CommentedRule } from './rbac-rules.js';

/** Every ServiceAccount the plan's kinds run as, sorted. */
export function tenantServiceAccounts(plan: RbacPlan): string[] {
  return [...new Set(plan.watched.map((w) => w.serviceAccount).filter((s) => s !== undefined))].sort(byText);
}

export function tenantRoleName(opts: RbacOptions, serviceAccount: string): string {
  return `${opts.name}-tenant-${serviceAccount}`;
}

function tenantRules(plan: RbacPlan, serviceAccount: string): CommentedRule[] {
  const mine = plan.objects.filter((o) => o.serviceAccount === serviceAccount && o.namespaced && !o.crdsDir);
  const watched = plan.watched.filter((w) => w.serviceAccount === serviceAccount);
  const rules: CommentedRule[] = [
    ...objectRules(mine),
    // Ansible kinds keep no Helm records: a tenant that only runs roles gets no Secret rights from here.
    ...(watched.some((w) => w.ansible !== true)
      ? [
          {
            rule: { apiGroups: [''], resources: ['secrets'], verbs: [...STORAGE_VERBS] },
            why: "Helm's release storage: helm runs as this ServiceAccount and keeps one Secret per revision here",
          },
        ]
      : []),
    // The CR's valuesFrom references are read as the tenant: what it may not read, no CR can reference.
    ...(watched.some((w) => w.valuesFrom?.specField !== undefined)
      ? [{ rule: { apiGroups: [''], resources: ['secrets', 'configmaps'], verbs: ['get'] }, why: 'valuesFrom: the Secrets and ConfigMaps CRs take values from, read as this ServiceAccount' }]
      : []),
  ];
  for (const group of [...new Set(watched.map((w) => w.group))].sort(byText)) {
    const plurals = watched.filter((w) => w.group === group).map((w) => `${w.plural}/finalizers`).sort(byText);
    rules.push({
      rule: { apiGroups: [group], resources: plurals, verbs: ['update'] },
      why: 'ownerReferences with blockOwnerDeletion to the custom resource on what it creates (needed where OwnerReferencesPermissionEnforcement is on, e.g. OpenShift)',
    });
  }
  rules.push(
    ...copiedRoleRules(plan.roles.filter((r) => r.serviceAccount === serviceAccount && r.kind === 'Role')),
    ...bindRules(plan.boundRoles.filter((b) => b.serviceAccount === serviceAccount)),
  );
  return rules;
}

/** What a tenant's Role cannot grant, for the warnings. */
function ungrantable(plan: RbacPlan, serviceAccount: string): string[] {
  const warnings: string[] = [];
  // CRDs (crds/) are warned about with the operator's grant; objects not allowed cluster-scoped are refused anyway.
  for (const o of plan.objects.filter((x) => x.serviceAccount === serviceAccount && !x.namespaced && !x.crdsDir && x.clusterScopedAllowed)) {
    warnings.push(
      `${sourceText(o.chart)} creates the cluster-scoped ${o.kind} as ServiceAccount ${serviceAccount}, which a Role in the tenant's namespace cannot allow: ` +
        'bind a ClusterRole to that ServiceAccount yourself if it may',
    );
  }
  return warnings;
}

export function tenantDocuments(plan: RbacPlan, opts: RbacOptions, labels: Readonly<Record<string, string>>): { documents: Document[]; warnings: string[] } {
  const namespaces = [...new Set(opts.tenantNamespaces ?? [])].sort(byText);
  const documents: Document[] = [];
  const warnings: string[] = [];
  if (namespaces.length === 0) return { documents, warnings };
  for (const sa of tenantServiceAccounts(plan)) {
    const rules = tenantRules(plan, sa);
    warnings.push(...ungrantable(plan, sa));
    const watched = plan.watched.filter((w) => w.serviceAccount === sa);
    const kinds = watched.map((w) => w.kind).sort(byText).join(', ');
    const onlyRoles = watched.every((w) => w.ansible === true);
    const name = tenantRoleName(opts, sa);
    for (const ns of namespaces) {
      const account = new Document({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: sa, namespace: ns, labels: { ...labels } } });
      account.commentBefore = onlyRoles
        ? ` The identity chartpilot runs ${kinds} as in namespace ${ns}: every API call of their Ansible runs and every drift repair.`
        : ` The identity chartpilot runs ${kinds} as in namespace ${ns}: every helm action (lookups included) and every drift repair.`;
      documents.push(
        account,
        roleDoc(
          'Role',
          name,
          ns,
          rules,
          labels,
          onlyRoles
            ? ` What ServiceAccount ${ns}/${sa} needs for the Ansible runs of ${kinds} here, and nothing more (read from their tasks).\n` +
                ' A task that reads more (k8s_info, lookup) than it names literally needs get on it: add that here.'
            : ` What ServiceAccount ${ns}/${sa} needs to install, upgrade, roll back, uninstall and repair the releases of ${kinds} here, and nothing more.\n` +
                ' A chart that uses lookup also needs get on what it reads: add that here (or not, and the lookup fails as the tenant).',
        ),
        bindingDoc('RoleBinding', name, ns, 'Role', { name: sa, namespace: ns }, labels),
      );
    }
  }
  return { documents, warnings };
}
