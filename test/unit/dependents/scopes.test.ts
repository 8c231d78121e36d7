import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AGGREGATED_DISCOVERY_ACCEPT, ScopeMap, legacyGroupVersions, parseAggregatedDiscovery } from '../../../src/dependents/scopes.js';
import { KubeApiError } from '../../../src/kube/errors.js';
import type { KubeClient, RequestOptions } from '../../../src/kube/rest.js';
import { resourcePath } from '../../../src/kube/resource.js';
import { fixtureJson } from './fixtures.js';

// Captured from Kubernetes 1.33 (`/apis` trimmed to six groups).
const aggregatedCore = fixtureJson<unknown>('discovery-api-v2.json');
const aggregatedGroups = fixtureJson<unknown>('discovery-apis-v2.json');
const legacy: Record<string, unknown> = {
  '/api': fixtureJson<unknown>('discovery-legacy-api.json'),
  '/apis': fixtureJson<unknown>('discovery-legacy-apis.json'),
  '/api/v1': fixtureJson<unknown>('discovery-legacy-core-v1.json'),
  '/apis/apps/v1': fixtureJson<unknown>('discovery-legacy-apps-v1.json'),
  '/apis/rbac.authorization.k8s.io/v1': fixtureJson<unknown>('discovery-legacy-rbac-v1.json'),
};

/** Serves documents by path; a function value decides per request. */
function fakeClient(docs: Record<string, unknown>, log: string[] = []): KubeClient {
  return {
    request: <T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> => {
      log.push(`${method} ${path}${opts.accept ? ` [${opts.accept}]` : ''}`);
      const doc = docs[path];
      if (doc instanceof Error) return Promise.reject(doc);
      if (doc === undefined) return Promise.reject(new KubeApiError('not found', { status: 404 }));
      return Promise.resolve(doc as T);
    },
    watch: () => Promise.reject(new Error('not used')),
    resourceFor: () => Promise.reject(new Error('not used')),
    forward: () => Promise.reject(new Error('not used')),
    pathFor: resourcePath,
  };
}

