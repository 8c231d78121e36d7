/**
 * `generate rbac|crd|sample` for Ansible kinds: the kinds a role's tasks touch (literal, from
 * templates, files and included files) become rules; what is computed at run time becomes a note
 * naming the file and the task; a task file that does not parse is one line naming it. No helm is
 * needed (HELM_BIN points nowhere).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { generateCommand } from '../../../src/generate/cli.js';
import { scanPlaybook, scanRole } from '../../../src/generate/ansible-tasks.js';
import { captureIo, tempTree } from './helpers.js';

const NO_HELM = { HELM_BIN: '/nonexistent/helm' };

const TASKS = `---
- name: Config
  kubernetes.core.k8s:
    state: present
    definition:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: "{{ ansible_operator_meta.name }}"}
- name: Deployment from a template
  kubernetes.core.k8s:
    template: deployment.yaml.j2
- name: Read secrets
  kubernetes.core.k8s_info:
    api_version: v1
    kind: Secret
- name: Templated kind
  kubernetes.core.k8s:
    api_version: v1
    kind: "{{ target_kind }}"
    name: x
- name: Definition from a variable
  k8s:
    definition: "{{ my_definition }}"
- include_tasks: extra.yml
- name: Computed include
  include_tasks: "{{ flavour }}.yml"
- block:
    - name: In a block
      k8s:
        api_version: networking.k8s.io/v1
        kind: Ingress
        name: x
  rescue:
    - name: Own status
      operator_sdk.util.k8s_status:
        api_version: apps.example.com/v1
        kind: App
        name: x
        status: {phase: failed}
- name: Say so
  operator_sdk.util.k8s_event:
    name: ran
    namespace: "{{ ansible_operator_meta.namespace }}"
    reason: Ran
    message: it ran
- name: Status of a Job
  operator_sdk.util.k8s_status:
    api_version: batch/v1
    kind: Job
    name: x
    status: {}
`;

function role(tasks = TASKS): Record<string, string> {
  return {
    'watches.yaml': '- {group: apps.example.com, version: v1, kind: App, role: app}\n',
    'roles/app/tasks/main.yml': tasks,
    'roles/app/tasks/extra.yml': '- name: The Service\n  kubernetes.core.k8s:\n    src: service.yaml\n',
    'roles/app/files/service.yaml': 'apiVersion: v1\nkind: Service\nmetadata:\n  name: x\n',
    'roles/app/templates/deployment.yaml.j2': 'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ name }}\n{% if replicas %}\nspec:\n  replicas: {{ replicas }}\n{% endif %}\n',
    'roles/app/handlers/main.yml': '- name: Restart\n  k8s: {state: absent, api_version: v1, kind: Pod, name: x}\n',
    'roles/app/meta/argument_specs.yml': 'argument_specs:\n  main:\n    options:\n      log_level: {type: str, choices: [info, debug], default: info}\n      replica_count: {type: int, required: true}\n',
  };
}

interface Rule { apiGroups: string[]; resources: string[]; verbs: string[] }

describe('reading what a role touches', () => {
  it('finds literal kinds in definitions, templates, files, includes, blocks and handlers', async () => {
    const dir = await tempTree('ansible-scan', role());
    const scan = await scanRole(join(dir, 'roles/app'), dir);
    const found = scan.kinds.map((k) => `${k.access} ${k.apiVersion ?? '?'} ${k.kind}`).sort();
    assert.deepEqual(found, [
      'event v1 Event',
      'read v1 Secret',
      'status apps.example.com/v1 App',
      'status batch/v1 Job',
      'write apps/v1 Deployment',
      'write networking.k8s.io/v1 Ingress',
      'write v1 ConfigMap',
      'write v1 Pod',
      'write v1 Service',
    ]);
    const notes = scan.notes.join('\n');
    assert.match(notes, /roles\/app\/tasks\/main\.yml: task "Templated kind": the kind it creates is computed at run time/u);
    assert.match(notes, /roles\/app\/tasks\/main\.yml: task "Definition from a variable": the kind it creates is computed/u);
    assert.match(notes, /task "Computed include" includes \{\{ flavour \}\}\.yml, which is not read: grant what it creates by hand/u);
    assert.equal(scan.notes.length, 3, notes);
  });

  it('turns them into rules: all verbs for what it writes, read verbs for what it only reads, /status for k8s_status', async () => {
    const dir = await tempTree('ansible-rbac', role());
    const io = captureIo(NO_HELM);
    assert.equal(await generateCommand(['rbac', '--watches-file', join(dir, 'watches.yaml'), '--offline'], io), 0, io.err());
    const docs = parseAllDocuments(io.out()).map((d) => d.toJS() as { kind: string; metadata: { name: string }; rules?: Rule[] });
    const manager = docs.find((d) => d.kind === 'ClusterRole' && d.metadata.name === 'chartpilot-manager');
    const rules = manager?.rules ?? [];
    const verbsOf = (group: string, resource: string): string[] => rules.filter((r) => r.apiGroups.includes(group) && r.resources.includes(resource)).flatMap((r) => r.verbs);
    for (const [group, resource] of [['', 'configmaps'], ['', 'services'], ['', 'pods'], ['apps', 'deployments'], ['networking.k8s.io', 'ingresses']] as const) {
      assert.ok(verbsOf(group, resource).includes('create'), `${group}/${resource}: ${JSON.stringify(rules)}`);
    }
    assert.deepEqual(verbsOf('batch', 'jobs/status'), ['get', 'patch', 'update']);
    assert.deepEqual(verbsOf('batch', 'jobs'), ['get'], 'k8s_status reads the Job, and writes only its status');
    assert.ok(verbsOf('apps.example.com', 'apps/status').includes('update'), 'k8s_status of the CR itself (replace: true updates the status)');
    assert.match(io.out(), /# Events the roles record \(operator_sdk\.util\.k8s_event counts repeats by reading and replacing them\): Event \(role roles\/app\)\n\s+- apiGroups:\n\s+- ""\n\s+resources:\n\s+- events\n\s+verbs:\n\s+- get\n\s+- create\n\s+- update\n/u);
    const secretRead = rules.find((r) => r.resources.includes('secrets') && !r.verbs.includes('create') && r.verbs.includes('watch'));
    assert.ok(secretRead, 'k8s_info of Secrets: get, list, watch');
    assert.match(io.out(), /# objects the Ansible roles create: .*ConfigMap \(role roles\/app\)/u);
    assert.match(io.out(), /Review:\n# - role roles\/app: roles\/app\/tasks\/main\.yml: task "Templated kind"/u);
    assert.match(io.err(), /warning: role roles\/app: .*task "Definition from a variable"/u);
    assert.doesNotMatch(io.err(), /helm/u, 'an Ansible kind needs no helm');
  });

  it('refuses a task file that does not parse in one line naming the file', async () => {
    const dir = await tempTree('ansible-bad', role('- name: broken\n  k8s: {kind: ConfigMap\n'));
    const io = captureIo(NO_HELM);
    assert.equal(await generateCommand(['rbac', '--watches-file', join(dir, 'watches.yaml'), '--offline'], io), 2);
    const lines = io.err().split('\n');
    assert.equal(lines.length, 1, io.err());
    assert.match(lines[0] ?? '', /^error: \/.*roles\/app\/tasks\/main\.yml:\d+ is not valid YAML \(.*\); fix the file/u);
  });
});

describe('generate crd and sample for an Ansible kind', () => {
  it('derives the schema from meta/argument_specs.yml and samples its defaults', async () => {
    const dir = await tempTree('ansible-crd', role());
    const io = captureIo(NO_HELM);
    assert.equal(await generateCommand(['crd', '--watches-file', join(dir, 'watches.yaml')], io), 0, io.err());
    const crd = parseAllDocuments(io.out())[0]?.toJS() as { spec: { versions: { schema: { openAPIV3Schema: { required?: string[]; properties: { spec: { properties: Record<string, unknown>; required: string[] } } } } }[] } };
    const root = crd.spec.versions[0]?.schema.openAPIV3Schema;
    assert.ok(root !== undefined);
    assert.deepEqual(Object.keys(root.properties.spec.properties).sort(), ['logLevel', 'replicaCount']);
    assert.deepEqual(root.properties.spec.required, ['replicaCount']);
    assert.deepEqual(root.required, ['spec'], 'required options make the spec required');
    assert.match(io.out(), /regenerate it when a role's\n# meta\/argument_specs\.yml changes/u);

    const sample = captureIo(NO_HELM);
    assert.equal(await generateCommand(['sample', '--watches-file', join(dir, 'watches.yaml')], sample), 0, sample.err());
    const cr = parseAllDocuments(sample.out())[0]?.toJS() as { apiVersion: string; spec: unknown };
    assert.equal(cr.apiVersion, 'apps.example.com/v1');
    assert.deepEqual(cr.spec, { logLevel: 'info' });
    assert.match(sample.out(), /Required, without a default: set replicaCount/u);
  });

  it('is open, as operator-sdk\'s scaffold, for a role without argument specs and for a playbook', async () => {
    const files = { ...role(), 'watches.yaml': '- {group: apps.example.com, version: v1, kind: App, role: app}\n- {group: apps.example.com, version: v1, kind: Play, playbook: site.yml}\n', 'site.yml': '- hosts: localhost\n  tasks: []\n' };
    delete (files as Record<string, string | undefined>)['roles/app/meta/argument_specs.yml'];
    const dir = await tempTree('ansible-open', files);
    const io = captureIo(NO_HELM);
    assert.equal(await generateCommand(['crd', '--watches-file', join(dir, 'watches.yaml')], io), 0, io.err());
    type Column = { name: string; jsonPath: string; priority?: number };
    const crds = parseAllDocuments(io.out()).map((d) => d.toJS() as { spec: { versions: { schema: { openAPIV3Schema: { properties: { spec: Record<string, unknown>; status: Record<string, unknown> } } }; subresources: unknown; additionalPrinterColumns: Column[] }[] } });
    assert.equal(crds.length, 2);
    for (const c of crds) {
      const v = c.spec.versions[0];
      assert.ok(v !== undefined);
      // The summary chartpilot writes (src/engines/ansible/summary.ts), then with -o wide the conditions it comes from.
      assert.deepEqual(v.additionalPrinterColumns.map((col) => [col.name, col.jsonPath, col.priority ?? 0]), [
        ['State', '.status.chartpilot.summary.state', 0],
        ['Reason', '.status.chartpilot.summary.reason', 0],
        ['Age', '.metadata.creationTimestamp', 0],
        ['Message', '.status.chartpilot.summary.message', 0],
        ['Ready', '.status.conditions[?(@.type=="Ready")].status', 1],
        ['Successful', '.status.conditions[?(@.type=="Successful")].status', 1],
      ]);
      assert.equal(v.schema.openAPIV3Schema.properties.spec['x-kubernetes-preserve-unknown-fields'], true);
      assert.equal(v.schema.openAPIV3Schema.properties.status['x-kubernetes-preserve-unknown-fields'], true);
      assert.deepEqual(v.subresources, { status: {} });
    }
    const sample = captureIo(NO_HELM);
    assert.equal(await generateCommand(['sample', '--watches-file', join(dir, 'watches.yaml')], sample), 0, sample.err());
    assert.deepEqual(parseAllDocuments(sample.out()).map((d) => (d.toJS() as { spec: unknown }).spec), [{}, {}]);
  });
});

describe('reading what a playbook touches', () => {
  it('follows its plays\' tasks, handlers, roles and literal import_playbook, and notes what it cannot follow', async () => {
    const dir = await tempTree('ansible-playbook', {
      'site.yml': [
        '- import_playbook: more.yml',
        '- hosts: localhost',
        '  roles: [web, {role: missing}]',
        '  tasks:',
        '    - name: A Job',
        '      kubernetes.core.k8s: {api_version: batch/v1, kind: Job, name: j}',
        '    - name: Another role',
        '      include_role: {name: "{{ which }}"}',
        '  handlers:',
        '    - name: Read Leases',
        '      kubernetes.core.k8s_info: {api_version: coordination.k8s.io/v1, kind: Lease}',
        '',
      ].join('\n'),
      'more.yml': '- hosts: localhost\n  tasks:\n    - kubernetes.core.k8s: {api_version: v1, kind: ServiceAccount, name: s}\n',
      'roles/web/tasks/main.yml': '- name: Web\n  k8s:\n    definition:\n      - {apiVersion: apps/v1, kind: StatefulSet}\n      - {apiVersion: v1, kind: Service}\n',
    });
    const scan = await scanPlaybook(join(dir, 'site.yml'), dir);
    assert.deepEqual(scan.kinds.map((k) => `${k.access} ${k.kind}`).sort(), ['read Lease', 'write Job', 'write Service', 'write ServiceAccount', 'write StatefulSet']);
    const notes = scan.notes.join('\n');
    assert.match(notes, /site\.yml: roles uses role missing, which was not found/u);
    assert.match(notes, /site\.yml: task "Another role" includes a computed role/u);
    assert.equal(scan.notes.length, 2, notes);
  });
});

describe('an Ansible kind that is built in (operator-sdk\'s sample watches Secrets)', () => {
  it('gets no CRD and no sample, with a note saying why, and still its rules', async () => {
    const dir = await tempTree('ansible-builtin', {
      ...role(),
      'watches.yaml': '- {group: "", version: v1, kind: Secret, role: app, manageStatus: false}\n- {group: apps.example.com, version: v1, kind: App, role: app}\n',
    });
    const crd = captureIo(NO_HELM);
    assert.equal(await generateCommand(['crd', '--watches-file', join(dir, 'watches.yaml')], crd), 0, crd.err());
    assert.deepEqual(parseAllDocuments(crd.out()).map((d) => (d.toJS() as { metadata: { name: string } }).metadata.name), ['apps.apps.example.com']);
    assert.match(crd.err(), /note: Secret\.v1 is a built-in kind \(served by the API server, not by a CRD\): no CRD or sample is generated for it/u);
    const sample = captureIo(NO_HELM);
    assert.equal(await generateCommand(['sample', '--watches-file', join(dir, 'watches.yaml')], sample), 0, sample.err());
    assert.deepEqual(parseAllDocuments(sample.out()).map((d) => (d.toJS() as { kind: string }).kind), ['App']);
    const rbac = captureIo(NO_HELM);
    assert.equal(await generateCommand(['rbac', '--watches-file', join(dir, 'watches.yaml'), '--offline'], rbac), 0, rbac.err());
    assert.match(rbac.out(), /# the watched kinds \(Secret\): [^\n]*\n\s+- apiGroups:\n\s+- ""\n\s+resources:\n\s+- secrets\n/u);
  });
});

describe('an Ansible kind run as a tenant\'s ServiceAccount', () => {
  it('gives the tenant what its tasks touch and no Helm release Secrets; the operator only reads them', async () => {
    const dir = await tempTree('ansible-tenant', role());
    const io = captureIo(NO_HELM);
    assert.equal(await generateCommand(['rbac', '--watches-file', join(dir, 'watches.yaml'), '--offline', '--default-service-account', 'tenant', '--tenant-namespace', 'team-a'], io), 0, io.err());
    const docs = parseAllDocuments(io.out()).map((d) => d.toJS() as { kind: string; metadata: { name: string; namespace?: string }; rules?: Rule[] });
    const tenant = docs.find((d) => d.kind === 'Role' && d.metadata.name === 'chartpilot-tenant-tenant' && d.metadata.namespace === 'team-a');
    const rules = tenant?.rules ?? [];
    assert.ok(rules.some((r) => r.resources.includes('configmaps') && r.verbs.includes('create')), JSON.stringify(rules));
    assert.ok(rules.some((r) => r.resources.includes('apps/status') && r.verbs.includes('patch')), 'k8s_status of the CR runs as the tenant');
    assert.ok(!rules.some((r) => r.resources.includes('secrets') && r.verbs.includes('create')), 'no Helm release storage for an Ansible kind');
    assert.match(io.out(), /every API call of their Ansible runs/u);
    const manager = docs.find((d) => d.kind === 'ClusterRole' && d.metadata.name === 'chartpilot-manager');
    const configmaps = manager?.rules?.find((r) => r.resources.includes('configmaps'));
    assert.deepEqual(configmaps?.verbs, ['get', 'list', 'watch'], 'the operator watches what the tenant creates');
  });
});
