import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Dispatcher } from 'undici';
import { Authenticator, DISPATCHER_MAX_AGE_MS } from '../../../src/kube/authenticator.js';
import { KubeApiError } from '../../../src/kube/errors.js';
import type { Credentials, KubeConnection } from '../../../src/kube/kubeconfig.js';

/** A connection whose credentials the test sets, and a pool factory that counts what it built and closed. */
function setup(first: Credentials = { headers: { Authorization: 'Bearer t1' } }) {
  const state = { creds: first as Credentials | Error, now: 1_000_000, built: 0, closed: [] as number[] };
  const conn = {
    server: 'https://api.example:6443',
    credentials: () => (state.creds instanceof Error ? Promise.reject(state.creds) : Promise.resolve(state.creds)),
  } as unknown as KubeConnection;
  const auth = new Authenticator(conn, {
    clock: { now: () => state.now },
    newDispatcher: () => {
      const id = ++state.built;
      return { id, close: () => Promise.resolve(state.closed.push(id)) } as unknown as Dispatcher;
    },
  });
  const idOf = async (): Promise<number> => ((await auth.authenticate()).dispatcher as unknown as { id: number }).id;
  return { state, auth, idOf };
}

describe('authenticator', () => {
  it('credentials are fetched per call, the pool is shared', async () => {
    const { state, auth, idOf } = setup();
    const a = await auth.authenticate();
    assert.deepEqual(a.headers, { Authorization: 'Bearer t1' });
    state.creds = { headers: { Authorization: 'Bearer t2' } };
    const b = await auth.authenticate();
    assert.deepEqual(b.headers, { Authorization: 'Bearer t2' }, 'a refreshed token is used at once');
    assert.equal(b.dispatcher, a.dispatcher);
    assert.equal(await idOf(), 1);
    assert.equal(state.built, 1);
  });

  it('the returned headers are a copy the caller may add to', async () => {
    const creds: Credentials = { headers: { Authorization: 'Bearer t1' } };
    const { auth } = setup(creds);
    (await auth.authenticate()).headers.Accept = 'x';
    assert.deepEqual(creds.headers, { Authorization: 'Bearer t1' });
  });

  it('the pool is renewed after its maximum age, and the old one closed', async () => {
    const { state, idOf } = setup();
    assert.equal(await idOf(), 1);
    state.now += DISPATCHER_MAX_AGE_MS;
    assert.equal(await idOf(), 1, 'not before the age is exceeded');
    state.now += 1;
    assert.equal(await idOf(), 2);
    await Promise.resolve();
    assert.deepEqual(state.closed, [1]);
  });

  it('a different client certificate from an exec plugin gets a new pool at once', async () => {
    const { state, idOf } = setup({ headers: {}, cert: 'cert-1', key: 'key-1' });
    assert.equal(await idOf(), 1);
    state.creds = { headers: {}, cert: 'cert-1', key: 'key-1' };
    assert.equal(await idOf(), 1);
    state.creds = { headers: {}, cert: 'cert-2', key: 'key-1' };
    assert.equal(await idOf(), 2);
    state.creds = { headers: {}, cert: 'cert-2', key: 'key-2' };
    assert.equal(await idOf(), 3);
  });

  it('a failure to get credentials is an Unauthorized KubeApiError with status 0, naming the server', async () => {
    const { state, auth } = setup();
    const cause = new Error('exec plugin exited with 1');
    state.creds = cause;
    await assert.rejects(auth.authenticate(), (err: unknown) => {
      assert.ok(err instanceof KubeApiError);
      assert.equal(err.status, 0);
      assert.equal(err.reason, 'Unauthorized');
      assert.equal(err.message, 'cannot authenticate to https://api.example:6443: exec plugin exited with 1');
      assert.equal(err.cause, cause);
      return true;
    });
  });
});
