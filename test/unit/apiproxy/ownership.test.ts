import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isOwnerItself, placementOf, primaryResourceType, stampOwnership, type SessionOwner } from '../../../src/apiproxy/ownership.js';
import type { PlainMap } from '../../../src/lib/json.js';
import { bucketOf } from '../../../src/lib/uid-bucket.js';

const owner: SessionOwner = { apiVersion: 'cache.example.com/v1', kind: 'Memcached', name: 'm', namespace: 'team-a', uid: 'uid-1' };
/** The owner's uid bucket, as the dependent watches of a sharded replica select it. */
const BUCKET = String(bucketOf('uid-1'));
const ref = { apiVersion: 'cache.example.com/v1', kind: 'Memcached', name: 'm', uid: 'uid-1', controller: true, blockOwnerDeletion: true };

describe('ownership stamps', () => {
  it('owns what is in the CR namespace, annotates the rest; a cluster-scoped CR owns anything', () => {
    assert.equal(placementOf(owner, 'namespaced', 'team-a'), 'owned');
    assert.equal(placementOf(owner, 'namespaced', 'team-b'), 'annotated');
    assert.equal(placementOf(owner, 'cluster', undefined), 'annotated');
    const clusterOwner = { ...owner, namespace: undefined };
    assert.equal(placementOf(clusterOwner, 'cluster', undefined), 'owned');
    assert.equal(placementOf(clusterOwner, 'namespaced', 'team-b'), 'owned');
  });

  it('adds the controller reference and the owner labels (uid and uid bucket), keeping what the body has', () => {
    const body: PlainMap = { metadata: { name: 'x', labels: { app: 'web' } } };
    stampOwnership(body, owner, 'owned');
    assert.deepEqual(body, { metadata: { name: 'x', labels: { app: 'web', 'chartpilot.io/owner-uid': 'uid-1', 'chartpilot.io/owner-bucket': BUCKET }, ownerReferences: [ref] } });
  });

  it('adds no second reference to the same owner, and is not the controller when the body names one', () => {
    const already: PlainMap = { metadata: { name: 'x', ownerReferences: [{ ...ref, controller: false }] } };
    stampOwnership(already, owner, 'owned');
    assert.deepEqual((already.metadata as PlainMap).ownerReferences, [{ ...ref, controller: false }]);

    const other = { apiVersion: 'apps/v1', kind: 'Deployment', name: 'd', uid: 'uid-2', controller: true };
    const controlled: PlainMap = { metadata: { name: 'x', ownerReferences: [other] } };
    stampOwnership(controlled, owner, 'owned');
    assert.deepEqual((controlled.metadata as PlainMap).ownerReferences, [other, { ...ref, controller: false }]);
  });

  it("annotates with operator-sdk's primary-resource annotations (and the owner label), no reference", () => {
    const body: PlainMap = { kind: 'ClusterRole' };
    stampOwnership(body, owner, 'annotated');
    assert.deepEqual(body, {
      kind: 'ClusterRole',
      metadata: {
        labels: { 'chartpilot.io/owner-uid': 'uid-1', 'chartpilot.io/owner-bucket': BUCKET },
        annotations: { 'operator-sdk/primary-resource': 'team-a/m', 'operator-sdk/primary-resource-type': 'Memcached.cache.example.com' },
      },
    });
    assert.equal(primaryResourceType({ ...owner, apiVersion: 'v1', kind: 'Secret' }), 'Secret.');
  });

  it('replaces a metadata that is not an object, and writes keys like __proto__ as plain data', () => {
    const body = JSON.parse('{"metadata":{"labels":{"__proto__":{"x":"y"}}}}') as PlainMap;
    stampOwnership(body, owner, 'owned');
    const labels = (body.metadata as PlainMap).labels as PlainMap;
    assert.equal(labels['chartpilot.io/owner-uid'], 'uid-1');
    assert.equal(Object.getPrototypeOf(labels), Object.prototype);
    const broken: PlainMap = { metadata: 'nope' };
    stampOwnership(broken, owner, 'owned');
    assert.deepEqual((broken.metadata as PlainMap).ownerReferences, [ref]);
  });

  it('knows the CR itself, by uid or by identity', () => {
    assert.equal(isOwnerItself(owner, { kind: 'Memcached', metadata: { name: 'other', uid: 'uid-1' } }, 'x', 'y'), true);
    assert.equal(isOwnerItself(owner, { kind: 'Memcached', metadata: { name: 'm' } }, 'cache.example.com', 'team-a'), true);
    assert.equal(isOwnerItself(owner, { kind: 'Memcached', metadata: { name: 'm' } }, 'cache.example.com', 'team-b'), false);
    assert.equal(isOwnerItself(owner, { kind: 'ConfigMap', metadata: { name: 'm' } }, '', 'team-a'), false);
  });
});
