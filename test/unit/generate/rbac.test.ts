/** RBAC generation without a cluster: which kinds a chart creates, and the rules that follow. */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { parseAllDocuments } from 'yaml';
import { readChartFiles } from '../../../src/config/chart-files.js';
import { scanManifest, scanTemplates, type PolicyRule } from '../../../src/generate/manifest-kinds.js';
import { buildRbac, type ChartObject, type RbacOptions, type RbacPlan } from '../../../src/generate/rbac.js';
import { planRbac, sampleKey, tableResolver, type PlanEntry } from '../../../src/generate/rbac-plan.js';
import { yamlStream } from '../../../src/generate/output.js';
import { tar } from '../config/tar-writer.js';
import { tempTree } from './helpers.js';

interface Obj {
  kind: string;
  metadata: { name: string; namespace?: string };
  rules?: PolicyRule[];
  roleRef?: { kind: string; name: string };
  subjects?: { kind: string; name: string; namespace: string }[];
}

function objects(plan: RbacPlan, opts: Partial<RbacOptions> = {}): { docs: Obj[]; text: string; warnings: string[] } {
  const out = buildRbac(plan, { name: 'op', namespace: 'op-system', serviceAccount: 'op', roleNamespaces: [], command: 'chartpilot generate rbac', ...opts });
  const text = yamlStream(out.documents);
  return { docs: parseAllDocuments(text).map((d) => d.toJS() as Obj), text, warnings: out.warnings };
}

function obj(partial: Partial<ChartObject> & Pick<ChartObject, 'group' | 'resource' | 'kind'>): ChartObject {
  return { chart: 'charts/app', namespaced: true, resolution: 'table', rendered: true, crdsDir: false, clusterScopedAllowed: false, ...partial };
}

const BASE: RbacPlan = {
  watched: [{ group: 'demo.example.com', kind: 'WebApp', plural: 'webapps' }],
  objects: [
    obj({ group: 'apps', resource: 'deployments', kind: 'Deployment' }),
    obj({ group: '', resource: 'services', kind: 'Service' }),
    obj({ group: '', resource: 'configmaps', kind: 'ConfigMap' }),
  ],
  roles: [],
  boundRoles: [],
  warnings: [],
  resolvedBy: 'the built-in table',
};

function rulesOf(docs: Obj[], kind: string, name: string, namespace?: string): PolicyRule[] {
  const d = docs.find((x) => x.kind === kind && x.metadata.name === name && x.metadata.namespace === namespace);
  assert.ok(d, `${kind} ${name} in ${namespace ?? '(cluster)'} exists`);
  return d.rules ?? [];
}

function grants(rules: readonly PolicyRule[], group: string, resource: string, verb: string): boolean {
  return rules.some((r) => (r.apiGroups ?? []).includes(group) && (r.resources ?? []).includes(resource) && (r.verbs.includes(verb) || r.verbs.includes('*')));
}

