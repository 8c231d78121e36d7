import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describeOwner, ownersOf } from '../../../src/dependents/managed-fields.js';
import type { KubeObject } from '../../../src/kube/types.js';

/** A Deployment as Kubernetes 1.33 returns it after helm applied it and an HPA scaled it (managedFields as recorded). */
const live: KubeObject = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: {
    name: 'web',
    namespace: 'ns1',
    managedFields: [
      {
        manager: 'helm',
        operation: 'Apply',
        apiVersion: 'apps/v1',
        fieldsType: 'FieldsV1',
        fieldsV1: {
          'f:metadata': { 'f:labels': { 'f:app': {} } },
          'f:spec': {
            'f:selector': {},
            'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"app"}': { '.': {}, 'f:image': {}, 'f:name': {}, 'f:args': {} } } } },
          },
        },
      },
      { manager: 'kube-controller-manager', operation: 'Update', subresource: 'scale', fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': { 'f:replicas': {} } } },
      { manager: 'kube-controller-manager', operation: 'Update', subresource: 'status', fieldsType: 'FieldsV1', fieldsV1: { 'f:status': { 'f:replicas': {} } } },
      {
        manager: 'istio-sidecar-injector',
        operation: 'Update',
        fieldsType: 'FieldsV1',
        fieldsV1: { 'f:spec': { 'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"istio-proxy"}': { '.': {}, 'f:image': {} } } } } } },
      },
    ],
  },
  spec: {
    replicas: 3,
    selector: { matchLabels: { app: 'web' } },
    template: { spec: { containers: [{ name: 'istio-proxy', image: 'proxy:1' }, { name: 'app', image: 'a:1', args: ['--x'] }] } },
  },
};

const owners = (path: (string | number)[]): string[] => ownersOf(live, path).map(describeOwner);

describe('ownersOf (metadata.managedFields)', () => {
  it('names the manager of a scalar field, with its subresource', () => {
    assert.deepEqual(owners(['spec', 'replicas']), ['kube-controller-manager (scale)']);
    assert.deepEqual(owners(['status', 'replicas']), ['kube-controller-manager (status)']);
    assert.deepEqual(owners(['metadata', 'labels', 'app']), ['helm']);
  });

  it('finds list items by their merge key, whatever their position', () => {
    assert.deepEqual(owners(['spec', 'template', 'spec', 'containers', 1, 'image']), ['helm']);
    assert.deepEqual(owners(['spec', 'template', 'spec', 'containers', '0', 'image']), ['istio-sidecar-injector']);
    assert.deepEqual(owners(['spec', 'template', 'spec', 'containers', 5, 'image']), [], 'no such item');
  });

  it('counts an atomic value owned as a whole, and a parent whose fields are owned', () => {
    assert.deepEqual(owners(['spec', 'selector', 'matchLabels', 'app']), ['helm'], 'an empty set owns everything beneath it');
    assert.deepEqual(owners(['spec', 'template', 'spec', 'containers', 1, 'args', 0]), ['helm']);
    assert.deepEqual(owners(['spec']), ['helm', 'kube-controller-manager (scale)', 'istio-sidecar-injector']);
  });

  it('owns nothing that no set names, and survives objects without managedFields', () => {
    assert.deepEqual(owners(['spec', 'paused']), []);
    assert.deepEqual(ownersOf({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } }, ['data', 'a']), []);
  });
});
