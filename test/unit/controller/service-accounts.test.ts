import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { ServiceAccountCache } from '../../../src/controller/service-accounts.js';
import { settle } from '../fakes/clock.js';
import { FakeApi, forbidden } from '../kube/fake-api.js';

const log = pino({ level: 'silent' });

function cache(api: FakeApi, namespaces: string[] = ['ns1'], syncTimeoutMs?: number): { sa: ServiceAccountCache; changes: string[] } {
  const changes: string[] = [];
  const sa = new ServiceAccountCache({ client: api, namespaces, log, onChange: (ns, name) => changes.push(`${ns}/${name}`), ...(syncTimeoutMs === undefined ? {} : { syncTimeoutMs }) });
  return { sa, changes };
}

describe('ServiceAccountCache', () => {
  it('watches nothing until asked, then answers from one metadata-only watch per namespace', async (t) => {
    const api = new FakeApi();
    api.put('tenant', {}, 'ns1');
    const { sa, changes } = cache(api, ['ns1', 'ns2']);
    t.after(() => sa.stop());
    await settle();
    assert.equal(api.lists.length, 0, 'no request before a kind asks');
    assert.equal(await sa.exists('ns1', 'tenant'), true);
    assert.equal(await sa.exists('ns1', 'other'), false);
    assert.deepEqual(api.lists.map((l) => l.path).sort(), ['/api/v1/namespaces/ns1/serviceaccounts', '/api/v1/namespaces/ns2/serviceaccounts']);
    assert.ok(api.lists.every((l) => l.accept?.includes('PartialObjectMetadataList') === true));
    const requests = api.lists.length;
    await sa.exists('ns1', 'tenant');
    assert.equal(api.lists.length, requests, 'later answers cost no request');
    await settle();
    assert.deepEqual(changes, [], 'what the first LIST finds is no change');
  });

  it('reports a ServiceAccount created or deleted, and answers accordingly', async (t) => {
    const api = new FakeApi();
    const { sa, changes } = cache(api, []);
    t.after(() => sa.stop());
    assert.equal(await sa.exists('ns1', 'tenant'), false);
    await settle();
    api.put('tenant', {}, 'ns1');
    await settle();
    assert.equal(await sa.exists('ns1', 'tenant'), true);
    api.remove('tenant', 'ns1');
    await settle();
    assert.equal(await sa.exists('ns1', 'tenant'), false);
    assert.deepEqual(changes, ['ns1/tenant', 'ns1/tenant']);
    assert.equal(api.lists[0]?.path, '/api/v1/serviceaccounts', 'one cluster-wide watch when all namespaces are watched');
  });

  it('says what permission is missing when it cannot list ServiceAccounts', async (t) => {
    const api = new FakeApi();
    api.listFailures.push(forbidden(), forbidden(), forbidden());
    const { sa } = cache(api, ['ns1'], 50);
    t.after(() => sa.stop());
    await assert.rejects(sa.exists('ns1', 'tenant'), /cannot tell whether ServiceAccount ns1\/tenant exists: .*forbidden.*grant it list and watch on serviceaccounts/);
  });
});