describe('buildRbac', () => {
  it('grants the operator its kinds, Helm storage, events, the preflight, and exactly the chart kinds', () => {
    const { docs, text } = objects(BASE);
    const rules = rulesOf(docs, 'ClusterRole', 'op-manager');
    for (const v of ['get', 'list', 'watch', 'patch']) assert.ok(grants(rules, 'demo.example.com', 'webapps', v), v);
    // Nothing the operator does not use: it never updates or deletes CRs, never updates status.
    for (const v of ['update', 'delete']) assert.ok(!grants(rules, 'demo.example.com', 'webapps', v), `webapps ${v}`);
    assert.ok(grants(rules, 'demo.example.com', 'webapps/status', 'patch'));
    assert.ok(!grants(rules, 'demo.example.com', 'webapps/status', 'update'));
    assert.ok(grants(rules, 'demo.example.com', 'webapps/finalizers', 'update'));
    for (const v of ['get', 'list', 'create', 'update', 'delete']) assert.ok(grants(rules, '', 'secrets', v), `secrets ${v}`);
    assert.ok(!grants(rules, '', 'secrets', 'watch'), 'Helm storage needs no watch on Secrets');
    assert.ok(!grants(rules, '', 'secrets', 'patch'), 'nothing patches Helm storage Secrets');
    assert.ok(grants(rules, '', 'events', 'create') && grants(rules, '', 'events', 'patch'));
    assert.ok(grants(rules, 'authorization.k8s.io', 'selfsubjectaccessreviews', 'create'));
    for (const [g, r] of [['apps', 'deployments'], ['', 'services'], ['', 'configmaps']] as const) {
      for (const v of ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete']) assert.ok(grants(rules, g, r, v), `${r} ${v}`);
    }
    assert.ok(!grants(rules, '', 'pods', 'get'), 'nothing the charts do not create');
    assert.ok(!rules.some((r) => r.verbs.includes('*') || (r.resources ?? []).includes('*')), 'no wildcards');
    assert.match(text, /# objects the charts create: ConfigMap \(charts\/app\), Service \(charts\/app\)/);

    const binding = docs.find((d) => d.kind === 'ClusterRoleBinding');
    assert.ok(binding);
    assert.deepEqual(binding.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'op-manager' });
    assert.deepEqual(binding.subjects, [{ kind: 'ServiceAccount', name: 'op', namespace: 'op-system' }]);
    const lease = rulesOf(docs, 'Role', 'op-leader-election', 'op-system');
    assert.deepEqual(lease, [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] }]);
    assert.ok(docs.some((d) => d.kind === 'RoleBinding' && d.metadata.name === 'op-leader-election'));
  });

  it('lets the operator read its chartPullSecrets in its own namespace when it gets Roles only', () => {
    const { docs } = objects(BASE, { roleNamespaces: ['team-a'], pullSecrets: ['regcred', 'repocred', 'regcred'] });
    assert.deepEqual(rulesOf(docs, 'Role', 'op-chart-pull-secrets', 'op-system'), [{ apiGroups: [''], resources: ['secrets'], resourceNames: ['regcred', 'repocred'], verbs: ['get'] }]);
    assert.ok(docs.some((d) => d.kind === 'RoleBinding' && d.metadata.name === 'op-chart-pull-secrets' && d.metadata.namespace === 'op-system'));
    // Cluster-wide, the manager ClusterRole's Secret rule already covers them.
    assert.ok(!objects(BASE, { pullSecrets: ['regcred'] }).docs.some((d) => d.metadata.name === 'op-chart-pull-secrets'));
  });

  it('grants Roles in the given namespaces only, and no selfsubjectaccessreviews rule', () => {
    const { docs, text } = objects(BASE, { roleNamespaces: ['team-b', 'team-a'] });
    assert.ok(!docs.some((d) => d.kind === 'ClusterRole' || d.kind === 'ClusterRoleBinding'));
    for (const ns of ['team-a', 'team-b']) {
      const rules = rulesOf(docs, 'Role', 'op-manager', ns);
      assert.ok(grants(rules, 'demo.example.com', 'webapps/status', 'patch'));
      assert.ok(grants(rules, 'apps', 'deployments', 'create'));
      assert.ok(!grants(rules, 'authorization.k8s.io', 'selfsubjectaccessreviews', 'create'));
      const rb = docs.find((d) => d.kind === 'RoleBinding' && d.metadata.namespace === ns);
      assert.deepEqual(rb?.subjects, [{ kind: 'ServiceAccount', name: 'op', namespace: 'op-system' }]);
    }
    assert.match(text, /system:basic-user/);
  });

  it('grants cluster-scoped objects only to entries that allow them', () => {
    const plan: RbacPlan = {
      ...BASE,
      objects: [
        obj({ group: 'rbac.authorization.k8s.io', resource: 'clusterroles', kind: 'ClusterRole', namespaced: false, chart: 'charts/a' }),
        obj({ group: 'scheduling.k8s.io', resource: 'priorityclasses', kind: 'PriorityClass', namespaced: false, chart: 'charts/b', clusterScopedAllowed: true }),
      ],
    };
    const cluster = objects(plan);
    const rules = rulesOf(cluster.docs, 'ClusterRole', 'op-manager');
    assert.ok(!grants(rules, 'rbac.authorization.k8s.io', 'clusterroles', 'create'));
    assert.ok(grants(rules, 'scheduling.k8s.io', 'priorityclasses', 'create'));
    assert.match(cluster.warnings.join('\n'), /charts\/a creates the cluster-scoped ClusterRole: not granted, because its watches entry does not set allowClusterScoped: true/);
    assert.match(cluster.text, /# Review:\n# - chart charts\/a creates the cluster-scoped ClusterRole/);

    const roles = objects(plan, { roleNamespaces: ['ns1'] });
    const clusterObjects = rulesOf(roles.docs, 'ClusterRole', 'op-cluster-objects');
    assert.ok(grants(clusterObjects, 'scheduling.k8s.io', 'priorityclasses', 'create'));
    assert.ok(roles.docs.some((d) => d.kind === 'ClusterRoleBinding' && d.metadata.name === 'op-cluster-objects'));
  });

  it('holds the rules of roles the charts create, and bind on roles they only reference', () => {
    const plan: RbacPlan = {
      ...BASE,
      objects: [...BASE.objects, obj({ group: 'rbac.authorization.k8s.io', resource: 'roles', kind: 'Role' })],
      roles: [{ chart: 'charts/app', kind: 'Role', name: 'reader', origin: 'templates/role.yaml', rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] }] }],
      boundRoles: [{ chart: 'charts/app', roleKind: 'ClusterRole', roleName: 'view' }],
    };
    const { docs, text } = objects(plan);
    const rules = rulesOf(docs, 'ClusterRole', 'op-manager');
    assert.ok(grants(rules, '', 'pods', 'list'));
    assert.ok(rules.some((r) => r.verbs.includes('bind') && r.resourceNames?.includes('view') === true && (r.resources ?? []).includes('clusterroles')));
    assert.match(text, /can create its Role reader \(RBAC refuses to grant what the creator lacks\)/);
  });

  it('flags guessed resource names and kinds seen only in templates', () => {
    const plan: RbacPlan = {
      ...BASE,
      objects: [
        obj({ group: 'example.io', resource: 'widgets', kind: 'Widget', resolution: 'guess' }),
        obj({ group: 'networking.k8s.io', resource: 'ingresses', kind: 'Ingress', rendered: false }),
        obj({ group: 'apiextensions.k8s.io', resource: 'customresourcedefinitions', kind: 'CustomResourceDefinition', namespaced: false, crdsDir: true }),
      ],
    };
    const { docs, text, warnings } = objects(plan);
    assert.match(text, /Widget \(charts\/app; GUESSED resource name: check it\)/);
    assert.match(text, /Ingress \(charts\/app; only in templates, not rendered by default\)/);
    const rules = rulesOf(docs, 'ClusterRole', 'op-manager');
    assert.ok(grants(rules, 'apiextensions.k8s.io', 'customresourcedefinitions', 'create'));
    assert.ok(!grants(rules, 'apiextensions.k8s.io', 'customresourcedefinitions', 'delete'), 'Helm never deletes crds/ CRDs');
    assert.match(warnings.join('\n'), /ships CRDs in crds\//);
  });
});

