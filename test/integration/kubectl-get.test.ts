// The harness answers plain `kubectl get … -o json` in process (kubectl-get.ts): here each form it
// answers is compared with what the real kubectl prints for the same arguments, and the forms it
// must leave to kubectl are named.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { execa } from 'execa';
import { installCrd, resourceOf, testKind } from './crd.js';
import { applyYaml, newNamespace, testCluster } from './harness.js';
import { InProcessGet, parseKubectlGet, type GetResult } from './kubectl-get.js';
import { createKubeClient, loadKubeConfig } from '../../src/kube/rest.js';

const c = await testCluster();
const gets = new InProcessGet(createKubeClient(loadKubeConfig({ files: [c.kubeconfig] })), 'default');

async function realKubectl(args: string[]): Promise<GetResult> {
  const r = await execa(c.kubectlBin, args, { env: c.env, extendEnv: false, reject: false, stdin: 'ignore' });
  return { stdout: r.stdout, stderr: r.stderr, exitCode: r.exitCode ?? -1 };
}

/** Both answers for `args`: the same exit code, stderr and (parsed) output. */
async function same(args: string[]): Promise<GetResult> {
  const req = parseKubectlGet(args);
  assert.ok(req !== undefined, `${args.join(' ')} is a form answered in process`);
  const ours = await gets.run(req);
  const theirs = await realKubectl(args);
  assert.ok(ours !== undefined, `${args.join(' ')}: a type the server serves`);
  assert.equal(ours.exitCode, theirs.exitCode, `${args.join(' ')}: exit code (kubectl said ${theirs.stderr})`);
  assert.equal(ours.stderr, theirs.stderr, `${args.join(' ')}: stderr`);
  const parsed = (s: string): unknown => (s === '' ? '' : JSON.parse(s));
  assert.deepEqual(parsed(ours.stdout), parsed(theirs.stdout), `${args.join(' ')}: output`);
  return ours;
}

describe('kubectl get, answered in the test process', () => {
  it('prints what kubectl prints: objects, lists, absent objects, custom resources, short names and cluster scope', async (t) => {
    const ns = await newNamespace(t, 'kubectl-get');
    const kind = testKind('KubectlGet');
    await installCrd(c, kind);
    await applyYaml(c, [
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one, labels: {app: a}}\ndata: {k: v}',
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: two, labels: {app: b}}',
      `apiVersion: ${kind.group}/${kind.version}\nkind: ${kind.kind}\nmetadata: {name: cr}\nspec: {x: 1}`,
    ].join('\n---\n'), ns);

    const one = JSON.parse((await same(['get', 'configmap', 'one', '-n', ns, '-o', 'json'])).stdout) as { data?: Record<string, string> };
    assert.deepEqual(one.data, { k: 'v' });
    await same(['get', 'cm/one', `--namespace=${ns}`, '-o=json']);
    const list = JSON.parse((await same(['get', 'configmaps', '-n', ns, '-l', 'app=b', '-o', 'json'])).stdout) as { kind: string; items: { kind: string; metadata: { name: string } }[] };
    assert.equal(list.kind, 'List');
    assert.deepEqual(list.items.map((i) => [i.kind, i.metadata.name]), [['ConfigMap', 'two']]);
    await same(['get', 'configmaps', '-A', '--field-selector', `metadata.namespace=${ns}`, '-ojson']);
    const missing = await same(['get', 'configmap', 'absent', '-n', ns, '-o', 'json']);
    assert.equal(missing.exitCode, 1);
    assert.match(missing.stderr, /NotFound/);
    assert.equal((await same(['get', 'configmap', 'absent', '-n', ns, '--ignore-not-found', '-o', 'json'])).stdout, '');
    await same(['get', resourceOf(kind), 'cr', '-n', ns, '-o', 'json']);
    await same(['get', kind.kind, 'cr', '-n', ns, '-o', 'json']);
    await same(['get', `${kind.plural}.${kind.version}.${kind.group}`, '-n', ns, '-o', 'json']);
    await same(['get', 'deploy', '-n', ns, '-o', 'json']);
    await same(['get', 'namespace', ns, '-n', 'elsewhere', '-o', 'json']);
    await same(['get', 'events', '-n', ns, '-o', 'json']);
  });

  it('leaves every other form to kubectl', () => {
    for (const args of [
      ['get', 'configmap', 'one', '-o', 'jsonpath={.data}'],
      ['get', 'configmap', 'one'],
      ['get', 'configmap', 'one', 'two', '-o', 'json'],
      ['get', 'configmap,secret', '-o', 'json'],
      ['get', 'configmap', 'one', '--as', 'someone', '-o', 'json'],
      ['get', 'configmap', 'one', '--kubeconfig', '/elsewhere', '-o', 'json'],
      ['get', 'configmap', 'one', '-w', '-o', 'json'],
      ['get', 'configmap/one', 'two', '-o', 'json'],
      ['apply', '-f', '-'],
    ]) assert.equal(parseKubectlGet(args), undefined, args.join(' '));
  });
});
