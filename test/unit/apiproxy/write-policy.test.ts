import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { requestTarget, type ResourceRequest } from '../../../src/apiproxy/request-info.js';
import type { ResourceInfo } from '../../../src/apiproxy/resources.js';
import { decideWrite, writeVerb, type WriteVerb } from '../../../src/apiproxy/write-policy.js';
import type { Confinement } from '../../../src/core/confinement.js';

/** A fake discovery: the few resources the table uses. */
const RESOURCES: ResourceInfo[] = [
  { group: '', version: 'v1', resource: 'configmaps', kind: 'ConfigMap', namespaced: true, persisted: true },
  { group: '', version: 'v1', resource: 'namespaces', kind: 'Namespace', namespaced: false, persisted: true },
  { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'clusterrolebindings', kind: 'ClusterRoleBinding', namespaced: false, persisted: true },
  { group: 'apps', version: 'v1', resource: 'deployments', kind: 'Deployment', namespaced: true, persisted: true },
];

const confined: Confinement = { namespace: 'team-a', allowClusterScoped: false, allowCrossNamespace: false };
const cluster: Confinement = { ...confined, allowClusterScoped: true };
const cross: Confinement = { ...confined, allowCrossNamespace: true };

function ask(c: Confinement, method: string, url: string, body: { namespace?: string; name?: string } = {}): string {
  const target = requestTarget(url) as ResourceRequest;
  assert.equal(target.kind, 'resource');
  const info = RESOURCES.find((r) => r.group === target.group && r.version === target.version && r.resource === target.resource);
  const verb = writeVerb(method, target) as WriteVerb;
  const d = decideWrite(c, { verb, target, info, bodyNamespace: body.namespace, bodyName: body.name });
  return d.allowed ? `allowed ${d.scope}` : d.message;
}

describe('decideWrite', () => {
  const table: [string, Confinement, string, string, { namespace?: string; name?: string } | undefined, RegExp | string][] = [
    ['create in the CR namespace', confined, 'POST', '/api/v1/namespaces/team-a/configmaps', { name: 'x' }, 'allowed namespaced'],
    ['update in the CR namespace', confined, 'PUT', '/api/v1/namespaces/team-a/configmaps/x', undefined, 'allowed namespaced'],
    ['patch a subresource in the CR namespace', confined, 'PATCH', '/apis/apps/v1/namespaces/team-a/deployments/web/scale', undefined, 'allowed namespaced'],
    ['delete in the CR namespace', confined, 'DELETE', '/api/v1/namespaces/team-a/configmaps/x', undefined, 'allowed namespaced'],
    ['delete a collection in the CR namespace', confined, 'DELETE', '/api/v1/namespaces/team-a/configmaps', undefined, 'allowed namespaced'],
    [
      'create in kube-system',
      confined,
      'POST',
      '/api/v1/namespaces/kube-system/configmaps',
      { name: 'x' },
      'refused to create ConfigMap "x" in namespace kube-system: objects of this custom resource must stay in its namespace team-a; set allowCrossNamespace: true on the watches entry to allow other namespaces',
    ],
    ['create in kube-system when cross-namespace is allowed', cross, 'POST', '/api/v1/namespaces/kube-system/configmaps', { name: 'x' }, 'allowed namespaced'],
    ['delete in another namespace', confined, 'DELETE', '/api/v1/namespaces/b/configmaps/x', undefined, /^refused to delete ConfigMap "x" in namespace b: .*allowCrossNamespace: true/],
    [
      'a ClusterRoleBinding',
      confined,
      'POST',
      '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
      { name: 'admin-me' },
      'refused to create ClusterRoleBinding "admin-me" (rbac.authorization.k8s.io/v1): it is cluster-scoped, and objects of this custom resource must stay in its namespace team-a; set allowClusterScoped: true on the watches entry to allow cluster-scoped objects',
    ],
    ['a ClusterRoleBinding when cluster-scoped objects are allowed', cluster, 'POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', { name: 'b' }, 'allowed cluster'],
    // A namespace in the URL of a cluster-scoped resource does not make it namespaced.
    ['a cluster-scoped resource under a namespace path', confined, 'POST', '/apis/rbac.authorization.k8s.io/v1/namespaces/team-a/clusterrolebindings', { name: 'b' }, /it is cluster-scoped/],
    ['the CR namespace object itself', confined, 'DELETE', '/api/v1/namespaces/team-a', undefined, /refused to delete Namespace "team-a" \(v1\): it is cluster-scoped/],
    ['a resource discovery does not know', cluster, 'POST', '/apis/example.com/v1/namespaces/team-a/gizmos', { name: 'g' }, /^refused to create gizmos \(example\.com\/v1\): the API server does not serve this resource/],
    ['a body namespace differing from the URL', cross, 'POST', '/api/v1/namespaces/team-a/configmaps', { name: 'x', namespace: 'kube-system' }, /metadata\.namespace "kube-system" differs from the namespace "team-a"/],
    ['a body namespace equal to the URL', confined, 'POST', '/api/v1/namespaces/team-a/configmaps', { name: 'x', namespace: 'team-a' }, 'allowed namespaced'],
    ['a namespaced resource without a namespace', cross, 'POST', '/api/v1/configmaps', { name: 'x' }, /the request names no namespace/],
    ['a collection delete across all namespaces', cross, 'DELETE', '/api/v1/configmaps', undefined, /refused to delete every ConfigMap in all namespaces/],
  ];
  for (const [what, c, method, url, body, want] of table) {
    it(what, () => {
      const got = ask(c, method, url, body);
      if (typeof want === 'string') assert.equal(got, want);
      else assert.match(got, want);
    });
  }

  it('maps methods to verbs', () => {
    const one = requestTarget('/api/v1/namespaces/a/configmaps/x') as ResourceRequest;
    const all = requestTarget('/api/v1/namespaces/a/configmaps') as ResourceRequest;
    assert.deepEqual(
      ['POST', 'PUT', 'PATCH', 'DELETE', 'GET'].map((m) => writeVerb(m, one)),
      ['create', 'update', 'patch', 'delete', undefined],
    );
    assert.equal(writeVerb('DELETE', all), 'deletecollection');
  });
});