describe('buildRbac for kinds with valuesFrom', () => {
  const WEB = { group: 'demo.example.com', kind: 'WebApp', plural: 'webapps' };
  const refs = [
    { kind: 'Secret' as const, name: 'platform-db', valuesKey: 'password', optional: false },
    { kind: 'ConfigMap' as const, name: 'platform-defaults', valuesKey: 'values.yaml', optional: false },
  ];

  it("lets the operator read and watch what CRs reference, and get the entry's own references in its namespace", () => {
    const plan: RbacPlan = { ...BASE, watched: [{ ...WEB, valuesFrom: { specField: 'valuesFrom', allowCrossNamespace: false, references: refs } }] };
    const { docs } = objects(plan, { roleNamespaces: ['team-a'] });
    const rules = rulesOf(docs, 'Role', 'op-manager', 'team-a');
    for (const v of ['get', 'list', 'watch']) assert.ok(grants(rules, '', 'configmaps', v) && grants(rules, '', 'secrets', v), v);
    assert.deepEqual(rulesOf(docs, 'Role', 'op-values-from', 'op-system'), [
      { apiGroups: [''], resources: ['secrets'], resourceNames: ['platform-db'], verbs: ['get'] },
      { apiGroups: [''], resources: ['secrets'], verbs: ['list', 'watch'] },
      { apiGroups: [''], resources: ['configmaps'], resourceNames: ['platform-defaults'], verbs: ['get'] },
      { apiGroups: [''], resources: ['configmaps'], verbs: ['list', 'watch'] },
    ]);
    assert.ok(docs.some((d) => d.kind === 'RoleBinding' && d.metadata.name === 'op-values-from' && d.metadata.namespace === 'op-system'));
  });

  it('grants nothing more for entries without valuesFrom, and the watch only where CRs may reference', () => {
    const without = objects(BASE).docs;
    assert.ok(!grants(rulesOf(without, 'ClusterRole', 'op-manager'), '', 'secrets', 'watch'));
    assert.ok(!without.some((d) => d.metadata.name === 'op-values-from'));
    const platformOnly: RbacPlan = { ...BASE, watched: [{ ...WEB, valuesFrom: { specField: undefined, allowCrossNamespace: false, references: refs } }] };
    const docs = objects(platformOnly).docs;
    assert.ok(!grants(rulesOf(docs, 'ClusterRole', 'op-manager'), '', 'secrets', 'watch'), "no CR can reference: only the entry's objects are read");
    assert.ok(docs.some((d) => d.metadata.name === 'op-values-from'));
  });

  it("lets a tenant's ServiceAccount get what its CRs reference", () => {
    const plan: RbacPlan = { ...BASE, watched: [{ ...WEB, serviceAccount: 'tenant', valuesFrom: { specField: 'valuesFrom', allowCrossNamespace: false, references: [] } }] };
    const { docs } = objects(plan, { tenantNamespaces: ['team-a'] });
    const rules = rulesOf(docs, 'Role', 'op-tenant-tenant', 'team-a');
    assert.ok(grants(rules, '', 'configmaps', 'get') && grants(rules, '', 'secrets', 'get'));
  });
});

