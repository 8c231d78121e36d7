/**
 * Generated manifests of Ansible kinds against the real API server: the CRD `chartpilot new
 * --ansible` writes (its schema from the role's argument specs) and one covering every argument
 * spec type are structural, accepted, and check what they promise (types, enums, required keys,
 * unknown keys refused by kubectl's strict field validation); the samples validate against them;
 * the scaffolded role runs under the real Ansible runtime with the sample's spec as ansible-operator
 * passes it (snake_case), and its argument specs refuse what the CRD refuses;
 * `operator-sdk bundle validate`'s checks (bundle-validate) accept a bundle for the Ansible project.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { parse } from 'yaml';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { loadWatches } from '../../src/config/watches.js';
import { isAnsibleEntry } from '../../src/config/types.js';
import { newCommand } from '../../src/generate/cli.js';
import { crdYaml, renderCrds, renderSamples } from '../../src/generate/render.js';
import { established } from './crd.js';
import { newNamespace, testCluster, type RunResult, type TestCluster } from './harness.js';
import { assertBundleValid, generate, HUB_FLAGS, ICON_SVG, olmToolsBeforeAll } from './olm-tools.js';
import { runAnsible, taskResult } from './ansible-run.js';
import { toSnake } from '../../src/config/paramconv.js';

const olmTools = olmToolsBeforeAll(['bundle-validate']);

function deleteAfter(t: TestContext, cluster: TestCluster, args: string[]): void {
  t.after(async () => {
    await cluster.kubectl(['delete', ...args, '--ignore-not-found', '--wait=false'], { allowFail: true });
  });
}

function apply(cluster: TestCluster, ns: string, obj: unknown): Promise<RunResult> {
  return cluster.kubectl(['apply', '-n', ns, '-f', '-'], { input: JSON.stringify(obj), allowFail: true });
}

async function newAnsible(dir: string, args: string[]): Promise<{ code: number; output: string }> {
  const lines: string[] = [];
  const code = await newCommand(['--ansible', dir, ...args], { stdout: (x) => { lines.push(x); }, stderr: (l) => { lines.push(l); }, env: { HELM_BIN: '/nonexistent/helm' } });
  return { code, output: lines.join('\n') };
}

describe('chartpilot new --ansible', () => {
  it('scaffolds a role, watches.yaml, Dockerfile and deploy/ whose CRD the API server takes and whose sample validates', async (t) => {
    const cluster = await testCluster();
    const suffix = randomBytes(3).toString('hex');
    const group = `ans${suffix}.test.chartpilot.io`;
    const dir = join(await mkdtemp(join(tmpdir(), 'chartpilot-new-ansible-')), 'greeting-operator');
    const made = await newAnsible(dir, ['--group', group, '--kind', 'Greeting']);
    assert.equal(made.code, 0, made.output);
    const files = readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name).slice(dir.length + 1)).sort();
    assert.deepEqual(files, [
      '.dockerignore',
      'Dockerfile',
      'Makefile',
      'README.md',
      'deploy/Kustomization',
      `deploy/crds/${group}_greetings.yaml`,
      'deploy/namespace.yaml',
      'deploy/network-policy.yaml',
      'deploy/operator-metrics.yaml',
      'deploy/operator.yaml',
      'deploy/rbac.yaml',
      'deploy/samples/greeting.yaml',
      'deploy/service-account.yaml',
      'monitoring/grafana-dashboard.json',
      'monitoring/prometheus-rule.yaml',
      'monitoring/rules.yml',
      'roles/greeting/defaults/main.yml',
      'roles/greeting/meta/argument_specs.yml',
      'roles/greeting/meta/main.yml',
      'roles/greeting/tasks/main.yml',
      'watches.yaml',
    ]);
    assert.match(readFileSync(join(dir, 'Dockerfile'), 'utf8'), /^FROM chartpilot-ansible:\d+\.\d+\.\d+\nCOPY watches\.yaml \/opt\/chartpilot\/watches\.yaml\nCOPY roles\/ \/opt\/chartpilot\/roles\/$/mu);
    const operator = readFileSync(join(dir, 'deploy/operator.yaml'), 'utf8');
    assert.match(operator, /- name: ANSIBLE_GATHERING\n\s+value: explicit/u);
    assert.match(operator, /mountPath: \/tmp/u);
    assert.match(readFileSync(join(dir, 'deploy/rbac.yaml'), 'utf8'), /# objects the Ansible roles create: ConfigMap \(role roles\/greeting\)\n\s+- apiGroups:\n\s+- ""\n\s+resources:\n\s+- configmaps/u);
    const loaded = await loadWatches(join(dir, 'watches.yaml'), {});
    assert.ok(loaded.ok, loaded.ok ? '' : loaded.problems.join('\n'));
    const entry = loaded.entries[0];
    assert.ok(entry !== undefined && isAnsibleEntry(entry) && entry.ansible.role === join(dir, 'roles/greeting'));

    deleteAfter(t, cluster, ['crd', `greetings.${group}`]);
    const crd = await cluster.kubectl(['apply', '-f', join(dir, `deploy/crds/${group}_greetings.yaml`)], { allowFail: true });
    assert.equal(crd.exitCode, 0, crd.stderr);
    await established(cluster, `greetings.${group}`);
    const ns = await newNamespace(t, 'ansible-new');
    const sample = await cluster.kubectl(['apply', '-n', ns, '-f', join(dir, 'deploy/samples/greeting.yaml')], { allowFail: true });
    assert.equal(sample.exitCode, 0, sample.stderr);
    const stored = await cluster.kubectl(['get', `greetings.${group}`, 'greeting-sample', '-n', ns, '-o', 'jsonpath={.spec.logLevel}']);
    assert.equal(stored.stdout, 'info');

    const base = { apiVersion: `${group}/v1alpha1`, kind: 'Greeting', metadata: { name: 'g2' } };
    const badEnum = await apply(cluster, ns, { ...base, spec: { logLevel: 'loud' } });
    assert.notEqual(badEnum.exitCode, 0);
    assert.match(badEnum.stderr, /spec\.logLevel: Unsupported value: "loud"/u);
    const snake = await apply(cluster, ns, { ...base, spec: { log_level: 'debug' } });
    assert.notEqual(snake.exitCode, 0, 'the CR uses camelCase keys; snake_case is unknown');
    assert.match(snake.stderr, /unknown field "spec\.log_level"/u);

    const again = await newAnsible(dir, ['--group', group, '--kind', 'Greeting']);
    assert.equal(again.code, 2, 'a second run refuses the now non-empty directory');
    assert.match(again.output, /is not empty/u);
  });
});

const ARGUMENT_SPECS = `argument_specs:
  main:
    short_description: Every type Ansible's argument specs know.
    options:
      name_prefix: {type: str, required: true, description: The prefix of every name.}
      replica_count: {type: int, default: 1}
      cpu_share: {type: float, default: 0.5}
      debug_mode: {type: bool, default: false}
      config_path: {type: path, default: /etc/app}
      anything: {type: raw}
      memory_limit: {type: bytes, default: 1M}
      log_level: {choices: [debug, info], default: info}
      image_url: {type: str}
      ports: {type: list, elements: int, default: [80, 443]}
      zones: {type: list, elements: str, choices: [a, b]}
      extra_labels: {type: dict, default: {team: platform}}
      database:
        type: dict
        options:
          host_name: {type: str, required: true}
          port_number: {type: int, default: 5432}
      sidecars:
        type: list
        elements: dict
        options:
          image_ref: {type: str, required: true}
`;

describe('a CRD from argument specs of every type', () => {
  it('is structural and accepted, and checks types, enums and required keys, nested ones too', async (t) => {
    const cluster = await testCluster();
    const suffix = randomBytes(3).toString('hex');
    const group = `spec${suffix}.test.chartpilot.io`;
    const dir = await mkdtemp(join(tmpdir(), 'chartpilot-argspec-'));
    await writeFile(join(dir, 'watches.yaml'), `- {group: ${group}, version: v1, kind: Every, role: every}\n`);
    await mkdir(join(dir, 'roles/every/tasks'), { recursive: true });
    await mkdir(join(dir, 'roles/every/meta'), { recursive: true });
    await writeFile(join(dir, 'roles/every/tasks/main.yml'), '- name: nothing\n  debug: {msg: hi}\n');
    await writeFile(join(dir, 'roles/every/meta/argument_specs.yml'), ARGUMENT_SPECS);
    const watches = join(dir, 'watches.yaml');
    const [crd] = await renderCrds(watches, {});
    assert.ok(crd !== undefined);
    deleteAfter(t, cluster, ['crd', crd.name]);
    const applied = await cluster.kubectl(['apply', '-f', '-'], { input: crdYaml(crd, watches), allowFail: true });
    assert.equal(applied.exitCode, 0, applied.stderr);
    await established(cluster, crd.name);
    const ns = await newNamespace(t, 'ansible-argspec');

    // The sample leaves out the required namePrefix (its comment says so): with it, it validates.
    const [sample] = await renderSamples(watches, {});
    assert.match(sample?.yaml ?? '', /Required, without a default: set namePrefix/u);
    const withPrefix = (sample?.yaml ?? '').replace(/^spec:\n/mu, 'spec:\n  namePrefix: demo\n');
    const ok = await cluster.kubectl(['apply', '-n', ns, '-f', '-'], { input: withPrefix, allowFail: true });
    assert.equal(ok.exitCode, 0, `${ok.stderr}\n${withPrefix}`);
    const stored = JSON.parse((await cluster.kubectl(['get', crd.name, 'every-sample', '-n', ns, '-o', 'json'])).stdout) as { spec: Record<string, unknown> };
    assert.deepEqual(stored.spec, {
      namePrefix: 'demo', replicaCount: 1, cpuShare: 0.5, debugMode: false, configPath: '/etc/app', memoryLimit: '1M', logLevel: 'info', ports: [80, 443], extraLabels: { team: 'platform' },
    });

    const base = { apiVersion: `${group}/v1`, kind: 'Every', metadata: { name: 'e' } };
    const full = {
      namePrefix: 'p', replicaCount: 2, cpuShare: 1.5, debugMode: true, configPath: '/x', anything: [1, 'two', { three: 3 }], memoryLimit: 1048576,
      logLevel: 'debug', imageURL: 'https://x', ports: [1], zones: ['a'], extraLabels: { a: 'b' }, database: { hostName: 'db', portNumber: 1 }, sidecars: [{ imageRef: 'busybox' }],
    };
    const good = await apply(cluster, ns, { ...base, spec: full });
    assert.equal(good.exitCode, 0, good.stderr);
    const refused: [string, Record<string, unknown>, RegExp][] = [
      ['a string for an int', { ...full, replicaCount: 'two' }, /spec\.replicaCount: Invalid value: "string": spec\.replicaCount in body must be of type integer/u],
      ['a choice not listed', { ...full, logLevel: 'trace' }, /spec\.logLevel: Unsupported value: "trace"/u],
      ['a list element not listed', { ...full, zones: ['c'] }, /spec\.zones\[0\]: Unsupported value: "c"/u],
      ['a missing required key', { replicaCount: 1 }, /spec\.namePrefix: Required value/u],
      ['a missing nested required key', { ...full, database: { portNumber: 1 } }, /spec\.database\.hostName: Required value/u],
      ['a missing required key in a list of maps', { ...full, sidecars: [{}] }, /spec\.sidecars\[0\]\.imageRef: Required value/u],
      ['a bool as a string', { ...full, debugMode: 'yes' }, /spec\.debugMode: Invalid value: "string"/u],
    ];
    for (const [what, spec, message] of refused) {
      const r = await apply(cluster, ns, { ...base, metadata: { name: 'bad' }, spec });
      assert.notEqual(r.exitCode, 0, what);
      assert.match(r.stderr, message, what);
    }
    const noSpec = await apply(cluster, ns, { ...base, metadata: { name: 'nospec' } });
    assert.notEqual(noSpec.exitCode, 0, 'a role with required options needs a spec');
  });
});

describe('the role chartpilot new --ansible scaffolds', () => {
  it('runs under ansible-runner with the sample\'s spec, makes its ConfigMap, and its argument specs refuse a value the CRD refuses', async (t) => {
    const cluster = await testCluster();
    const dir = join(await mkdtemp(join(tmpdir(), 'chartpilot-new-ansible-run-')), 'greeting-operator');
    const made = await newAnsible(dir, ['--group', 'demo.chartpilot.io', '--kind', 'Greeting']);
    assert.equal(made.code, 0, made.output);
    const ns = await newNamespace(t, 'ansible-scaffold');
    const sample = parse(readFileSync(join(dir, 'deploy/samples/greeting.yaml'), 'utf8')) as { spec: Record<string, unknown> };
    // As ansible-operator passes a CR: its spec keys snake_cased, and the CR's name and namespace.
    const vars = (spec: Record<string, unknown>): Record<string, unknown> => ({
      ...Object.fromEntries(Object.entries(spec).map(([k, v]) => [toSnake(k), v])),
      ansible_operator_meta: { name: 'hello', namespace: ns },
    });
    const playbook = `- hosts: localhost\n  gather_facts: false\n  roles:\n    - role: ${join(dir, 'roles/greeting')}\n`;
    const run = await runAnsible({ dir: join(dir, '.run-ok'), project: { 'main.yml': playbook }, playbook: 'main.yml', extravars: vars(sample.spec), kubeconfig: cluster.kubeconfig, ident: 'ok' });
    assert.equal(run.exitCode, 0, run.output);
    assert.equal(taskResult(run, "The Greeting's ConfigMap").event, 'runner_on_ok');
    const cm = JSON.parse((await cluster.kubectl(['get', 'configmap', 'hello-greeting', '-n', ns, '-o', 'json'])).stdout) as { data: Record<string, string> };
    assert.deepEqual(cm.data, { message: 'Hello from Greeting', log_level: 'info' });

    const bad = await runAnsible({ dir: join(dir, '.run-bad'), project: { 'main.yml': playbook }, playbook: 'main.yml', extravars: vars({ ...sample.spec, logLevel: 'loud' }), kubeconfig: cluster.kubeconfig, ident: 'bad' });
    assert.notEqual(bad.exitCode, 0, 'Ansible\'s own argument validation refuses it too');
    assert.match(bad.output, /value of log_level must be one of: debug, info, warning, error, got: loud/u);
  });
});

describe('an OLM bundle of an Ansible project', () => {
  it('passes bundle validation (operator-sdk\'s checks), default and suite=operatorframework', async () => {
    const tools = olmTools();
    const dir = join(await mkdtemp(join(tmpdir(), 'chartpilot-olm-ansible-')), 'greeting-operator');
    const made = await newAnsible(dir, ['--group', 'demo.chartpilot.io', '--kind', 'Greeting']);
    assert.equal(made.code, 0, made.output);
    await writeFile(join(dir, 'icon.svg'), ICON_SVG);
    await generate(dir, ['bundle', '--version', '0.1.0', '--offline', '--package', 'greeting-operator', '--icon', 'icon.svg', ...HUB_FLAGS]);
    const csv = readFileSync(join(dir, 'bundle/manifests/greeting-operator.clusterserviceversion.yaml'), 'utf8');
    assert.match(csv, /description: "?Greeting runs the Ansible role greeting/u);
    assert.match(csv, /- name: ANSIBLE_GATHERING/u);
    for (const extra of [[], ['--select-optional', 'suite=operatorframework']]) await assertBundleValid(tools, join(dir, 'bundle'), extra);
  });
});
