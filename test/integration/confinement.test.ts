/**
 * Values alone cannot put an object outside the CR's namespace (default settings: no
 * allowCrossNamespace, no allowClusterScoped), whatever YAML they smuggle into the render: tags,
 * aliases, merge keys, `items` lists, tagged kinds, or a kind discovery learnt after start. Each
 * CR says why in its ReleaseFailed condition, and nothing exists in the victim namespace or the
 * cluster scope afterwards.
 */
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { stringify } from 'yaml';
import { established } from './crd.js';
import { condition, type Crs } from './crs.js';
import { fixtureChart } from './fixtures.js';
import { newNamespace, type TestCluster } from './harness.js';
import { operatorScenario } from './scenario.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');

/** Every object of these kinds in `ns` that a release could have made (not the namespace's own). */
async function planted(cluster: TestCluster, ns: string): Promise<string[]> {
  const r = await cluster.kubectl(['get', 'configmaps,secrets,deployments', '-n', ns, '-o', 'jsonpath={range .items[*]}{.kind}/{.metadata.name}{"\\n"}{end}']);
  return r.stdout.split('\n').filter((l) => l !== '' && l !== 'ConfigMap/kube-root-ca.crt');
}

async function refused(cr: Crs, name: string, pattern: RegExp): Promise<string> {
  const failed = await cr.until(name, 'the post-renderer to refuse the release', (c) => condition(c, 'ReleaseFailed')?.status === 'True');
  const message = condition(failed, 'ReleaseFailed')?.message ?? '';
  assert.match(message, /Nothing was applied/, message);
  assert.match(message, pattern, message);
  assert.notEqual(condition(failed, 'Deployed')?.status, 'True');
  return message;
}

async function victim(t: TestContext): Promise<string> {
  return await newNamespace(t, 'victim');
}

describe('confinement holds against values', { concurrency: true }, () => {
  it('a !!binary-tagged namespace is read as go-yaml reads it, and refused', async (t) => {
    const { cluster, cr } = await operatorScenario(t, { kind: 'ConfineTag', chart: fixtureChart('elsewhere') });
    const target = await victim(t);
    await cr.apply('tagged', { targetNamespace: `!!binary ${b64(target)}` });
    await refused(cr, 'tagged', new RegExp(`ConfigMap tagged-elsewhere in namespace ${target}`));
    assert.deepEqual(await planted(cluster, target), []);
  });

  it('aliases and merge keys rendered through tpl are resolved, and refused', async (t) => {
    const { cluster, cr } = await operatorScenario(t, { kind: 'ConfineAlias', chart: fixtureChart('tpl-extra') });
    const target = await victim(t);
    await cr.apply('alias', {
      extraDeploy: [
        `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels: {n: &n ${target}}\n  name: by-alias\n  namespace: *n\n`,
        `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  <<: {namespace: ${target}}\n  name: by-merge\n`,
      ],
    });
    await refused(cr, 'alias', new RegExp(`by-alias in namespace ${target}.*by-merge in namespace ${target}|by-merge in namespace ${target}.*by-alias in namespace ${target}`));
    assert.deepEqual(await planted(cluster, target), []);
  });

  it('an object with items is a list to Kubernetes, whatever its kind: every item is checked', async (t) => {
    const { cluster, cr } = await operatorScenario(t, { kind: 'ConfineItems', chart: fixtureChart('extra-objects') });
    const target = await victim(t);
    await cr.apply('items', {
      extraObjects: [
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'carrier' },
          items: [
            { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'token', namespace: target }, stringData: { a: 'b' } },
            { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'planted', namespace: target } },
            { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'planted', namespace: target }, spec: {} },
          ],
        },
      ],
    });
    await refused(cr, 'items', new RegExp(`Secret token in namespace ${target}, ConfigMap planted in namespace ${target}, Deployment planted in namespace ${target}`));
    assert.deepEqual(await planted(cluster, target), []);
  });

  it('a tagged kind is read as the kind it is: a ClusterRole is cluster-scoped, and refused', async (t) => {
    const { cluster, ns, cr } = await operatorScenario(t, { kind: 'ConfineKind', chart: fixtureChart('tpl-extra') });
    const role = `confine-${ns}`;
    await cr.apply('kind', { extraDeploy: [`apiVersion: rbac.authorization.k8s.io/v1\nkind: !!binary ${b64('ClusterRole')}\nmetadata: {name: ${role}}\nrules: []\n`] });
    await refused(cr, 'kind', new RegExp(`cluster-scoped ClusterRole ${role}`));
    const r = await cluster.kubectl(['get', 'clusterrole', role], { allowFail: true });
    assert.notEqual(r.exitCode, 0, 'no ClusterRole was created');
  });

  it('a kind added after start is learnt at once: a namespaced one deploys, a cluster-scoped one is refused', async (t) => {
    const { cluster, ns, cr } = await operatorScenario(t, { kind: 'ConfineLate', chart: fixtureChart('extra-objects') });
    const group = `${ns}.late.example.com`;
    const crd = (kind: string, scope: string): string => stringify({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `${kind.toLowerCase()}s.${group}` },
      spec: {
        group,
        scope,
        names: { kind, plural: `${kind.toLowerCase()}s`, singular: kind.toLowerCase(), listKind: `${kind}List` },
        versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
      },
    });
    // A first release makes the operator read discovery; both kinds are new to it after that.
    await cr.apply('first', { extraObjects: [] });
    await cr.deployed('first');
    await cluster.kubectl(['apply', '-f', '-'], { input: `${crd('Widget', 'Namespaced')}---\n${crd('Gadget', 'Cluster')}` });
    await established(cluster, `widgets.${group}`);
    await established(cluster, `gadgets.${group}`);

    await cr.apply('widget', { extraObjects: [{ apiVersion: `${group}/v1`, kind: 'Widget', metadata: { name: 'w' } }] });
    await cr.deployed('widget', 60_000);
    const w = await cluster.kubectl(['get', `widgets.${group}`, 'w', '-n', ns, '-o', 'jsonpath={.metadata.ownerReferences[0].kind}']);
    assert.equal(w.stdout, cr.kind.kind, 'the new namespaced kind is owned by the CR');

    await cr.apply('gadget', { extraObjects: [{ apiVersion: `${group}/v1`, kind: 'Gadget', metadata: { name: `g-${ns}` } }] });
    await refused(cr, 'gadget', new RegExp(`cluster-scoped Gadget g-${ns}`));
    const g = await cluster.kubectl(['get', `gadgets.${group}`, `g-${ns}`], { allowFail: true });
    assert.notEqual(g.exitCode, 0, 'no Gadget was created');
    await cluster.kubectl(['delete', 'crd', `widgets.${group}`, `gadgets.${group}`, '--wait=false'], { allowFail: true });
  });
});
