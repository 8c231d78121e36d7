import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { driftedFields } from '../../../src/dependents/drift.js';
import { leftAloneBy, targets } from '../../../src/dependents/drift-rules.js';
import type { DesiredObject } from '../../../src/dependents/types.js';
import type { KubeObject } from '../../../src/kube/types.js';

function desired(kind: string, name: string, labels: Record<string, string> = {}, rest: Record<string, unknown> = {}): DesiredObject {
  const object: KubeObject = { apiVersion: 'v1', kind, metadata: { name, labels }, ...rest };
  return { apiVersion: 'v1', kind, namespace: 'ns1', name, object };
}

describe('drift ignore rules: which objects a target names', () => {
  const web = desired('Deployment', 'web', { 'app.kubernetes.io/component': 'server', tier: 'front' });

  it('matches on every key given, and a target without keys on every object', () => {
    assert.equal(targets({}, web), true);
    assert.equal(targets({ kind: 'Deployment' }, web), true);
    assert.equal(targets({ kind: 'StatefulSet' }, web), false);
    assert.equal(targets({ kind: 'Deployment', name: 'web' }, web), true);
    assert.equal(targets({ kind: 'Deployment', name: 'api' }, web), false);
    assert.equal(targets({ namespace: 'ns1' }, web), true);
    assert.equal(targets({ namespace: 'ns2' }, web), false);
    assert.equal(targets({ labelSelector: 'app.kubernetes.io/component=server,tier in (front,back)' }, web), true);
    assert.equal(targets({ labelSelector: 'app.kubernetes.io/component=server,!tier' }, web), false);
    assert.equal(targets({ kind: 'Deployment', labelSelector: 'tier=back' }, web), false, 'all keys must match');
  });

  it('collects the pointers of the rules that match (no target = all objects)', () => {
    const rules = [
      { paths: ['/spec/replicas'], target: { kind: 'Deployment' } },
      { paths: ['/data/caBundle'], target: { kind: 'ConfigMap' } },
      { paths: ['/metadata/annotations/sidecar.istio.io~1status'] },
    ];
    assert.deepEqual(leftAloneBy(rules, web), [['spec', 'replicas'], ['metadata', 'annotations', 'sidecar.istio.io/status']]);
    assert.deepEqual(leftAloneBy(rules, desired('ConfigMap', 'ca')), [['data', 'caBundle'], ['metadata', 'annotations', 'sidecar.istio.io/status']]);
  });
});

describe('driftedFields with fields left alone', () => {
  const want: KubeObject = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web' },
    spec: { replicas: 1, template: { spec: { containers: [{ name: 'app', image: 'a:1', env: [{ name: 'X', value: '1' }] }] } } },
  };
  const live = structuredClone(want) as { spec: { replicas: number; template: { spec: { containers: { image: string; env: { value: string }[] }[] } } } } & KubeObject;
  live.spec.replicas = 3;
  const container = live.spec.template.spec.containers[0];
  assert.ok(container);
  container.image = 'a:2';
  const env = container.env[0];
  assert.ok(env);
  env.value = '2';

  it('skips the field and everything under it, and nothing else', () => {
    assert.deepEqual(driftedFields(want, live), ['spec.replicas', 'spec.template.spec.containers[0].image', 'spec.template.spec.containers[0].env[0].value']);
    assert.deepEqual(driftedFields(want, live, [['spec', 'replicas']]), ['spec.template.spec.containers[0].image', 'spec.template.spec.containers[0].env[0].value']);
    assert.deepEqual(driftedFields(want, live, [['spec', 'template', 'spec', 'containers', '0', 'env']]), ['spec.replicas', 'spec.template.spec.containers[0].image']);
    assert.deepEqual(driftedFields(want, live, [['spec']]), []);
    assert.deepEqual(driftedFields(want, live, [['spec', 'replica']]).length, 3, 'a pointer names whole keys, not prefixes of them');
  });
});