describe('buildRbac for kinds that run as a tenant', () => {
  const TENANT: RbacPlan = {
    ...BASE,
    watched: [
      { group: 'demo.example.com', kind: 'WebApp', plural: 'webapps', serviceAccount: 'tenant' },
      { group: 'demo.example.com', kind: 'Cache', plural: 'caches', serviceAccount: 'tenant' },
    ],
    objects: [
      obj({ group: 'apps', resource: 'deployments', kind: 'Deployment', serviceAccount: 'tenant' }),
      obj({ group: '', resource: 'configmaps', kind: 'ConfigMap', serviceAccount: 'tenant' }),
      obj({ group: 'rbac.authorization.k8s.io', resource: 'roles', kind: 'Role', serviceAccount: 'tenant' }),
      obj({ group: 'rbac.authorization.k8s.io', resource: 'clusterrolebindings', kind: 'ClusterRoleBinding', namespaced: false, clusterScopedAllowed: true, serviceAccount: 'tenant' }),
    ],
    roles: [{ chart: 'charts/app', kind: 'Role', name: 'reader', origin: 'templates/role.yaml', rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }], serviceAccount: 'tenant' }],
    boundRoles: [{ chart: 'charts/app', roleKind: 'ClusterRole', roleName: 'view', serviceAccount: 'tenant' }],
  };

  it('lets the operator impersonate exactly the named ServiceAccounts and only read what they create', () => {
    const { docs, text } = objects(TENANT);
    const rules = rulesOf(docs, 'ClusterRole', 'op-manager');
    const impersonate = rules.filter((r) => r.verbs.includes('impersonate'));
    assert.deepEqual(impersonate, [{ apiGroups: [''], resources: ['serviceaccounts'], resourceNames: ['tenant'], verbs: ['impersonate'] }]);
    assert.ok(grants(rules, '', 'serviceaccounts', 'watch') && !grants(rules, '', 'serviceaccounts', 'create'));
    for (const v of ['get', 'list', 'watch']) assert.ok(grants(rules, 'apps', 'deployments', v), v);
    for (const v of ['create', 'update', 'patch', 'delete']) assert.ok(!grants(rules, 'apps', 'deployments', v), `deployments ${v}: the tenant writes them`);
    assert.ok(grants(rules, '', 'secrets', 'get') && grants(rules, '', 'secrets', 'list'));
    for (const v of ['create', 'update', 'delete']) assert.ok(!grants(rules, '', 'secrets', v), `secrets ${v}: the tenant writes Helm's records`);
    assert.ok(!grants(rules, '', 'pods', 'get') && !rules.some((r) => r.verbs.includes('bind')), "the tenant's roles are the tenant's to hold");
    assert.ok(!grants(rules, 'rbac.authorization.k8s.io', 'clusterrolebindings', 'create'));
    assert.match(text, /impersonate exactly those names/);
    assert.match(text, /Grant them in each namespace with --tenant-namespace <ns>/);
    assert.ok(!docs.some((d) => d.kind === 'ServiceAccount'), 'no tenant objects without --tenant-namespace');
  });

  it('keeps full rights on objects and storage for kinds that still run as the operator', () => {
    const plan: RbacPlan = {
      ...TENANT,
      watched: [...TENANT.watched, { group: 'demo.example.com', kind: 'Legacy', plural: 'legacies' }],
      objects: [...TENANT.objects, obj({ group: '', resource: 'configmaps', kind: 'ConfigMap', chart: 'charts/legacy' })],
    };
    const rules = rulesOf(objects(plan).docs, 'ClusterRole', 'op-manager');
    assert.ok(grants(rules, '', 'configmaps', 'create'), 'the Legacy chart is written by the operator');
    assert.ok(grants(rules, '', 'secrets', 'create'));
    assert.ok(!grants(rules, 'apps', 'deployments', 'create'));
  });

  it('--tenant-namespace adds, per namespace, the ServiceAccount, a Role with what the charts need and its RoleBinding', () => {
    const { docs, text, warnings } = objects(TENANT, { tenantNamespaces: ['team-b', 'team-a'] });
    for (const ns of ['team-a', 'team-b']) {
      assert.ok(docs.some((d) => d.kind === 'ServiceAccount' && d.metadata.name === 'tenant' && d.metadata.namespace === ns));
      const rules = rulesOf(docs, 'Role', 'op-tenant-tenant', ns);
      for (const v of ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete']) assert.ok(grants(rules, 'apps', 'deployments', v), `deployments ${v}`);
      for (const v of ['get', 'list', 'create', 'update', 'delete']) assert.ok(grants(rules, '', 'secrets', v), `secrets ${v}`);
      assert.ok(grants(rules, 'demo.example.com', 'caches/finalizers', 'update') && grants(rules, 'demo.example.com', 'webapps/finalizers', 'update'));
      assert.ok(grants(rules, '', 'pods', 'get'), 'holds what the Role it creates grants');
      assert.ok(rules.some((r) => r.verbs.includes('bind') && r.resourceNames?.includes('view') === true));
      assert.ok(!grants(rules, 'rbac.authorization.k8s.io', 'clusterrolebindings', 'create'), 'a Role cannot grant cluster-scoped objects');
      const rb = docs.find((d) => d.kind === 'RoleBinding' && d.metadata.name === 'op-tenant-tenant' && d.metadata.namespace === ns);
      assert.deepEqual(rb?.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'op-tenant-tenant' });
      assert.deepEqual(rb.subjects, [{ kind: 'ServiceAccount', name: 'tenant', namespace: ns }]);
    }
    assert.match(warnings.join('\n'), /creates the cluster-scoped ClusterRoleBinding as ServiceAccount tenant, which a Role in the tenant's namespace cannot allow/);
    assert.match(text, /Their Roles follow, for namespace\(s\) team-a, team-b/);
    assert.match(text, /A chart that uses lookup also needs get on what it reads/);
  });

  it('leaves the output for kinds without a ServiceAccount exactly as it was', () => {
    const { text } = objects(BASE, { tenantNamespaces: ['team-a'] });
    assert.equal(text, objects(BASE).text);
  });
});

