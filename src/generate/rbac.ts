/**
 * `chartpilot generate rbac`: the least-privilege permissions of the operator, as RBAC objects.
 * Pure: the kinds the charts create are found elsewhere (rbac-plan.ts); this module only turns
 * them into rules, with a comment on every rule saying why it is there.
 */
import { Document, isMap, isSeq } from 'yaml';
import type { PolicyRule, RenderedRole } from './manifest-kinds.js';

/** A watched custom resource kind, with the resource name the API serves it under. */
export interface WatchedResource {
  readonly group: string;
  readonly kind: string;
  readonly plural: string;
}

/** One kind a chart creates, resolved to its resource. */
export interface ChartObject {
  /** The chart as watches.yaml names it, for comments. */
  readonly chart: string;
  readonly group: string;
  readonly resource: string;
  readonly kind: string;
  readonly namespaced: boolean;
  /** How the resource name was found; `guess` means nobody confirmed it. */
  readonly resolution: 'discovery' | 'table' | 'guess';
  /** false: only seen in a template file, not in any render (e.g. behind an `if`). */
  readonly rendered: boolean;
  /** From a `crds/` directory: Helm creates these once and never updates or deletes them. */
  readonly crdsDir: boolean;
  /** The watches entry lets the chart create cluster-scoped objects (`allowClusterScoped`). */
  readonly clusterScopedAllowed: boolean;
}

export interface RbacPlan {
  readonly watched: readonly WatchedResource[];
  readonly objects: readonly ChartObject[];
  /** Roles and ClusterRoles the charts render: their rules must be held to create them. */
  readonly roles: readonly (RenderedRole & { readonly chart: string })[];
  /** Roles the charts bind without rendering them: the operator needs `bind` on them. */
  readonly boundRoles: readonly { readonly chart: string; readonly roleKind: string; readonly roleName: string }[];
  /** Found while planning (render failures, unknown kinds). */
  readonly warnings: readonly string[];
  /** Where the plan came from, for the header (e.g. "discovery at https://…" or "built-in table"). */
  readonly resolvedBy: string;
}

export interface RbacOptions {
  /** Base of every object name: `<name>-manager`, `<name>-leader-election`. */
  readonly name: string;
  /** The operator's namespace: its ServiceAccount and leader election Lease live there. */
  readonly namespace: string;
  readonly serviceAccount: string;
  /** Grant in these namespaces only (Roles), as for WATCH_NAMESPACE; empty = cluster-wide. */
  readonly roleNamespaces: readonly string[];
  /** The command line that regenerates the output, for the header. */
  readonly command: string;
  /** chartPullSecret names: read in the operator's namespace (a ClusterRole covers them already). */
  readonly pullSecrets?: readonly string[];
}

export interface RbacOutput {
  readonly documents: Document[];
  readonly warnings: string[];
}

interface CommentedRule {
  readonly rule: PolicyRule;
  readonly why: string;
}

const RBAC_API = 'rbac.authorization.k8s.io/v1';
export const OBJECT_VERBS = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] as const;
/** Helm's release storage: one Secret per revision in the release namespace. */
// Helm's secret storage driver gets, lists, creates, updates and deletes; nothing patches them.
export const STORAGE_VERBS = ['get', 'list', 'create', 'update', 'delete'] as const;
// CRs are read through informers only and written by merge patches (finalizers).
export const CR_VERBS = ['list', 'watch', 'patch'] as const;
export const LEASE_VERBS = ['get', 'create', 'update'] as const;

function byText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The operator's own needs: its kinds, Helm's storage, events. */
function operatorRules(plan: RbacPlan, clusterWide: boolean): CommentedRule[] {
  const rules: CommentedRule[] = [];
  const groups = [...new Set(plan.watched.map((w) => w.group))].sort(byText);
  for (const group of groups) {
    const plurals = plan.watched.filter((w) => w.group === group).map((w) => w.plural).sort(byText);
    const kinds = plan.watched.filter((w) => w.group === group).map((w) => w.kind).sort(byText).join(', ');
    rules.push(
      { rule: { apiGroups: [group], resources: plurals, verbs: [...CR_VERBS] }, why: `the watched kinds (${kinds}): read them, add and remove the finalizer` },
      { rule: { apiGroups: [group], resources: plurals.map((p) => `${p}/status`), verbs: ['patch'] }, why: 'write status (conditions, deployed release)' },
      {
        rule: { apiGroups: [group], resources: plurals.map((p) => `${p}/finalizers`), verbs: ['update'] },
        why: 'set ownerReferences with blockOwnerDeletion on chart objects (needed where OwnerReferencesPermissionEnforcement is on, e.g. OpenShift)',
      },
    );
  }
  rules.push(
    { rule: { apiGroups: [''], resources: ['secrets'], verbs: [...STORAGE_VERBS] }, why: "Helm's release storage (one Secret per revision, in the CR's namespace)" },
    { rule: { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] }, why: 'events on the custom resources (InstallSuccessful, UpgradeError, ...)' },
  );
  if (clusterWide) {
    rules.push({
      rule: { apiGroups: ['authorization.k8s.io'], resources: ['selfsubjectaccessreviews'], verbs: ['create'] },
      why: 'the start-up check that these permissions are in place',
    });
  }
  return rules;
}

