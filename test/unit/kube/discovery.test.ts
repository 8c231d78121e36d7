import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Discovery } from '../../../src/kube/discovery.js';
import { KubeApiError, isNotFound } from '../../../src/kube/errors.js';

function server(docs: Record<string, unknown>) {
  const calls: string[] = [];
  const get = (path: string): Promise<unknown> => {
    calls.push(path);
    const doc = docs[path];
    if (doc instanceof Error) return Promise.reject(doc);
    if (doc === undefined) return Promise.reject(new KubeApiError('the server could not find the requested resource', { status: 404 }));
    return Promise.resolve(doc);
  };
  return { calls, get, docs };
}

const apps = {
  groupVersion: 'apps/v1',
  resources: [
    { name: 'deployments', kind: 'Deployment', namespaced: true },
    { name: 'deployments/scale', kind: 'Scale', namespaced: true },
    { name: 'deployments/status', kind: 'Deployment', namespaced: true },
  ],
};
const core = { groupVersion: 'v1', resources: [{ name: 'namespaces', kind: 'Namespace', namespaced: false }, { name: 'pods/log', kind: 'Pod', namespaced: true }] };

describe('Discovery', () => {
  it('resolves kinds in named and core groups and caches per group/version', async () => {
    const s = server({ '/apis/apps/v1': apps, '/api/v1': core });
    const d = new Discovery(s.get);
    assert.deepEqual(await d.resourceFor('apps/v1', 'Deployment'), {
      group: 'apps',
      version: 'v1',
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      plural: 'deployments',
      namespaced: true,
    });
    const ns = await d.resourceFor('v1', 'Namespace');
    assert.equal(ns.namespaced, false);
    assert.equal(ns.plural, 'namespaces');
    await d.resourceFor('apps/v1', 'Deployment');
    assert.deepEqual(s.calls, ['/apis/apps/v1', '/api/v1']);
  });

  it('subresources are not homes of kinds', async () => {
    const s = server({ '/apis/apps/v1': apps, '/api/v1': core });
    const d = new Discovery(s.get);
    await assert.rejects(d.resourceFor('apps/v1', 'Scale'), isNotFound);
    await assert.rejects(d.resourceFor('v1', 'Pod'), isNotFound);
  });

  it('a miss refreshes once (a CRD installed since), then reports NotFound with a clear message', async () => {
    const s = server({ '/apis/example.com/v1': { resources: [] } });
    const d = new Discovery(s.get);
    await assert.rejects(d.resourceFor('example.com/v1', 'Widget'), (e: unknown) => {
      assert.ok(e instanceof KubeApiError);
      assert.equal(e.reason, 'NotFound');
      assert.equal(e.message, 'no resource for kind Widget in apiVersion example.com/v1');
      return true;
    });
    assert.equal(s.calls.length, 2, 'initial fetch and one refresh');
    s.docs['/apis/example.com/v1'] = { resources: [{ name: 'widgets', kind: 'Widget', namespaced: true }] };
    assert.equal((await d.resourceFor('example.com/v1', 'Widget')).plural, 'widgets');
    assert.equal(s.calls.length, 3, 'the cached miss is refreshed once more');
  });

  it('an unserved group/version is NotFound; concurrent misses share one refresh', async () => {
    const s = server({});
    const d = new Discovery(s.get);
    const results = await Promise.allSettled([d.resourceFor('nope.io/v1', 'A'), d.resourceFor('nope.io/v1', 'B')]);
    assert.ok(results.every((r) => r.status === 'rejected' && isNotFound(r.reason)));
    assert.equal(s.calls.length, 2, 'one fetch + one shared refresh');
  });

  it('failed lookups are not cached', async () => {
    const s = server({ '/apis/apps/v1': new KubeApiError('forbidden', { status: 403 }) });
    const d = new Discovery(s.get);
    await assert.rejects(d.resourceFor('apps/v1', 'Deployment'), /forbidden/);
    s.docs['/apis/apps/v1'] = apps;
    assert.equal((await d.resourceFor('apps/v1', 'Deployment')).plural, 'deployments');
  });
});
