/**
 * What RBAC documents are made of: rules for the charts' objects and roles, each with a comment
 * saying why it is there, and the Role and binding documents holding them. Shared by the
 * operator's grant (rbac.ts) and a tenant's (rbac-tenant.ts).
 */
import { Document, isMap, isSeq } from 'yaml';
import type { PolicyRule } from './manifest-kinds.js';
import type { ChartObject, RbacPlan } from './rbac-model.js';

export interface CommentedRule {
  readonly rule: PolicyRule;
  readonly why: string;
}

export const RBAC_API = 'rbac.authorization.k8s.io/v1';
export const OBJECT_VERBS = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] as const;
/** Reading what others create: dependent watches, drift and readiness. */
export const READ_VERBS = ['get', 'list', 'watch'] as const;
/** Helm's release storage: one Secret per revision in the release namespace. */
// Helm's secret storage driver gets, lists, creates, updates and deletes; nothing patches them.
export const STORAGE_VERBS = ['get', 'list', 'create', 'update', 'delete'] as const;
// CRs are cached by informers without their specs (memory), so a reconcile GETs the spec it
// needs; writes are merge patches (finalizers).
export const CR_VERBS = ['get', 'list', 'watch', 'patch'] as const;
export const LEASE_VERBS = ['get', 'create', 'update'] as const;

/** How warnings name where an object comes from: `chart <path>`, or an Ansible `role …`/`playbook …` label as is. */
export function sourceText(label: string): string {
  return /^(role|playbook) /u.test(label) ? label : `chart ${label}`;
}

/** "objects the charts create", or the roles', or both's. */
function createdBy(objects: readonly ChartObject[]): string {
  const roles = objects.filter((o) => /^(role|playbook) /u.test(o.chart)).length;
  return roles === 0 ? 'objects the charts create' : roles === objects.length ? 'objects the Ansible roles create' : 'objects the charts and Ansible roles create';
}

export function byText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Rules for the objects the charts create: one per API group, with `verbs` (all Helm and drift
 * repair use, unless the objects are someone else's to write). `what` opens each comment.
 */
export function objectRules(objects: readonly ChartObject[], verbs: readonly string[] = OBJECT_VERBS, what = createdBy(objects)): CommentedRule[] {
  const rules: CommentedRule[] = [];
  const all = objects.filter((o) => !o.crdsDir);
  // What Ansible tasks need fewer verbs for gets its own rule, unless something else gets all verbs
  // on it anyway (or these rules are read-only already, for a tenant's objects).
  const everything = new Set(all.filter((o) => o.only === undefined).map((o) => `${o.group}/${o.resource}`));
  const narrow = verbs === OBJECT_VERBS ? all.filter((o) => o.only !== undefined && !everything.has(`${o.group}/${o.resource}`)) : [];
  const managed = all.filter((o) => !narrow.includes(o));
  const bySet = new Map<string, ChartObject[]>();
  for (const o of narrow) {
    const key = JSON.stringify(o.only);
    bySet.set(key, [...(bySet.get(key) ?? []), o]);
  }
  for (const group of [...bySet.values()].sort((a, b) => byText(a[0]?.only?.why ?? '', b[0]?.only?.why ?? ''))) {
    const only = group[0]?.only;
    if (only !== undefined) rules.push(...objectRules(group.map((o) => ({ ...o, only: undefined })), only.verbs, only.why));
  }
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
    rules.push({ rule: { apiGroups: [group], resources, verbs: [...verbs] }, why: `${what}: ${details.join(', ')}` });
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

/** Rules of rendered roles: RBAC only lets whoever creates a role grant what it holds itself. */
export function copiedRoleRules(roles: RbacPlan['roles']): CommentedRule[] {
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

export function bindRules(bound: RbacPlan['boundRoles']): CommentedRule[] {
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

/** A Role or ClusterRole with a comment above each rule. */
export function roleDoc(
  kind: 'Role' | 'ClusterRole',
  name: string,
  namespace: string | undefined,
  rules: readonly CommentedRule[],
  labels: Readonly<Record<string, string>>,
  comment: string,
): Document {
  const doc = new Document({
    apiVersion: RBAC_API,
    kind,
    metadata: { name, ...(namespace === undefined ? {} : { namespace }), labels: { ...labels } },
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

/** A (Cluster)RoleBinding of the role of the same name to one ServiceAccount. */
export function bindingDoc(
  kind: 'RoleBinding' | 'ClusterRoleBinding',
  name: string,
  namespace: string | undefined,
  roleKind: 'Role' | 'ClusterRole',
  subject: { readonly name: string; readonly namespace: string },
  labels: Readonly<Record<string, string>>,
): Document {
  return new Document({
    apiVersion: RBAC_API,
    kind,
    metadata: { name, ...(namespace === undefined ? {} : { namespace }), labels: { ...labels } },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: roleKind, name },
    subjects: [{ kind: 'ServiceAccount', name: subject.name, namespace: subject.namespace }],
  });
}
