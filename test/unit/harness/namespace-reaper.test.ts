import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { remainingResources, terminatingLongerThan, type NamespaceObject } from '../../integration/namespace-reaper.js';

const ns = (conditions: { type: string; status: string; message?: string }[], deletionTimestamp?: string): NamespaceObject => ({
  metadata: { name: 'n', ...(deletionTimestamp === undefined ? {} : { deletionTimestamp }) },
  status: { conditions },
});

describe('remainingResources (what the namespace controller says still holds a namespace)', () => {
  it('reads every resource of a NamespaceContentRemaining condition, CRDs and core kinds alike', () => {
    const n = ns([
      { type: 'NamespaceDeletionDiscoveryFailure', status: 'False', message: 'All resources successfully discovered' },
      { type: 'NamespaceContentRemaining', status: 'True', message: 'Some resources are remaining: appansibles.test.chartpilot.io has 4 resource instances, pods. has 1 resource instances, webapps.image.chartpilot.io has 12 resource instances' },
      { type: 'NamespaceFinalizersRemaining', status: 'True', message: 'Some content in the namespace has finalizers remaining: test.chartpilot.io/finalizer in 4 resource instances' },
    ]);
    assert.deepEqual(remainingResources(n), ['appansibles.test.chartpilot.io', 'pods', 'webapps.image.chartpilot.io']);
  });

  it('reads a core resource as kube-controller-manager v1.33 writes it (a trailing dot), and without', () => {
    const n = (m: string): NamespaceObject => ns([{ type: 'NamespaceContentRemaining', status: 'True', message: m }]);
    assert.deepEqual(remainingResources(n('Some resources are remaining: configmaps. has 1 resource instances')), ['configmaps']);
    assert.deepEqual(remainingResources(n('Some resources are remaining: configmaps has 1 resource instances')), ['configmaps']);
  });

  it('finds nothing when the condition is False, absent, or names nothing', () => {
    assert.deepEqual(remainingResources(ns([{ type: 'NamespaceContentRemaining', status: 'False', message: 'All content successfully removed' }])), []);
    assert.deepEqual(remainingResources(ns([])), []);
    assert.deepEqual(remainingResources({ metadata: { name: 'n' } }), []);
    assert.deepEqual(remainingResources(ns([{ type: 'NamespaceContentRemaining', status: 'True', message: 'something else' }])), []);
  });

  it('ignores the finalizers condition, whose names are finalizers, not resources', () => {
    const n = ns([{ type: 'NamespaceFinalizersRemaining', status: 'True', message: 'Some content in the namespace has finalizers remaining: helm.sdk.operatorframework.io/uninstall-release in 2 resource instances' }]);
    assert.deepEqual(remainingResources(n), []);
  });
});

describe('terminatingLongerThan', () => {
  const at = Date.parse('2026-11-28T08:00:00Z');
  it('is true only once the grace period has passed since the deletion timestamp', () => {
    assert.equal(terminatingLongerThan(ns([], '2026-11-28T08:00:00Z'), 10_000, at + 9_999), false);
    assert.equal(terminatingLongerThan(ns([], '2026-11-28T08:00:00Z'), 10_000, at + 10_000), true);
  });
  it('is false for a namespace that is not being deleted, or whose timestamp does not parse', () => {
    assert.equal(terminatingLongerThan(ns([]), 0, at), false);
    assert.equal(terminatingLongerThan(ns([], 'not a time'), 0, at), false);
  });
});
