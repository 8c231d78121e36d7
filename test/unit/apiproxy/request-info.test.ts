import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { requestTarget } from '../../../src/apiproxy/request-info.js';

describe('requestTarget', () => {
  const cases: [string, ReturnType<typeof requestTarget>][] = [
    ['/api', { kind: 'other' }],
    ['/apis', { kind: 'other' }],
    ['/api/v1', { kind: 'other' }],
    ['/apis/apps/v1', { kind: 'other' }],
    ['/openapi/v2', { kind: 'other' }],
    ['/version', { kind: 'other' }],
    ['/api/v1/namespaces/a/configmaps', { kind: 'resource', group: '', version: 'v1', namespace: 'a', resource: 'configmaps', name: undefined, subresource: undefined, watch: false, dryRun: false }],
    ['/api/v1/namespaces/a/configmaps/x?dryRun=All', { kind: 'resource', group: '', version: 'v1', namespace: 'a', resource: 'configmaps', name: 'x', subresource: undefined, watch: false, dryRun: true }],
    ['/apis/apps/v1/namespaces/a/deployments/web/scale', { kind: 'resource', group: 'apps', version: 'v1', namespace: 'a', resource: 'deployments', name: 'web', subresource: 'scale', watch: false, dryRun: false }],
    ['/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/b', { kind: 'resource', group: 'rbac.authorization.k8s.io', version: 'v1', namespace: undefined, resource: 'clusterrolebindings', name: 'b', subresource: undefined, watch: false, dryRun: false }],
    // The Namespace object itself, and its own subresources.
    ['/api/v1/namespaces', { kind: 'resource', group: '', version: 'v1', namespace: undefined, resource: 'namespaces', name: undefined, subresource: undefined, watch: false, dryRun: false }],
    ['/api/v1/namespaces/a', { kind: 'resource', group: '', version: 'v1', namespace: 'a', resource: 'namespaces', name: 'a', subresource: undefined, watch: false, dryRun: false }],
    ['/api/v1/namespaces/a/finalize', { kind: 'resource', group: '', version: 'v1', namespace: 'a', resource: 'namespaces', name: 'a', subresource: 'finalize', watch: false, dryRun: false }],
    // Watches: the query and the legacy path prefix.
    ['/api/v1/namespaces/a/pods?watch=true&resourceVersion=5', { kind: 'resource', group: '', version: 'v1', namespace: 'a', resource: 'pods', name: undefined, subresource: undefined, watch: true, dryRun: false }],
    ['/api/v1/watch/namespaces/a/pods', { kind: 'resource', group: '', version: 'v1', namespace: 'a', resource: 'pods', name: undefined, subresource: undefined, watch: true, dryRun: false }],
    // Escapes are read as the server reads them.
    ['/api/v1/namespaces/kube%2Dsystem/configmaps', { kind: 'resource', group: '', version: 'v1', namespace: 'kube-system', resource: 'configmaps', name: undefined, subresource: undefined, watch: false, dryRun: false }],
  ];
  for (const [url, want] of cases) {
    it(url, () => {
      assert.deepEqual(requestTarget(url), want);
    });
  }

  it('throws on a malformed escape (the proxy answers 400)', () => {
    assert.throws(() => requestTarget('/api/v1/namespaces/%E0%A4%A/configmaps'), URIError);
  });
});
