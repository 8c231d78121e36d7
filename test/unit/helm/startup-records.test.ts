import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { StartupRecords } from '../../../src/helm/startup-records.js';
import { KubeApiError } from '../../../src/kube/errors.js';
import type { KubeClient, Query } from '../../../src/kube/rest.js';
import { resourcePath } from '../../../src/kube/resource.js';

interface Secret {
  readonly namespace: string;
  readonly release: string;
  readonly revision: number;
  readonly status?: string;
}

/** Serves release Secrets' metadata in pages of `limit`, as the API server does (continue = next index); records every LIST. */
function secretsClient(secrets: readonly Secret[], fail?: Error): { client: KubeClient; lists: { path: string; query: Query | undefined }[] } {
  const lists: { path: string; query: Query | undefined }[] = [];
  const client: KubeClient = {
    request: <T>(method: string, path: string, o?: { query?: Query }): Promise<T> => {
      lists.push({ path, query: o?.query });
      if (fail !== undefined) return Promise.reject(fail);
      const ns = /\/namespaces\/([^/]+)\//.exec(path)?.[1];
      const all = secrets.filter((s) => ns === undefined || s.namespace === ns);
      const start = Number(o?.query?.continue ?? 0);
      const limit = Number(o?.query?.limit ?? all.length);
      const page = all.slice(start, start + limit);
      const next = start + limit < all.length ? String(start + limit) : '';
      return Promise.resolve({
        metadata: { continue: next, resourceVersion: '99' },
        items: page.map((s) => ({
          metadata: {
            name: `sh.helm.release.v1.${s.release}.v${s.revision}`,
            namespace: s.namespace,
            uid: `uid-${s.namespace}-${s.release}-${s.revision}`,
            resourceVersion: String(s.revision),
            labels: { owner: 'helm', name: s.release, version: String(s.revision), status: s.status ?? 'deployed' },
          },
        })),
      } as T);
    },
    watch: () => Promise.reject(new Error('not used')),
    resourceFor: () => Promise.reject(new Error('not used')),
    forward: () => Promise.reject(new Error('not used')),
    pathFor: resourcePath,
  };
  return { client, lists };
}

describe('StartupRecords: one LIST of every release record for the first look at each CR', () => {
  const records: Secret[] = [
    { namespace: 'a', release: 'web', revision: 1, status: 'superseded' },
    { namespace: 'a', release: 'web', revision: 2 },
    { namespace: 'a', release: 'db', revision: 1 },
    { namespace: 'b', release: 'web', revision: 1 },
  ];

  it('lists every record once, in pages, metadata only, by Helm’s owner label; hands each release its revisions once', async () => {
    const { client, lists } = secretsClient(records);
    const startup = new StartupRecords({ client, namespaces: [], pageSize: 3 });
    const web = await startup.take('a', 'web');
    assert.deepEqual(web?.map((r) => [r.revision, r.status, r.uid, r.resourceVersion]), [[1, 'superseded', 'uid-a-web-1', '1'], [2, 'deployed', 'uid-a-web-2', '2']]);
    assert.deepEqual((await startup.take('b', 'web'))?.map((r) => r.secretName), ['sh.helm.release.v1.web.v1']);
    assert.equal(lists.length, 2, 'two pages of three, one scan');
    assert.deepEqual(lists.map((l) => [l.path, l.query?.labelSelector, l.query?.limit]), [['/api/v1/secrets', 'owner=helm', 3], ['/api/v1/secrets', 'owner=helm', 3]]);
    assert.equal(lists[1]?.query?.continue, '3');
    // A second look is never answered from the start's snapshot.
    assert.equal(await startup.take('a', 'web'), undefined);
    // A release with no record then: none, once; later looks LIST.
    assert.deepEqual(await startup.take('a', 'new'), []);
    assert.equal(await startup.take('a', 'new'), undefined);
    assert.equal(lists.length, 2);
  });

  it('lists per watched namespace when namespaces are given, each once', async () => {
    const { client, lists } = secretsClient(records);
    const startup = new StartupRecords({ client, namespaces: ['a', 'b'] });
    const [db, web] = await Promise.all([startup.take('a', 'db'), startup.take('a', 'web'), startup.take('b', 'web')]);
    assert.equal(db?.length, 1);
    assert.equal(web?.length, 2);
    assert.deepEqual(lists.map((l) => l.path).sort(), ['/api/v1/namespaces/a/secrets', '/api/v1/namespaces/b/secrets']);
  });

  it('answers nothing (each CR LISTs its own) when the LIST fails or the snapshot is older than maxAge', async () => {
    const failing = new StartupRecords({ client: secretsClient(records, new KubeApiError('forbidden', { status: 403 })).client, namespaces: [] });
    assert.equal(await failing.take('a', 'web'), undefined);

    let now = 1_000;
    const { client, lists } = secretsClient(records);
    const aging = new StartupRecords({ client, namespaces: [], maxAgeMs: 60_000, now: () => now });
    assert.equal((await aging.take('a', 'db'))?.length, 1);
    now += 60_001;
    assert.equal(await aging.take('a', 'web'), undefined);
    assert.equal(await aging.take('b', 'web'), undefined);
    assert.equal(lists.length, 1, 'and it does not list again');
  });
});