/** Rules for the objects the charts create: one per API group, all verbs Helm and drift repair use. */
function objectRules(objects: readonly ChartObject[]): CommentedRule[] {
  const rules: CommentedRule[] = [];
  const managed = objects.filter((o) => !o.crdsDir);
  for (const group of [...new Set(managed.map((o) => o.group))].sort(byText)) {
    const inGroup = managed.filter((o) => o.group === group);
    const resources = [...new Set(inGroup.map((o) => o.resource))].sort(byText);
    const details = resources.map((r) => {
      const objs = inGroup.filter((o) => o.resource === r);
      const kind = objs[0]?.kind ?? r;
      const charts = [...new Set(objs.map((o) => o.chart))].sort(byText).join(', ');
      const flags = [
        objs.every((o) => !o.rendered) ? 'only in templates, not rendered by default' : '',
        objs.some((o) => o.resolution === 'guess') ? 'GUESSED resource name: check it' : '',
      ].filter((f) => f !== '');
      return `${kind} (${charts}${flags.length > 0 ? `; ${flags.join('; ')}` : ''})`;
    });
    rules.push({ rule: { apiGroups: [group], resources, verbs: [...OBJECT_VERBS] }, why: `objects the charts create: ${details.join(', ')}` });
  }
  const crds = objects.filter((o) => o.crdsDir);
  if (crds.length > 0) {
    const charts = [...new Set(crds.map((o) => o.chart))].sort(byText).join(', ');
    rules.push({
      rule: { apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions'], verbs: ['get', 'list', 'watch', 'create'] },
      why: `CRDs in the crds/ directory of ${charts}: Helm creates them on install and never updates or deletes them`,
    });
  }
  return rules;
}

/** Rules of rendered roles: RBAC only lets the operator create a role granting what it holds. */
function copiedRoleRules(roles: RbacPlan['roles']): CommentedRule[] {
  const seen = new Set<string>();
  const out: CommentedRule[] = [];
  for (const role of [...roles].sort((a, b) => byText(`${a.chart}/${a.kind}/${a.name}`, `${b.chart}/${b.kind}/${b.name}`))) {
    for (const rule of role.rules) {
      const key = JSON.stringify(rule);
      if (seen.has(key)) continue;
      seen.add(key);
      out.push({ rule, why: `held so that the chart ${role.chart} can create its ${role.kind} ${role.name} (RBAC refuses to grant what the creator lacks)` });
    }
  }
  return out;
}

function bindRules(bound: RbacPlan['boundRoles']): CommentedRule[] {
  const out: CommentedRule[] = [];
  for (const kind of ['ClusterRole', 'Role']) {
    const refs = bound.filter((b) => b.roleKind === kind);
    if (refs.length === 0) continue;
    const names = [...new Set(refs.map((r) => r.roleName))].sort(byText);
    const charts = [...new Set(refs.map((r) => r.chart))].sort(byText).join(', ');
    out.push({
      rule: { apiGroups: ['rbac.authorization.k8s.io'], resources: [kind === 'Role' ? 'roles' : 'clusterroles'], resourceNames: names, verbs: ['bind'] },
      why: `${charts} bind ${kind.toLowerCase()}s they do not create; binding needs this (or holding all their permissions)`,
    });
  }
  return out;
}

function roleDoc(kind: 'Role' | 'ClusterRole', name: string, namespace: string | undefined, rules: readonly CommentedRule[], opts: RbacOptions, comment: string): Document {
  const doc = new Document({
    apiVersion: RBAC_API,
    kind,
    metadata: { name, ...(namespace === undefined ? {} : { namespace }), labels: labels(opts) },
    rules: rules.map((r) => r.rule),
  });
  doc.commentBefore = comment;
  const seq = doc.get('rules', true);
  if (isSeq(seq)) {
    seq.items.forEach((item, i) => {
      const why = rules[i]?.why;
      if (why !== undefined && isMap(item)) item.commentBefore = ` ${why}`;
    });
  }
  return doc;
}

function bindingDoc(kind: 'RoleBinding' | 'ClusterRoleBinding', name: string, namespace: string | undefined, roleKind: 'Role' | 'ClusterRole', opts: RbacOptions): Document {
  return new Document({
    apiVersion: RBAC_API,
    kind,
    metadata: { name, ...(namespace === undefined ? {} : { namespace }), labels: labels(opts) },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: roleKind, name },
    subjects: [{ kind: 'ServiceAccount', name: opts.serviceAccount, namespace: opts.namespace }],
  });
}

function labels(opts: RbacOptions): Record<string, string> {
  return { 'app.kubernetes.io/name': opts.name, 'app.kubernetes.io/component': 'rbac' };
}