describe('which kinds a chart creates', () => {
  it('reads kinds, roles and bindings from helm template output', () => {
    const scan = scanManifest(`---
# Source: app/templates/sa.yaml
apiVersion: v1
kind: ServiceAccount
metadata: {name: app}
---
# Source: app/templates/role.yaml
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: app}
rules:
  - {apiGroups: [""], resources: [pods], verbs: [get]}
---
# Source: app/templates/rb.yaml
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: app}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: app}
---
# Source: app/templates/view.yaml
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: app-view}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
---
# Source: app/templates/list.yaml
apiVersion: v1
kind: List
items:
  - {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}
`);
    assert.deepEqual(scan.kinds.map((k) => [k.kind, k.origin]), [
      ['ServiceAccount', 'templates/sa.yaml'],
      ['Role', 'templates/role.yaml'],
      ['RoleBinding', 'templates/rb.yaml'],
      ['RoleBinding', 'templates/view.yaml'],
      ['ConfigMap', 'templates/list.yaml'],
    ]);
    assert.deepEqual(scan.roles[0]?.rules, [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }]);
    assert.deepEqual(scan.roleRefs.map((r) => r.roleName), ['view'], 'the Role the chart renders itself needs no bind');
  });

  it('finds kinds behind conditions in templates, CRDs in crds/ and subcharts (dir and .tgz)', async () => {
    const dir = await tempTree('scan', {
      'Chart.yaml': 'apiVersion: v2\nname: app\nversion: 0.1.0\n',
      'templates/ingress.yaml': '{{- if .Values.ingress.enabled }}\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: x\nspec:\n  rules: []\n{{- end }}\n',
      'templates/hpa.yaml': 'apiVersion: {{ include "hpa.apiVersion" . }}\nkind: HorizontalPodAutoscaler\n---\napiVersion: "v1"\nkind: "Service" # comment\n',
      'templates/_helpers.tpl': 'apiVersion: v1\nkind: Secret\n',
      'templates/NOTES.txt': 'kind: Pod\n',
      'templates/nested.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  ownerReferences:\n    - kind: Deployment\n',
      'crds/widget.yaml': 'apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n',
      'charts/sub/Chart.yaml': 'apiVersion: v2\nname: sub\nversion: 0.1.0\n',
      'charts/sub/templates/job.yaml': 'apiVersion: batch/v1\nkind: Job\n',
      'docs/example.yaml': 'apiVersion: v1\nkind: Pod\n',
    });
    await writeFile(join(dir, 'charts/packed-0.1.0.tgz'), gzipSync(tar([{ name: 'packed/templates/cj.yaml', data: 'apiVersion: batch/v1\nkind: CronJob\n' }])));
    const found = await scanTemplates(await readChartFiles(dir));
    assert.deepEqual(
      found.map((f) => `${f.apiVersion ?? '?'} ${f.kind} ${f.origin}`).sort(),
      [
        '? HorizontalPodAutoscaler templates/hpa.yaml',
        'apiextensions.k8s.io/v1 CustomResourceDefinition crds/widget.yaml',
        'batch/v1 CronJob charts/packed-0.1.0.tgz/templates/cj.yaml',
        'batch/v1 Job charts/sub/templates/job.yaml',
        'networking.k8s.io/v1 Ingress templates/ingress.yaml',
        'v1 ConfigMap templates/nested.yaml',
        'v1 Service templates/hpa.yaml',
      ],
    );
  });
});

