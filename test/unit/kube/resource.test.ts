import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseApiVersion, resourcePath } from '../../../src/kube/resource.js';
import type { ApiResource } from '../../../src/kube/types.js';

const deploy: ApiResource = { group: 'apps', version: 'v1', apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments', namespaced: true };
const ns: ApiResource = { group: '', version: 'v1', apiVersion: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false };

describe('API versions and resource paths', () => {
  it('parseApiVersion splits group and version; core has an empty group', () => {
    assert.deepEqual(parseApiVersion('v1'), { group: '', version: 'v1' });
    assert.deepEqual(parseApiVersion('apps/v1'), { group: 'apps', version: 'v1' });
    assert.deepEqual(parseApiVersion('example.com/v1alpha1'), { group: 'example.com', version: 'v1alpha1' });
  });

  it('resourcePath builds collection, object and subresource paths', () => {
    assert.equal(resourcePath(deploy), '/apis/apps/v1/deployments');
    assert.equal(resourcePath(deploy, 'team-a'), '/apis/apps/v1/namespaces/team-a/deployments');
    assert.equal(resourcePath(deploy, 'team-a', 'web'), '/apis/apps/v1/namespaces/team-a/deployments/web');
    assert.equal(resourcePath(deploy, 'team-a', 'web', 'status'), '/apis/apps/v1/namespaces/team-a/deployments/web/status');
    assert.equal(resourcePath(ns, undefined, 'kube-system'), '/api/v1/namespaces/kube-system');
    assert.equal(resourcePath(ns, 'ignored', 'x'), '/api/v1/namespaces/x', 'namespace ignored for cluster-scoped');
  });

  it('resourcePath escapes names and refuses an empty one', () => {
    assert.equal(resourcePath(ns, undefined, 'a b/c'), '/api/v1/namespaces/a%20b%2Fc');
    assert.throws(() => resourcePath(deploy, 'x', ''), TypeError);
  });
});
