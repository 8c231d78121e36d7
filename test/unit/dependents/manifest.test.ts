import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManifestError, inventoryOf, parseManifest } from '../../../src/dependents/manifest.js';
import { decodeStoredRelease } from '../../../src/helm/storage.js';
import { fixtureJson } from './fixtures.js';

/** The scopes of the few kinds these tests use, as discovery would report them. */
const CLUSTER = new Set(['v1/Namespace', 'rbac.authorization.k8s.io/v1/ClusterRole', 'apiextensions.k8s.io/v1/CustomResourceDefinition']);
const KNOWN = new Set(['v1/ConfigMap', 'v1/Service', 'apps/v1/Deployment', 'v1/Secret', ...CLUSTER]);
const isNamespaced = (apiVersion: string, kind: string): boolean | undefined => {
  const k = `${apiVersion}/${kind}`;
  return KNOWN.has(k) ? !CLUSTER.has(k) : undefined;
};

describe('parseManifest', () => {
  it('reads a multi-document manifest, skipping empty documents and comment-only ones', () => {
    const manifest = [
      '---',
      '# Source: app/templates/empty.yaml',
      '---',
      '# Source: app/templates/cm.yaml',
      'apiVersion: v1',
      'kind: ConfigMap',
      'metadata:',
      '  name: a',
      'data:',
      '  k: v',
      '---',
      '---',
      '# Source: app/templates/role.yaml',
      'apiVersion: rbac.authorization.k8s.io/v1',
      'kind: ClusterRole',
      'metadata:',
      '  name: reader',
      '  namespace: ignored-for-cluster-scoped',
      'rules: []',
      '',
    ].join('\n');
    const objects = parseManifest(manifest, 'rel-ns', isNamespaced);
    assert.deepEqual(
      objects.map((o) => [o.apiVersion, o.kind, o.namespace, o.name]),
      [
        ['v1', 'ConfigMap', 'rel-ns', 'a'],
        ['rbac.authorization.k8s.io/v1', 'ClusterRole', undefined, 'reader'],
      ],
    );
    assert.deepEqual(objects[0]?.object.data, { k: 'v' });
    assert.equal(objects[0].object.metadata.namespace, undefined, 'the rendered object is left as rendered');
  });

  it('keeps a namespace the chart set on a namespaced object', () => {
    const [o] = parseManifest('apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n  namespace: other\n', 'rel-ns', isNamespaced);
    assert.equal(o?.namespace, 'other');
  });

  it('expands kind: List and *List documents', () => {
    const manifest = [
      'apiVersion: v1',
      'kind: List',
      'items:',
      '  - apiVersion: v1',
      '    kind: ConfigMap',
      '    metadata: {name: one}',
      '  - apiVersion: v1',
      '    kind: Namespace',
      '    metadata: {name: two}',
      '---',
      'apiVersion: v1',
      'kind: ConfigMapList',
      'items:',
      '  - apiVersion: v1',
      '    kind: ConfigMap',
      '    metadata: {name: three}',
    ].join('\n');
    const objects = parseManifest(manifest, 'ns', isNamespaced);
    assert.deepEqual(
      objects.map((o) => `${o.kind}/${o.namespace ?? '-'}/${o.name}`),
      ['ConfigMap/ns/one', 'Namespace/-/two', 'ConfigMap/ns/three'],
    );
  });

  it('decodes YAML the way helm does (1.1: octal modes, yes/no; timestamps stay strings)', () => {
    const manifest = [
      'apiVersion: apps/v1',
      'kind: Deployment',
      'metadata:',
      '  name: d',
      '  annotations:',
      '    built: 2024-01-01',
      'spec:',
      '  template:',
      '    spec:',
      '      hostNetwork: no',
      '      volumes:',
      '        - name: v',
      '          configMap: {name: c, defaultMode: 0644}',
    ].join('\n');
    const [o] = parseManifest(manifest, 'ns', isNamespaced);
    const spec = (o?.object.spec as { template: { spec: { hostNetwork: unknown; volumes: { configMap: { defaultMode: unknown } }[] } } }).template.spec;
    assert.equal(spec.volumes[0]?.configMap.defaultMode, 420);
    assert.equal(spec.hostNetwork, false);
    assert.equal(o?.object.metadata.annotations?.built, '2024-01-01');
  });

  it('takes the scope of a custom kind from a CRD in the same manifest, and assumes namespaced otherwise', () => {
    const manifest = [
      'apiVersion: apiextensions.k8s.io/v1',
      'kind: CustomResourceDefinition',
      'metadata: {name: widgets.example.com}',
      'spec:',
      '  group: example.com',
      '  scope: Cluster',
      '  names: {kind: Widget, plural: widgets}',
      '  versions: [{name: v1, served: true, storage: true}]',
      '---',
      'apiVersion: example.com/v1',
      'kind: Widget',
      'metadata: {name: w}',
      '---',
      'apiVersion: other.example.com/v1',
      'kind: Gadget',
      'metadata: {name: g}',
    ].join('\n');
    const objects = parseManifest(manifest, 'ns', isNamespaced);
    assert.deepEqual(
      objects.map((o) => [o.kind, o.namespace]),
      [
        ['CustomResourceDefinition', undefined],
        ['Widget', undefined],
        ['Gadget', 'ns'],
      ],
    );
  });

  it('lets the later of two documents for one object win', () => {
    const manifest = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {v: "1"}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {v: "2"}\n';
    const objects = parseManifest(manifest, 'ns', isNamespaced);
    assert.equal(objects.length, 1);
    assert.deepEqual(objects[0]?.object.data, { v: '2' });
  });

  it('returns nothing for an empty manifest', () => {
    assert.deepEqual(parseManifest('', 'ns', isNamespaced), []);
    assert.deepEqual(parseManifest('---\n# Source: x\n', 'ns', isNamespaced), []);
  });

  it('rejects broken documents with a message naming the document', () => {
    assert.throws(() => parseManifest('a: [1\n', 'ns', isNamespaced), (e: unknown) => e instanceof ManifestError && /document 1 .*not valid YAML/.test(e.message));
    assert.throws(
      () => parseManifest('apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {}\n', 'ns', isNamespaced),
      (e: unknown) => e instanceof ManifestError && /document 2 .*ConfigMap.*metadata\.name/.test(e.message),
    );
    assert.throws(() => parseManifest('kind: ConfigMap\nmetadata: {name: a}\n', 'ns', isNamespaced), /no apiVersion/);
    assert.throws(() => parseManifest('- 1\n- 2\n', 'ns', isNamespaced), /not an object/);
  });

  it('reads the manifest of a real release record', async () => {
    const secret = fixtureJson('release-secret-web2-v1.json');
    const record = await decodeStoredRelease((secret.data as { release: string }).release);
    const objects = parseManifest(record.manifest, 'exp', isNamespaced);
    assert.deepEqual(
      objects.map((o) => `${o.apiVersion}/${o.kind}/${o.namespace ?? ''}/${o.name}`),
      ['v1/ConfigMap/exp/web2-content', 'v1/Service/exp/web2', 'apps/v1/Deployment/exp/web2'],
    );
  });
});

describe('inventoryOf', () => {
  it('sorts by apiVersion, kind, namespace, name, drops duplicates and omits the namespace of cluster-scoped objects', () => {
    const inv = inventoryOf([
      { apiVersion: 'v1', kind: 'Service', namespace: 'b', name: 'x' },
      { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'a', name: 'web' },
      { apiVersion: 'v1', kind: 'Service', namespace: 'a', name: 'y' },
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', namespace: undefined, name: 'r' },
      { apiVersion: 'v1', kind: 'Service', namespace: 'a', name: 'y' },
      { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'a', name: 'Z' },
      { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'a', name: 'a' },
    ]);
    assert.deepEqual(inv, [
      { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'a', name: 'web' },
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', name: 'r' },
      { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'a', name: 'Z' },
      { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'a', name: 'a' },
      { apiVersion: 'v1', kind: 'Service', namespace: 'a', name: 'y' },
      { apiVersion: 'v1', kind: 'Service', namespace: 'b', name: 'x' },
    ]);
    assert.equal('namespace' in (inv[1] ?? {}), false);
  });
});