describe('planRbac', () => {
  const entry = (chartPath: string, extra: Partial<PlanEntry> = {}): PlanEntry => ({
    group: 'demo.example.com',
    version: 'v1',
    kind: 'WebApp',
    chartPath,
    chartLabel: 'charts/app',
    overrideValues: {},
    allowClusterScoped: false,
    ...extra,
  });

  it('renders defaults, then samples with overrides on top, and reads the templates', async () => {
    const dir = await tempTree('plan', {
      'Chart.yaml': 'apiVersion: v2\nname: app\nversion: 0.1.0\n',
      'templates/deploy.yaml': 'apiVersion: apps/v1\nkind: Deployment\n',
      'templates/pdb.yaml': '{{ if .Values.pdb }}\napiVersion: policy/v1\nkind: PodDisruptionBudget\n{{ end }}\n',
      'templates/widget.yaml': 'apiVersion: example.io/v1\nkind: Widget\n',
    });
    const rendered: Record<string, unknown>[] = [];
    const plan = await planRbac([entry(dir, { overrideValues: { 'image.tag': 'pinned' } })], new Map([[sampleKey('demo.example.com/v1', 'WebApp'), [{ pdb: true, image: { tag: 'x' } }]]]), {
      resolver: tableResolver,
      render: (_chart, values) => {
        rendered.push(values);
        const pdb = values['pdb'] === true ? '---\n# Source: app/templates/pdb.yaml\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: a}\n' : '';
        return Promise.resolve(`---\n# Source: app/templates/deploy.yaml\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a}\n${pdb}`);
      },
    });
    assert.deepEqual(rendered, [{ image: { tag: 'pinned' } }, { pdb: true, image: { tag: 'pinned' } }], 'overrideValues win over the sample, as in the operator');
    assert.deepEqual(plan.watched, [{ group: 'demo.example.com', kind: 'WebApp', plural: 'webapps' }]);
    const byKind = new Map(plan.objects.map((o) => [o.kind, o]));
    assert.equal(byKind.get('Deployment')?.rendered, true);
    assert.equal(byKind.get('PodDisruptionBudget')?.rendered, true, 'rendered with the sample');
    assert.equal(byKind.get('Widget')?.rendered, false);
    assert.equal(byKind.get('Widget')?.resolution, 'guess');
    assert.equal(byKind.get('Widget')?.resource, 'widgets');
    assert.match(plan.warnings.join('\n'), /creates Widget \(example\.io\/v1\), which neither the cluster nor the built-in table knows; granted as resource "widgets"/);
  });

  it('falls back to the templates when the chart does not render with its defaults', async () => {
    const dir = await tempTree('plan-fail', {
      'Chart.yaml': 'apiVersion: v2\nname: app\nversion: 0.1.0\n',
      'templates/svc.yaml': 'apiVersion: v1\nkind: Service\n',
    });
    const plan = await planRbac([entry(dir)], new Map(), {
      resolver: tableResolver,
      render: () => Promise.reject(new Error('execution error at (app/templates/svc.yaml:1:1): host is required\nmore')),
    });
    assert.match(plan.warnings[0] ?? '', /chart charts\/app does not render with its default values \(execution error .*host is required\); only its template files were read/);
    assert.deepEqual(plan.objects.map((o) => [o.kind, o.rendered]), [['Service', false]]);
  });
});