export function buildRbac(plan: RbacPlan, opts: RbacOptions): RbacOutput {
  const warnings = [...plan.warnings];
  const clusterWide = opts.roleNamespaces.length === 0;

  // Cluster-scoped objects need the entry's permission (the operator refuses them otherwise).
  const refused = plan.objects.filter((o) => !o.namespaced && !o.crdsDir && !o.clusterScopedAllowed);
  for (const o of refused) {
    warnings.push(`chart ${o.chart} creates the cluster-scoped ${o.kind}: not granted, because its watches entry does not set allowClusterScoped: true (the operator refuses such objects)`);
  }
  const granted = plan.objects.filter((o) => !refused.includes(o));
  for (const o of granted.filter((x) => x.crdsDir)) {
    warnings.push(`chart ${o.chart} ships CRDs in crds/: the operator is allowed to create CustomResourceDefinitions cluster-wide`);
  }
  const namespacedObjects = granted.filter((o) => o.namespaced);
  const clusterObjects = granted.filter((o) => !o.namespaced);

  const namespacedRoles = plan.roles.filter((r) => r.kind === 'Role');
  const clusterRoles = plan.roles.filter((r) => r.kind === 'ClusterRole' && plan.objects.some((o) => o.chart === r.chart && o.kind === 'ClusterRole' && !refused.includes(o)));
  const header = headerComment(plan, opts, warnings);
  const documents: Document[] = [];
  const manager = `${opts.name}-manager`;

  if (clusterWide) {
    const rules = [
      ...operatorRules(plan, true),
      ...objectRules(granted),
      ...copiedRoleRules([...namespacedRoles, ...clusterRoles]),
      ...bindRules(plan.boundRoles),
    ];
    documents.push(roleDoc('ClusterRole', manager, undefined, rules, opts, header), bindingDoc('ClusterRoleBinding', manager, undefined, 'ClusterRole', opts));
  } else {
    // Rules copied from rendered ClusterRoles go here too (with any nonResourceURLs they have).
    const clusterRules = [
      ...objectRules(clusterObjects),
      ...copiedRoleRules(clusterRoles),
      ...bindRules(plan.boundRoles.filter((b) => b.roleKind === 'ClusterRole')),
    ];
    if (clusterRules.length > 0) {
      const name = `${opts.name}-cluster-objects`;
      documents.push(
        roleDoc('ClusterRole', name, undefined, clusterRules, opts, ` Cluster-scoped objects the charts create; a Role cannot grant them.`),
        bindingDoc('ClusterRoleBinding', name, undefined, 'ClusterRole', opts),
      );
    }
    const rules = [
      ...operatorRules(plan, false),
      ...objectRules(namespacedObjects),
      ...copiedRoleRules(namespacedRoles),
      ...bindRules(plan.boundRoles.filter((b) => b.roleKind === 'Role')),
    ];
    [...opts.roleNamespaces].sort(byText).forEach((ns, i) => {
      documents.push(roleDoc('Role', manager, ns, rules, opts, i === 0 ? header : ` The same permissions in namespace ${ns}.`), bindingDoc('RoleBinding', manager, ns, 'Role', opts));
    });
  }

  const leader = `${opts.name}-leader-election`;
  documents.push(
    roleDoc(
      'Role',
      leader,
      opts.namespace,
      [{ rule: { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: [...LEASE_VERBS] }, why: 'the Lease of --leader-elect, in the operator namespace' }],
      opts,
      ' Leader election: only one replica acts at a time.',
    ),
    bindingDoc('RoleBinding', leader, opts.namespace, 'Role', opts),
  );
  const pullSecrets = [...new Set(opts.pullSecrets ?? [])].sort(byText);
  if (!clusterWide && pullSecrets.length > 0) {
    const name = `${opts.name}-chart-pull-secrets`;
    documents.push(
      roleDoc('Role', name, opts.namespace, [{ rule: { apiGroups: [''], resources: ['secrets'], resourceNames: pullSecrets, verbs: ['get'] }, why: 'chartPullSecret: credentials for charts from registries' }], opts, ' Charts from registries: their pull Secrets, in the operator namespace.'),
      bindingDoc('RoleBinding', name, opts.namespace, 'Role', opts),
    );
  }
  return { documents, warnings };
}

function headerComment(plan: RbacPlan, opts: RbacOptions, warnings: readonly string[]): string {
  const lines = [
    ` Generated by \`${opts.command}\`: regenerate it when a chart changes, rather than editing it.`,
    ` Least privilege for the operator's ServiceAccount ${opts.namespace}/${opts.serviceAccount}` +
      (opts.roleNamespaces.length === 0 ? ', in all namespaces.' : `, in namespace(s) ${opts.roleNamespaces.join(', ')} only (set WATCH_NAMESPACE to match).`),
    ` Chart objects were found by rendering each chart with its default values (and any samples)`,
    ` and by reading its templates; resources resolved by ${plan.resolvedBy}.`,
  ];
  if (opts.roleNamespaces.length > 0) {
    lines.push(' selfsubjectaccessreviews (the start-up check) need no rule: every authenticated user may create them (system:basic-user).');
  }
  if (warnings.length > 0) lines.push(' Review:', ...warnings.map((w) => ` - ${w}`));
  return lines.join('\n');
}
