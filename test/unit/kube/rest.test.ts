/**
 * The REST client against a local HTTP server on loopback: error mapping, timeouts, headers, watch
 * framing. (The real API server is exercised in test/integration/kube.test.ts.)
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it, type TestContext } from 'node:test';
import { kubeConnection } from '../../../src/kube/kubeconfig.js';
import { KubeApiError, createKubeClient, type KubeClient } from '../../../src/kube/rest.js';
import type { WatchEventType } from '../../../src/kube/types.js';

interface Seen {
  method: string;
  url: URL;
  headers: IncomingMessage['headers'];
  body: string;
}

/** A loopback server closed when the test `t` ends, pass or fail. */
async function serve(t: TestContext, handler: (req: Seen, res: ServerResponse) => void): Promise<{ url: string; seen: Seen[]; connections: () => number; close: () => Promise<void> }> {
  const seen: Seen[] = [];
  let connections = 0;
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const s = { method: req.method ?? '', url: new URL(req.url ?? '/', 'http://x'), headers: req.headers, body };
      seen.push(s);
      handler(s, res);
    });
  });
  server.on('connection', () => connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  const close = (): Promise<void> =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      if (server.listening) server.close(() => { r(); });
      else r();
    });
  t.after(close);
  return { url: `http://127.0.0.1:${port}`, seen, connections: () => connections, close };
}

