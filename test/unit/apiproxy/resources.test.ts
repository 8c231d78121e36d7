import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { DiscoveryResourceLookup, parseResources } from '../../../src/apiproxy/resources.js';
import { KubeApiError, type KubeClient } from '../../../src/kube/rest.js';
import { resourcePath } from '../../../src/kube/resource.js';

/** Discovery documents by path; every GET is counted. */
function discoveryApi(docs: Map<string, unknown>, failures: string[] = []): { client: KubeClient; gets: string[] } {
  const gets: string[] = [];
  const client: KubeClient = {
    request: <T>(method: string, path: string): Promise<T> => {
      assert.equal(method, 'GET');
      gets.push(path);
      if (failures.includes(path)) return Promise.reject(new KubeApiError('unavailable', { status: 503 }));
      const doc = docs.get(path);
      return doc === undefined ? Promise.reject(new KubeApiError('not found', { status: 404 })) : Promise.resolve(doc as T);
    },
    watch: () => Promise.reject(new Error('not used')),
    resourceFor: () => Promise.reject(new Error('not used')),
    forward: () => Promise.reject(new Error('not used')),
    pathFor: resourcePath,
  };
  return { client, gets };
}

const CORE = {
  resources: [
    { name: 'configmaps', kind: 'ConfigMap', namespaced: true, verbs: ['create', 'get', 'list'] },
    { name: 'pods/exec', kind: 'PodExecOptions', namespaced: true, verbs: ['create'] },
    { name: 'namespaces', kind: 'Namespace', namespaced: false, verbs: ['get'] },
    { name: 'bindings', kind: 'Binding', namespaced: true, verbs: ['create'] },
  ],
};

describe('resource lookup', () => {
  it('reads scope and kind per resource, leaving subresources out; a resource without get stores nothing', () => {
    assert.deepEqual(parseResources('', 'v1', CORE), [
      { group: '', version: 'v1', resource: 'configmaps', kind: 'ConfigMap', namespaced: true, persisted: true },
      { group: '', version: 'v1', resource: 'namespaces', kind: 'Namespace', namespaced: false, persisted: true },
      { group: '', version: 'v1', resource: 'bindings', kind: 'Binding', namespaced: true, persisted: false },
    ]);
  });

  it('caches a group/version, re-reads it on a miss at most once a second, and forgets failures', async () => {
    const docs = new Map<string, unknown>([['/api/v1', CORE]]);
    const failures: string[] = ['/apis/example.com/v1'];
    const { client, gets } = discoveryApi(docs, failures);
    const lookup = new DiscoveryResourceLookup(client);
    assert.equal((await lookup.find('', 'v1', 'configmaps'))?.kind, 'ConfigMap');
    assert.equal((await lookup.find('', 'v1', 'namespaces'))?.namespaced, false);
    assert.deepEqual(gets, ['/api/v1']);
    assert.equal(await lookup.find('', 'v1', 'gizmos'), undefined);
    assert.deepEqual(gets, ['/api/v1'], 'no re-read within a second of the last');
    await sleep(1_050);
    docs.set('/api/v1', { resources: [...CORE.resources, { name: 'gizmos', kind: 'Gizmo', namespaced: true, verbs: ['get'] }] });
    assert.equal((await lookup.find('', 'v1', 'gizmos'))?.kind, 'Gizmo', 'a resource served since is found');
    assert.deepEqual(gets, ['/api/v1', '/api/v1']);

    await assert.rejects(lookup.find('example.com', 'v1', 'things'), { status: 503 });
    failures.length = 0;
    docs.set('/apis/example.com/v1', { resources: [{ name: 'things', kind: 'Thing', namespaced: false, verbs: ['get'] }] });
    assert.equal((await lookup.find('example.com', 'v1', 'things'))?.kind, 'Thing', 'the failure was not remembered');
    assert.equal(await lookup.find('nothing.example.com', 'v1', 'x'), undefined, 'a group/version not served is no resource');
  });
});