describe('parseAggregatedDiscovery', () => {
  it('reads kinds and scopes of the core group and named groups', () => {
    const core = parseAggregatedDiscovery(aggregatedCore);
    const groups = parseAggregatedDiscovery(aggregatedGroups);
    assert.equal(core?.source, 'aggregated-v2');
    assert.ok(groups);
    const scopes = new Map([...core.scopes, ...groups.scopes].map((s) => [`${s.apiVersion}/${s.kind}`, s.namespaced]));
    assert.equal(scopes.get('v1/Namespace'), false);
    assert.equal(scopes.get('v1/PersistentVolume'), false);
    assert.equal(scopes.get('v1/Pod'), true);
    assert.equal(scopes.get('apps/v1/Deployment'), true);
    assert.equal(scopes.get('rbac.authorization.k8s.io/v1/ClusterRole'), false);
    assert.equal(scopes.get('rbac.authorization.k8s.io/v1/RoleBinding'), true);
    assert.equal(scopes.get('apiextensions.k8s.io/v1/CustomResourceDefinition'), false);
    assert.equal(scopes.get('storage.k8s.io/v1/StorageClass'), false);
    // Subresources (pods/status, deployments/scale) are not listed as kinds of their own.
    assert.equal(scopes.get('autoscaling/v1/Scale'), undefined);
  });

  it('says undefined for legacy documents and labels v2beta1', () => {
    assert.equal(parseAggregatedDiscovery(legacy['/api']), undefined);
    assert.equal(parseAggregatedDiscovery(legacy['/apis']), undefined);
    assert.equal(parseAggregatedDiscovery({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2beta1', items: [] })?.source, 'aggregated-v2beta1');
  });
});

describe('legacyGroupVersions', () => {
  it('lists every served version of every group', () => {
    assert.deepEqual(legacyGroupVersions(legacy['/api']), ['v1']);
    assert.deepEqual(legacyGroupVersions(legacy['/apis']), ['apps/v1', 'rbac.authorization.k8s.io/v1']);
    assert.deepEqual(
      legacyGroupVersions({ kind: 'APIGroupList', groups: [{ name: 'x', versions: [{ groupVersion: 'x/v1' }, { groupVersion: 'x/v1beta1' }] }] }),
      ['x/v1', 'x/v1beta1'],
    );
  });
});

describe('ScopeMap', () => {
  it('loads from aggregated discovery in two requests', async () => {
    const log: string[] = [];
    const scopes = new ScopeMap({ client: fakeClient({ '/api': aggregatedCore, '/apis': aggregatedGroups }, log) });
    assert.equal(scopes.isNamespaced('v1', 'Pod'), undefined, 'nothing known before the first refresh');
    await scopes.refresh();
    assert.deepEqual(log.sort(), [`GET /api [${AGGREGATED_DISCOVERY_ACCEPT}]`, `GET /apis [${AGGREGATED_DISCOVERY_ACCEPT}]`]);
    assert.equal(scopes.source, 'aggregated-v2');
    assert.equal(scopes.isNamespaced('v1', 'Pod'), true);
    assert.equal(scopes.isNamespaced('v1', 'Namespace'), false);
    assert.equal(scopes.isNamespaced('example.com/v1', 'Widget'), undefined);
    const cluster = scopes.clusterScopedKinds();
    for (const k of ['v1/Namespace', 'v1/Node', 'v1/PersistentVolume', 'rbac.authorization.k8s.io/v1/ClusterRole', 'apiextensions.k8s.io/v1/CustomResourceDefinition']) {
      assert.ok(cluster.includes(k), k);
    }
    assert.ok(!cluster.includes('v1/ConfigMap'));
    assert.ok(!cluster.includes('apps/v1/Deployment'));
    assert.deepEqual(cluster, [...cluster].sort());
  });

  it('falls back to per-group-version discovery and survives one broken API group', async () => {
    const apis = { kind: 'APIGroupList', groups: [...(legacy['/apis'] as { groups: unknown[] }).groups, { name: 'metrics.k8s.io', versions: [{ groupVersion: 'metrics.k8s.io/v1beta1' }] }] };
    const log: string[] = [];
    const client = fakeClient({ ...legacy, '/apis': apis, '/apis/metrics.k8s.io/v1beta1': new KubeApiError('service unavailable', { status: 503 }) }, log);
    const scopes = new ScopeMap({ client, concurrency: 2 });
    await scopes.refresh();
    assert.equal(scopes.source, 'legacy');
    assert.equal(scopes.isNamespaced('apps/v1', 'Deployment'), true);
    assert.equal(scopes.isNamespaced('v1', 'Namespace'), false);
    assert.equal(scopes.isNamespaced('rbac.authorization.k8s.io/v1', 'ClusterRoleBinding'), false);
    assert.equal(scopes.isNamespaced('metrics.k8s.io/v1beta1', 'PodMetrics'), undefined);
    assert.ok(log.includes('GET /apis/apps/v1'));
  });

  it('keeps what it knew when a refresh fails, and shares concurrent refreshes', async () => {
    const docs: Record<string, unknown> = { '/api': aggregatedCore, '/apis': aggregatedGroups };
    const log: string[] = [];
    const scopes = new ScopeMap({ client: fakeClient(docs, log) });
    await Promise.all([scopes.refresh(), scopes.refresh()]);
    assert.equal(log.length, 2);
    docs['/apis'] = new KubeApiError('connection refused', { status: 0 });
    await assert.rejects(scopes.refresh(), /connection refused/);
    assert.equal(scopes.isNamespaced('apps/v1', 'Deployment'), true);
  });

  it('refreshes for unknown kinds at most once per interval', async () => {
    const log: string[] = [];
    const scopes = new ScopeMap({ client: fakeClient({ '/api': aggregatedCore, '/apis': aggregatedGroups }, log), minRefreshIntervalMs: 60_000 });
    assert.equal(await scopes.ensureKnown([{ apiVersion: 'v1', kind: 'Pod' }]), true);
    assert.equal(log.length, 2);
    assert.equal(await scopes.ensureKnown([{ apiVersion: 'v1', kind: 'Pod' }]), true);
    assert.equal(await scopes.ensureKnown([{ apiVersion: 'example.com/v1', kind: 'Widget' }]), false);
    assert.equal(log.length, 2, 'no second refresh within the interval');
  });
});