function client(server: string, onRequest?: (m: string, p: string, s: number, d: number) => void): KubeClient {
  const conn = kubeConnection({ name: 'c', server, skipTLSVerify: true }, { name: 'u', token: 'secret-token' });
  return createKubeClient(conn, { userAgent: 'chartpilot-test/1', ...(onRequest ? { onRequest } : {}) });
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

const status = (code: number, reason: string, message: string) => ({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message });

interface Recorded {
  events: [WatchEventType, unknown][];
  /** Resolves at the first event. */
  firstEvent: Promise<void>;
  done: Promise<unknown>;
}

function recorder(): Recorded & { onEvent: (t: WatchEventType, o: unknown) => void; onDone: (e: unknown) => void } {
  const events: [WatchEventType, unknown][] = [];
  let resolve: (e: unknown) => void = () => undefined;
  let calls = 0;
  const done = new Promise<unknown>((r) => (resolve = r));
  let evented: () => void = () => undefined;
  const firstEvent = new Promise<void>((r) => (evented = r));
  return {
    events,
    firstEvent,
    done,
    onEvent: (t, o) => {
      events.push([t, o]);
      evented();
    },
    onDone: (e) => {
      calls++;
      assert.equal(calls, 1, 'onDone called once');
      resolve(e);
    },
  };
}

describe('REST client', () => {
  it('request sends auth, user agent, accept and query, and parses JSON', async (t) => {
    const srv = await serve(t, (_req, res) => { json(res, 200, { items: [] }); });
    const calls: [string, string, number][] = [];
    const c = client(srv.url, (m, p, s) => calls.push([m, p, s]));
    const out = await c.request<{ items: unknown[] }>('GET', '/api/v1/configmaps', {
      query: { labelSelector: 'a=b,c in (d)', limit: 5, skip: undefined, watch: false },
      accept: 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json',
    });
    assert.deepEqual(out, { items: [] });
    const seen = srv.seen[0];
    assert.ok(seen);
    assert.equal(seen.headers.authorization, 'Bearer secret-token');
    assert.equal(seen.headers['user-agent'], 'chartpilot-test/1');
    assert.match(seen.headers.accept ?? '', /PartialObjectMetadataList/);
    assert.equal(seen.url.searchParams.get('labelSelector'), 'a=b,c in (d)');
    assert.equal(seen.url.searchParams.get('limit'), '5');
    assert.equal(seen.url.searchParams.has('skip'), false);
    assert.equal(seen.url.searchParams.get('watch'), 'false');
    assert.deepEqual(calls, [['GET', '/api/v1/configmaps', 200]]);
    await srv.close();
  });

  it('request sends JSON bodies with the chosen content type', async (t) => {
    const srv = await serve(t, (req, res) => { json(res, 201, JSON.parse(req.body) as unknown); });
    const c = client(srv.url);
    const body = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } };
    assert.deepEqual(await c.request('POST', '/api/v1/namespaces/d/configmaps', { body }), body);
    await c.request('PATCH', '/x', { body, contentType: 'application/apply-patch+yaml', query: { fieldManager: 'chartpilot', force: true } });
    const [post, patch] = srv.seen;
    assert.ok(post && patch);
    assert.equal(post.headers['content-type'], 'application/json');
    assert.equal(patch.headers['content-type'], 'application/apply-patch+yaml');
    assert.equal(patch.url.search, '?fieldManager=chartpilot&force=true');
    assert.equal(patch.method, 'PATCH');
    await srv.close();
  });

  it('impersonateUser sends Impersonate-User in place of any impersonation the kubeconfig asks for', async (t) => {
    const srv = await serve(t, (_req, res) => { json(res, 200, {}); });
    const conn = kubeConnection({ name: 'c', server: srv.url, skipTLSVerify: true }, { name: 'u', token: 't', impersonateUser: 'kubeconfig-as' });
    const c = createKubeClient(conn);
    await c.request('PATCH', '/x', { body: {}, impersonateUser: 'system:serviceaccount:team-a:tenant' });
    await c.request('GET', '/y');
    const [tenant, own] = srv.seen;
    assert.ok(tenant && own);
    assert.equal(tenant.headers['impersonate-user'], 'system:serviceaccount:team-a:tenant');
    assert.equal(tenant.headers.authorization, 'Bearer t', 'still authenticated as the operator');
    assert.equal(own.headers['impersonate-user'], 'kubeconfig-as', 'requests without it are unchanged');
    await assert.rejects(c.request('GET', '/z', { impersonateUser: '' }), TypeError, 'an empty user would silently mean the operator');
    assert.equal(srv.seen.length, 2);
    await srv.close();
  });

  it('an empty success body yields undefined', async (t) => {
    const srv = await serve(t, (_req, res) => {
      res.writeHead(200);
      res.end();
    });
    assert.equal(await client(srv.url).request('DELETE', '/x'), undefined);
    await srv.close();
  });

  it('non-2xx responses become KubeApiError with the Status reason and message', async (t) => {
    const srv = await serve(t, (req, res) => {
      if (req.url.pathname === '/nf') json(res, 404, status(404, 'NotFound', 'configmaps "x" not found'));
      else if (req.url.pathname === '/conflict') json(res, 409, status(409, 'Conflict', 'the object has been modified'));
      else {
        res.writeHead(502);
        res.end('bad gateway');
      }
    });
    const c = client(srv.url);
    await assert.rejects(c.request('GET', '/nf'), (e: unknown) => {
      assert.ok(e instanceof KubeApiError);
      assert.equal(e.status, 404);
      assert.equal(e.reason, 'NotFound');
      assert.equal(e.message, 'configmaps "x" not found');
      assert.equal(e.method, 'GET');
      assert.equal(e.path, '/nf');
      return true;
    });
    await assert.rejects(c.request('PUT', '/conflict', { body: {} }), { name: 'KubeApiError', status: 409, reason: 'Conflict' });
    await assert.rejects(c.request('GET', '/other'), { status: 502, message: 'bad gateway' });
    await srv.close();
  });

  it('network failures are status 0 Unavailable with the cause kept', async (t) => {
    const srv = await serve(t, () => undefined);
    const url = srv.url;
    await srv.close(); // nothing listens there any more
    await assert.rejects(client(url).request('GET', '/x'), (e: unknown) => {
      assert.ok(e instanceof KubeApiError);
      assert.equal(e.status, 0);
      assert.equal(e.reason, 'Unavailable');
      assert.ok(e.cause !== undefined);
      assert.match(e.message, /ECONNREFUSED|fetch failed/);
      return true;
    });
  });

  it('requests time out (status 0, reason Timeout); a caller abort surfaces as an abort', async (t) => {
    const srv = await serve(t, () => undefined); // never answers
    const c = client(srv.url);
    await assert.rejects(c.request('GET', '/slow', { timeoutMs: 100 }), { status: 0, reason: 'Timeout' });
    const ac = new AbortController();
    const p = c.request('GET', '/slow', { signal: ac.signal });
    ac.abort(new Error('caller gave up'));
    await assert.rejects(p, /caller gave up/);
    await srv.close();
  });

  it('connections are pooled across requests', async (t) => {
    const srv = await serve(t, (_req, res) => { json(res, 200, {}); });
    const c = client(srv.url);
    for (let i = 0; i < 6; i++) await c.request('GET', '/x');
    // client-node would open one connection per request; undici may use two while the first is
    // still being released, but no more.
    assert.ok(srv.connections() <= 2, `${srv.connections()} connections for 6 requests`);
    await srv.close();
  });

  it('watch streams newline-delimited events split across writes, then ends with onDone(null)', async (t) => {
    const srv = await serve(t, (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"type":"ADDED","object":{"metadata":{"name":"ä');
      setTimeout(() => {
        res.write('"}}}\n{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"7"}}}\n');
        res.end('{"type":"DELETED","object":{"metadata":{"name":"b"}}}');
      }, 20);
    });
    const c = client(srv.url);
    const r = recorder();
    await c.watch('/api/v1/configmaps', { resourceVersion: '5', allowWatchBookmarks: true }, r.onEvent, r.onDone, {
      accept: 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json',
    });
    assert.equal(await r.done, null);
    assert.deepEqual(r.events, [
      ['ADDED', { metadata: { name: 'ä' } }],
      ['BOOKMARK', { metadata: { resourceVersion: '7' } }],
      ['DELETED', { metadata: { name: 'b' } }],
    ]);
    const q = srv.seen[0]?.url.searchParams;
    assert.ok(q);
    assert.equal(q.get('watch'), 'true');
    assert.equal(q.get('resourceVersion'), '5');
    assert.equal(q.get('allowWatchBookmarks'), 'true');
    assert.match(srv.seen[0]?.headers.accept ?? '', /as=PartialObjectMetadata;/);
    await srv.close();
  });

  it('watch HTTP errors go to onDone as KubeApiError (410 included); the promise resolves', async (t) => {
    const srv = await serve(t, (_req, res) => { json(res, 410, status(410, 'Expired', 'too old resource version: 1 (9)')); });
    const r = recorder();
    const handle = await client(srv.url).watch('/x', {}, r.onEvent, r.onDone);
    const err = await r.done;
    assert.ok(err instanceof KubeApiError);
    assert.equal(err.status, 410);
    assert.equal(err.reason, 'Expired');
    handle.abort(); // harmless after the end
    await srv.close();
  });

  it('watch abort() ends it with onDone(null) exactly once', async (t) => {
    const srv = await serve(t, (_req, res) => {
      res.writeHead(200);
      res.write('{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n');
    });
    const r = recorder();
    const handle = await client(srv.url).watch('/x', {}, r.onEvent, r.onDone);
    await r.firstEvent; // abort a watch that is streaming, not one still connecting
    handle.abort();
    handle.abort();
    assert.equal(await r.done, null);
    assert.equal(r.events.length, 1);
    await srv.close();
  });

  it('watch inactivity ends it with a Timeout error', async (t) => {
    const srv = await serve(t, (_req, res) => {
      res.writeHead(200);
      res.write('{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"1"}}}\n');
    });
    const r = recorder();
    await client(srv.url).watch('/x', {}, r.onEvent, r.onDone, { inactivityTimeoutMs: 1000 });
    const err = await r.done;
    assert.ok(err instanceof KubeApiError);
    assert.equal(err.reason, 'Timeout');
    assert.equal(r.events.length, 1);
    await srv.close();
  });

  it('a malformed watch line or a throwing onEvent ends the watch with an error', async (t) => {
    const srv = await serve(t, (req, res) => {
      res.writeHead(200);
      if (req.url.pathname === '/bad') res.write('{"type":"ADDED","obj\n');
      else res.write('{"type":"ADDED","object":{}}\n');
    });
    const c = client(srv.url);
    const r1 = recorder();
    await c.watch('/bad', {}, r1.onEvent, r1.onDone);
    assert.ok((await r1.done) instanceof KubeApiError);
    const r2 = recorder();
    await c.watch(
      '/ok',
      {},
      () => {
        throw new Error('handler bug');
      },
      r2.onDone,
    );
    assert.match(String(await r2.done), /handler bug/);
    await srv.close();
  });

  it('watch to a dead server reports Unavailable through onDone', async (t) => {
    const srv = await serve(t, () => undefined);
    const url = srv.url;
    await srv.close();
    const r = recorder();
    await client(url).watch('/x', {}, r.onEvent, r.onDone);
    const err = await r.done;
    assert.ok(err instanceof KubeApiError);
    assert.equal(err.reason, 'Unavailable');
  });

  it('pathFor and resourceFor work through the client', async (t) => {
    const srv = await serve(t, (req, res) => {
      if (req.url.pathname === '/apis/apps/v1') json(res, 200, { resources: [{ name: 'deployments', kind: 'Deployment', namespaced: true }] });
      else json(res, 404, status(404, 'NotFound', 'the server could not find the requested resource'));
    });
    const c = client(srv.url);
    const r = await c.resourceFor('apps/v1', 'Deployment');
    assert.equal(c.pathFor(r, 'n', 'web', 'scale'), '/apis/apps/v1/namespaces/n/deployments/web/scale');
    await assert.rejects(c.resourceFor('nope.io/v1', 'X'), { reason: 'NotFound', message: 'no resource for kind X in apiVersion nope.io/v1' });
    await srv.close();
  });
});
