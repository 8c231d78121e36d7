import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadSealKey, SealKeyError } from '../../../src/helm/seal-key.js';
import { KubeApiError } from '../../../src/kube/errors.js';
import type { KubeClient } from '../../../src/kube/rest.js';
import { resourcePath } from '../../../src/kube/resource.js';

const AT = { namespace: 'ops', name: 'chartpilot-seal-key' };

/** A Secret store of one Secret: GET and POST, with optional refusals and a racing creator. */
function secretApi(opts: { stored?: string; forbid?: 'GET' | 'POST'; raceWith?: string } = {}): { client: KubeClient; calls: string[] } {
  let stored = opts.stored;
  const calls: string[] = [];
  const client: KubeClient = {
    request: <T>(method: string, _path: string, o?: { body?: unknown }): Promise<T> => {
      calls.push(method);
      if (opts.forbid === method) return Promise.reject(new KubeApiError('forbidden', { status: 403, reason: 'Forbidden' }));
      if (method === 'GET') {
        return stored === undefined
          ? Promise.reject(new KubeApiError('not found', { status: 404, reason: 'NotFound' }))
          : Promise.resolve({ metadata: { name: AT.name }, data: { key: stored } } as T);
      }
      if (opts.raceWith !== undefined) {
        stored = opts.raceWith;
        return Promise.reject(new KubeApiError('exists', { status: 409, reason: 'AlreadyExists' }));
      }
      stored = (o?.body as { data: { key: string } }).data.key;
      return Promise.resolve(o?.body as T);
    },
    watch: () => Promise.reject(new Error('not used')),
    resourceFor: () => Promise.reject(new Error('not used')),
    forward: () => Promise.reject(new Error('not used')),
    pathFor: resourcePath,
  };
  return { client, calls };
}

describe('loadSealKey', () => {
  it('makes 32 random bytes at the first start and reads the same key afterwards', async () => {
    const api = secretApi();
    const first = await loadSealKey(api.client, AT);
    assert.equal(first.created, true);
    assert.equal(first.key.length, 32);
    const again = await loadSealKey(api.client, AT);
    assert.equal(again.created, false);
    assert.deepEqual(again.key, first.key);
  });

  it('a replica that loses the race to create it uses the winner’s key', async () => {
    const winner = Buffer.alloc(32, 5).toString('base64');
    const { key } = await loadSealKey(secretApi({ raceWith: winner }).client, AT);
    assert.equal(key.toString('base64'), winner);
  });

  it('names the Secret, namespace and RBAC rule when the operator may not read or create it', async () => {
    for (const forbid of ['GET', 'POST'] as const) {
      await assert.rejects(loadSealKey(secretApi({ forbid }).client, AT), (e: unknown) => {
        assert.ok(e instanceof SealKeyError);
        assert.match(e.message, new RegExp(`may not ${forbid === 'GET' ? 'get' : 'create'} Secret ops/chartpilot-seal-key`));
        assert.match(e.message, /verbs \[get, create\]/);
        return true;
      });
    }
  });

  it('refuses a Secret without a usable key rather than sealing with a weak one', async () => {
    await assert.rejects(loadSealKey(secretApi({ stored: Buffer.alloc(8).toString('base64') }).client, AT), /has no seal key \(data\.key: 32 random bytes\)/);
  });
});
