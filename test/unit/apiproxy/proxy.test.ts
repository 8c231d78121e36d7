/**
 * The proxy's own handling with a fake API server behind it (our KubeClient interface): tokens,
 * what reaches the server (headers, identity, stamped bodies), refusals, recording, streaming.
 * The real API server's side is test/integration/ansible-proxy.test.ts.
 */
import assert from 'node:assert/strict';
import { PassThrough, Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { describe, it, type TestContext } from 'node:test';
import { pino } from 'pino';
import { Agent, fetch, type Response } from 'undici';
import { parse } from 'yaml';
import { createApiProxy, type SessionAccess, type SessionContext, type ApiProxy } from '../../../src/apiproxy/index.js';
import type { ResourceInfo, ResourceLookup } from '../../../src/apiproxy/resources.js';
import type { ForwardRequest, ForwardResponse, KubeClient } from '../../../src/kube/rest.js';
import { resourcePath } from '../../../src/kube/resource.js';
import { bucketOf } from '../../../src/lib/uid-bucket.js';
import { claimedMacOf, deriveRecordKey, hasValidRecordMac, recordBytesOf, recordMac, RECORD_MAC_ANNOTATION } from '../../../src/helm/record-mac.js';

const log = pino({ level: 'silent' });

const RESOURCES: ResourceInfo[] = [
  { group: '', version: 'v1', resource: 'configmaps', kind: 'ConfigMap', namespaced: true, persisted: true },
  { group: '', version: 'v1', resource: 'secrets', kind: 'Secret', namespaced: true, persisted: true },
  { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'clusterroles', kind: 'ClusterRole', namespaced: false, persisted: true },
  { group: 'authorization.k8s.io', version: 'v1', resource: 'selfsubjectaccessreviews', kind: 'SelfSubjectAccessReview', namespaced: false, persisted: false },
  { group: 'cache.example.com', version: 'v1', resource: 'memcacheds', kind: 'Memcached', namespaced: true, persisted: true },
];
const resources: ResourceLookup = { find: (g, v, r) => Promise.resolve(RESOURCES.find((x) => x.group === g && x.version === v && x.resource === r)) };

type Answer = { status: number; body: string | Readable };

/** The API server as the proxy sees it: every forwarded request is kept; `answer` decides the reply. */
class FakeApi implements KubeClient {
  readonly seen: (ForwardRequest & { text: string })[] = [];
  answer: (req: ForwardRequest) => Answer = () => ({ status: 200, body: '{}' });

  forward(req: ForwardRequest): Promise<ForwardResponse> {
    this.seen.push({ ...req, text: req.body?.toString('utf8') ?? '' });
    const a = this.answer(req);
    const body = typeof a.body === 'string' ? Readable.from([Buffer.from(a.body)]) : a.body;
    return Promise.resolve({ status: a.status, headers: { 'content-type': 'application/json' }, body });
  }
  request(): never {
    throw new Error('not used');
  }
  watch(): never {
    throw new Error('not used');
  }
  resourceFor(): never {
    throw new Error('not used');
  }
  pathFor = resourcePath;
}

async function started(t: TestContext): Promise<{ proxy: ApiProxy; api: FakeApi; port: number }> {
  const api = new FakeApi();
  const proxy = createApiProxy({ client: api, log, port: 0, resources });
  const { port } = await proxy.start();
  t.after(() => proxy.stop());
  return { proxy, api, port };
}

const owner = { apiVersion: 'cache.example.com/v1', kind: 'Memcached', name: 'm', namespace: 'team-a', uid: 'uid-1' };
const ctx = (extra: Partial<SessionContext> = {}): SessionContext => ({
  owner,
  confinement: { namespace: 'team-a', allowClusterScoped: false, allowCrossNamespace: false },
  injectOwnerRef: true,
  log,
  ...extra,
});

function send(port: number, run: SessionAccess, method: string, path: string, opts: { body?: string; headers?: Record<string, string>; token?: string | null } = {}): Promise<Response> {
  const kc = parse(run.kubeconfig) as { clusters: { cluster: { 'certificate-authority-data': string; server: string } }[]; users: { user: { token: string } }[] };
  const cluster = kc.clusters[0]?.cluster;
  assert.equal(cluster?.server, `https://127.0.0.1:${port}`);
  const ca = Buffer.from(cluster.server === '' ? '' : cluster['certificate-authority-data'], 'base64').toString('utf8');
  const token = opts.token === undefined ? kc.users[0]?.user.token : opts.token;
  return fetch(`https://127.0.0.1:${port}${path}`, {
    method,
    headers: { ...(token === null || token === undefined ? {} : { authorization: `Bearer ${token}` }), 'content-type': 'application/json', ...opts.headers },
    dispatcher: new Agent({ connect: { ca } }),
    ...(opts.body === undefined ? {} : { body: opts.body }),
  });
}

describe('run proxy', () => {
  it('gives each run a kubeconfig with only its token and the proxy certificate, and the CR namespace', async (t) => {
    const { proxy, port } = await started(t);
    const a = proxy.openSession(ctx());
    const b = proxy.openSession(ctx());
    assert.notEqual(a.token, b.token);
    const kc = parse(a.kubeconfig) as Record<string, unknown>;
    assert.deepEqual(Object.keys(kc).sort(), ['apiVersion', 'clusters', 'contexts', 'current-context', 'kind', 'users']);
    assert.deepEqual((kc.users as unknown[])[0], { name: 'chartpilot-run', user: { token: a.token } });
    assert.deepEqual((kc.contexts as unknown[])[0], { name: 'chartpilot-run', context: { cluster: 'chartpilot-proxy', user: 'chartpilot-run', namespace: 'team-a' } });
    assert.equal(((kc.clusters as { cluster: { server: string } }[])[0])?.cluster.server, `https://127.0.0.1:${port}`);
  });

  it('answers 401 without a token, with a wrong one, and after the run closed; nothing reaches the API server', async (t) => {
    const { proxy, api, port } = await started(t);
    const run = proxy.openSession(ctx());
    assert.equal((await send(port, run, 'GET', '/api/v1/namespaces/team-a/configmaps')).status, 200);
    assert.equal(api.seen.length, 1);
    for (const token of [null, 'nope', `${run.token}x`, run.token.toUpperCase()]) {
      const res = await send(port, run, 'GET', '/api/v1/namespaces/team-a/configmaps', { token });
      assert.equal(res.status, 401, `token ${String(token)}`);
      assert.deepEqual(((await res.json()) as { kind: string; code: number }).code, 401);
    }
    run.close();
    run.close();
    assert.equal((await send(port, run, 'GET', '/api/v1/namespaces/team-a/configmaps')).status, 401);
    assert.equal(api.seen.length, 1);
  });

  it("passes neither the client's credentials nor its impersonation or front-proxy identity on; the run's identity goes instead", async (t) => {
    const { proxy, api, port } = await started(t);
    const run = proxy.openSession(ctx({ impersonate: 'system:serviceaccount:team-a:tenant' }));
    await send(port, run, 'GET', '/api/v1/namespaces/other/secrets/s', {
      headers: { 'impersonate-user': 'system:admin', 'Impersonate-Group': 'system:masters', 'impersonate-extra-scopes': 'x', 'X-Remote-User': 'system:admin', 'x-remote-group': 'system:masters', 'X-Remote-Extra-Scopes': 'x' },
    });
    const req = api.seen[0];
    assert.ok(req);
    assert.equal(req.impersonateUser, 'system:serviceaccount:team-a:tenant');
    assert.deepEqual(Object.keys(req.headers).filter((h) => /^(authorization|impersonate-|x-remote-)/i.test(h)), []);
    assert.equal(req.pathAndQuery, '/api/v1/namespaces/other/secrets/s');
    assert.deepEqual(run.reads(), [{ group: '', version: 'v1', resource: 'secrets', namespace: 'other' }]);
  });

  it('stamps a created object, sends it as JSON, and records it with the uid the server gave', async (t) => {
    const { proxy, api, port } = await started(t);
    const run = proxy.openSession(ctx());
    api.answer = (req) => {
      const obj = JSON.parse(req.body?.toString('utf8') ?? '{}') as { metadata: Record<string, unknown> };
      return { status: 201, body: JSON.stringify({ ...obj, metadata: { ...obj.metadata, uid: 'cm-uid', resourceVersion: '7' } }) };
    };
    const res = await send(port, run, 'POST', '/api/v1/namespaces/team-a/configmaps', { body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { a: 'b' } }) });
    assert.equal(res.status, 201);
    const sent = JSON.parse(api.seen[0]?.text ?? '') as { metadata: { ownerReferences: unknown[]; labels: Record<string, string> }; data: unknown };
    assert.deepEqual(sent.metadata.ownerReferences, [{ apiVersion: 'cache.example.com/v1', kind: 'Memcached', name: 'm', uid: 'uid-1', controller: true, blockOwnerDeletion: true }]);
    assert.equal(sent.metadata.labels['chartpilot.io/owner-uid'], 'uid-1');
    assert.equal(sent.metadata.labels['chartpilot.io/owner-bucket'], String(bucketOf('uid-1')));
    assert.deepEqual(sent.data, { a: 'b' });
    const headers = api.seen[0]?.headers ?? {};
    assert.equal(headers['content-type'], 'application/json');
    assert.equal(headers.accept, 'application/json');
    assert.deepEqual(run.objects(), [{ apiVersion: 'v1', kind: 'ConfigMap', resource: 'configmaps', namespace: 'team-a', name: 'x', uid: 'cm-uid', action: 'created' }]);
  });

  it('stamps a replaced object too (a PUT would otherwise drop the reference), but never the CR itself', async (t) => {
    const { proxy, api, port } = await started(t);
    const run = proxy.openSession(ctx());
    api.answer = (req) => ({ status: 200, body: req.body?.toString('utf8') ?? '{}' });
    await send(port, run, 'PUT', '/api/v1/namespaces/team-a/configmaps/x', { body: '{"metadata":{"name":"x","resourceVersion":"3"}}' });
    const replaced = JSON.parse(api.seen[0]?.text ?? '') as { metadata: { ownerReferences?: { uid: string }[]; resourceVersion: string } };
    assert.deepEqual(replaced.metadata.ownerReferences?.map((r) => r.uid), ['uid-1']);
    assert.equal(replaced.metadata.resourceVersion, '3');
    await send(port, run, 'PUT', '/apis/cache.example.com/v1/namespaces/team-a/memcacheds/m', { body: '{"kind":"Memcached","metadata":{"name":"m","uid":"uid-1"}}' });
    assert.deepEqual(JSON.parse(api.seen[1]?.text ?? ''), { kind: 'Memcached', metadata: { name: 'm', uid: 'uid-1' } });
    assert.deepEqual(run.objects().map((o) => o.name), ['x'], 'the CR is not part of its own inventory');
  });

  it('with injectOwnerRef off, sends the body unstamped; dry runs, failures, subresources and reviews are not recorded', async (t) => {
    const { proxy, api, port } = await started(t);
    const run = proxy.openSession(ctx({ injectOwnerRef: false, confinement: { namespace: 'team-a', allowClusterScoped: true, allowCrossNamespace: false } }));
    api.answer = () => ({ status: 201, body: '{"metadata":{"name":"x","uid":"u"}}' });
    await send(port, run, 'POST', '/api/v1/namespaces/team-a/configmaps', { body: '{"metadata":{"name":"x"}}' });
    assert.deepEqual(JSON.parse(api.seen[0]?.text ?? ''), { metadata: { name: 'x' } });
    assert.equal(run.objects().length, 1);

    const r2 = proxy.openSession(ctx());
    await send(port, r2, 'POST', '/api/v1/namespaces/team-a/configmaps?dryRun=All', { body: '{"metadata":{"name":"x"}}' });
    await send(port, r2, 'PUT', '/api/v1/namespaces/team-a/configmaps/x/status', { body: '{"metadata":{"name":"x"}}' });
    api.answer = () => ({ status: 409, body: '{"kind":"Status","code":409}' });
    await send(port, r2, 'POST', '/api/v1/namespaces/team-a/configmaps', { body: '{"metadata":{"name":"x"}}' });
    const review = await send(port, { ...r2 }, 'POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', { body: '{"spec":{}}' });
    assert.equal(review.status, 403, 'a review is cluster-scoped: refused by confinement like any write');
    assert.deepEqual(r2.objects(), []);
  });

  it('refuses a write outside the confinement without asking the API server', async (t) => {
    const { proxy, api, port } = await started(t);
    const run = proxy.openSession(ctx());
    const res = await send(port, run, 'POST', '/apis/rbac.authorization.k8s.io/v1/clusterroles', { body: '{"metadata":{"name":"god"}}' });
    assert.equal(res.status, 403);
    const status = (await res.json()) as { kind: string; reason: string; message: string };
    assert.equal(status.kind, 'Status');
    assert.equal(status.reason, 'Forbidden');
    assert.match(status.message, /refused to create ClusterRole "god".*allowClusterScoped: true/);
    assert.deepEqual(run.refusals(), [status.message]);
    const unread = await send(port, run, 'POST', '/api/v1/namespaces/team-a/configmaps', { body: '{not json' });
    assert.equal(unread.status, 400);
    assert.equal(api.seen.length, 0);
  });

  it('reads an apply body as YAML 1.1 and sends what it read as JSON, stamped', async (t) => {
    const { proxy, api, port } = await started(t);
    const run = proxy.openSession(ctx());
    api.answer = () => ({ status: 201, body: '{"metadata":{"name":"x","uid":"u"}}' });
    const yamlBody = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  a: "on"\nbinaryData: {}\nextra: on\n';
    const res = await send(port, run, 'PATCH', '/api/v1/namespaces/team-a/configmaps/x?fieldManager=role', { body: yamlBody, headers: { 'content-type': 'application/apply-patch+yaml' } });
    assert.equal(res.status, 201);
    const sent = JSON.parse(api.seen[0]?.text ?? '') as { extra: unknown; data: unknown; metadata: { ownerReferences?: unknown[] } };
    assert.equal(sent.extra, true, 'YAML 1.1 reads on as true, as the API server does');
    assert.deepEqual(sent.data, { a: 'on' });
    assert.equal(sent.metadata.ownerReferences?.length, 1);
    assert.equal(api.seen[0]?.headers['content-type'], 'application/apply-patch+yaml');
    assert.deepEqual(run.objects().map((o) => o.action), ['created']);
    const dup = await send(port, run, 'PATCH', '/api/v1/namespaces/team-a/configmaps/x', { body: 'a: 1\na: 2\n', headers: { 'content-type': 'application/apply-patch+yaml' } });
    assert.equal(dup.status, 400);
  });

  it('stamps an object written from a body it cannot read (protobuf) by a guarded merge patch right after', async (t) => {
    const { proxy, api, port } = await started(t);
    const run = proxy.openSession(ctx());
    api.answer = (req) =>
      req.method === 'POST'
        ? { status: 201, body: JSON.stringify({ kind: 'ConfigMap', metadata: { name: 'x', uid: 'cm-uid', resourceVersion: '7', labels: { app: 'a' } } }) }
        : { status: 200, body: JSON.stringify({ kind: 'ConfigMap', metadata: { name: 'x', uid: 'cm-uid', resourceVersion: '8', labels: { app: 'a', stamped: 'yes' } } }) };
    const proto = Buffer.from([0x6b, 0x38, 0x73, 0x00, 0x0a, 0x01]).toString('latin1');
    const res = await send(port, run, 'POST', '/api/v1/namespaces/team-a/configmaps', { body: proto, headers: { 'content-type': 'application/vnd.kubernetes.protobuf' } });
    assert.equal(res.status, 201);
    assert.equal(((await res.json()) as { metadata: { resourceVersion: string } }).metadata.resourceVersion, '8', 'the client sees the stamped object');
    assert.equal(api.seen.length, 2);
    assert.equal(api.seen[0]?.headers['content-type'], 'application/vnd.kubernetes.protobuf');
    const patch = api.seen[1];
    assert.equal(patch?.method, 'PATCH');
    assert.equal(patch.pathAndQuery, '/api/v1/namespaces/team-a/configmaps/x');
    assert.equal(patch.headers['content-type'], 'application/merge-patch+json');
    assert.deepEqual(JSON.parse(patch.text), {
      metadata: {
        resourceVersion: '7',
        labels: { app: 'a', 'chartpilot.io/owner-uid': 'uid-1', 'chartpilot.io/owner-bucket': String(bucketOf('uid-1')) },
        ownerReferences: [{ apiVersion: 'cache.example.com/v1', kind: 'Memcached', name: 'm', uid: 'uid-1', controller: true, blockOwnerDeletion: true }],
      },
    });
    assert.deepEqual(run.objects().map((o) => [o.name, o.uid, o.action]), [['x', 'cm-uid', 'created']]);
  });

  it('streams a read as it comes, and closing the run cuts it', async (t) => {
    const { proxy, api, port } = await started(t);
    const run = proxy.openSession(ctx());
    const stream = new PassThrough();
    let upstreamSignal: AbortSignal | undefined;
    api.answer = (req) => {
      upstreamSignal = req.signal;
      req.signal?.addEventListener('abort', () => stream.destroy(new Error('aborted')));
      return { status: 200, body: stream };
    };
    const res = await send(port, run, 'GET', '/api/v1/namespaces/team-a/configmaps?watch=true');
    assert.equal(res.status, 200);
    stream.write('{"type":"ADDED"}\n');
    const reader = res.body?.getReader();
    assert.ok(reader);
    const first = await reader.read();
    assert.equal(Buffer.from(first.value ?? new Uint8Array()).toString(), '{"type":"ADDED"}\n', 'the first event arrives while the watch is open');
    run.close();
    assert.equal(upstreamSignal?.aborted, true);
    await assert.rejects(async () => {
      for (;;) {
        const next = await reader.read();
        if (next.done) throw new Error('ended');
      }
    });
  });

  it('answers a protocol upgrade (exec, attach, port-forward) with 501 and a reason, and nothing reaches the API server', async (t) => {
    const { proxy, api, port } = await started(t);
    const run = proxy.openSession(ctx());
    const kc = parse(run.kubeconfig) as { clusters: { cluster: { 'certificate-authority-data': string } }[] };
    const ca = Buffer.from(kc.clusters[0]?.cluster['certificate-authority-data'] ?? '', 'base64').toString('utf8');
    const { connect } = await import('node:tls');
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port, ca, servername: 'localhost' }, () => {
        socket.write(`GET /api/v1/namespaces/team-a/pods/p/exec?command=sh HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${run.token}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`);
      });
      let text = '';
      socket.on('data', (c: Buffer) => (text += c.toString()));
      socket.on('end', () => { resolve(text); });
      socket.on('error', reject);
    });
    assert.match(answer, /^HTTP\/1\.1 501 /);
    assert.match(answer, /does not pass exec, attach or port-forward connections/);
    assert.equal(api.seen.length, 0);
  });
});

describe('API proxy: a helm call’s session', () => {
  const KEY = deriveRecordKey(Buffer.alloc(32, 5), 'uid-web');
  const helmCtx = (): SessionContext => ({
    owner: { apiVersion: '', kind: '', name: 'web', namespace: 'team-a', uid: 'uid-web' },
    confinement: { namespace: 'team-a', allowClusterScoped: false, allowCrossNamespace: false },
    injectOwnerRef: false,
    records: { release: 'web', namespace: 'team-a', key: KEY },
    log,
  });
  const data = (version: number): string =>
    Buffer.from(gzipSync(Buffer.from(JSON.stringify({ name: 'web', namespace: 'team-a', version, info: { status: 'deployed' }, manifest: '' }))).toString('base64')).toString('base64');
  const record = (version: number, stamped: boolean): Record<string, unknown> => {
    const secret: Record<string, unknown> = {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'helm.sh/release.v1',
      metadata: { name: `sh.helm.release.v1.web.v${String(version)}`, namespace: 'team-a', labels: { owner: 'helm', name: 'web', version: String(version), status: 'deployed' } },
      data: { release: data(version) },
    };
    const bytes = recordBytesOf(secret, 'team-a');
    if (stamped && bytes !== undefined) (secret['metadata'] as Record<string, unknown>)['annotations'] = { [RECORD_MAC_ANNOTATION]: recordMac(KEY, bytes) };
    return secret;
  };

  it('serves helm’s storage reads only when every record is proved; other Secret reads pass as they are', async (t) => {
    const { proxy, api, port } = await started(t);
    const run = proxy.openSession(helmCtx());
    api.answer = () => ({ status: 200, body: JSON.stringify({ kind: 'SecretList', apiVersion: 'v1', items: [record(1, true), record(2, true)] }) });
    const ok = await send(port, run, 'GET', '/api/v1/namespaces/team-a/secrets?labelSelector=name%3Dweb%2Cowner%3Dhelm', { headers: { accept: 'application/vnd.kubernetes.protobuf, application/json' } });
    assert.equal(ok.status, 200);
    assert.equal(((await ok.json()) as { items: unknown[] }).items.length, 2);
    assert.equal(api.seen[0]?.headers['accept'], 'application/json', 'read as JSON, to be judged');

    api.answer = () => ({ status: 200, body: JSON.stringify({ kind: 'SecretList', apiVersion: 'v1', items: [record(1, true), record(2, false)] }) });
    const forged = await send(port, run, 'GET', '/api/v1/namespaces/team-a/secrets?labelSelector=owner%3Dhelm%2Cname%3Dweb');
    assert.equal(forged.status, 403);
    assert.match(((await forged.json()) as { message: string }).message, /sh\.helm\.release\.v1\.web\.v2 .*not written by chartpilot for this resource/);
    api.answer = () => ({ status: 200, body: JSON.stringify(record(2, false)) });
    assert.equal((await send(port, run, 'GET', '/api/v1/namespaces/team-a/secrets/sh.helm.release.v1.web.v2')).status, 403);
    assert.equal((await send(port, run, 'GET', '/api/v1/namespaces/team-a/secrets?watch=true&labelSelector=owner%3Dhelm')).status, 403);
    // A lookup in a template lists Secrets without helm's selector: not the storage, passed through.
    api.answer = () => ({ status: 200, body: JSON.stringify({ kind: 'SecretList', items: [record(2, false)] }) });
    assert.equal((await send(port, run, 'GET', '/api/v1/namespaces/team-a/secrets')).status, 200);
    assert.equal(run.refusals().length, 3);
  });

  it('stamps the record helm creates over exactly what it sends, refuses a second one, and confines the rest by URL', async (t) => {
    const { proxy, api, port } = await started(t);
    const run = proxy.openSession(helmCtx());
    api.answer = (req) => ({ status: 201, body: req.body?.toString('utf8') ?? '{}' });
    const body = record(1, false);
    delete (body['metadata'] as Record<string, unknown>)['namespace'];
    const res = await send(port, run, 'POST', '/api/v1/namespaces/team-a/secrets', { body: JSON.stringify(body) });
    assert.equal(res.status, 201);
    const sent = JSON.parse(api.seen[0]?.text ?? '{}') as Record<string, unknown>;
    const bytes = recordBytesOf(sent, 'team-a');
    assert.ok(bytes !== undefined && hasValidRecordMac(KEY, bytes, claimedMacOf(sent)), 'the MAC verifies over what the server got');
    const second = await send(port, run, 'POST', '/api/v1/namespaces/team-a/secrets', { body: JSON.stringify(record(2, false)) });
    assert.equal(second.status, 403);
    const patched = await send(port, run, 'PATCH', '/api/v1/namespaces/team-a/secrets/sh.helm.release.v1.web.v1', { body: '{}', headers: { 'content-type': 'application/apply-patch+yaml' } });
    assert.equal(patched.status, 403);
    const elsewhere = await send(port, run, 'DELETE', '/api/v1/namespaces/kube-system/configmaps/cluster-config');
    assert.equal(elsewhere.status, 403);
    assert.match(((await elsewhere.json()) as { message: string }).message, /refused to delete ConfigMap "cluster-config" in namespace kube-system: objects of this custom resource must stay in its namespace team-a/);
    assert.equal(api.seen.length, 1, 'nothing refused reached the API server');
    assert.equal(run.refusals().length, 3);
  });
});

describe('API proxy: what it answers itself, and how it reads bodies', () => {
  it('answers GET /version from memory after the first ask, for any session', async (t) => {
    const { proxy, api, port } = await started(t);
    api.answer = () => ({ status: 200, body: '{"major":"1","minor":"33","gitVersion":"v1.33.13"}' });
    const a = proxy.openSession(ctx());
    const b = proxy.openSession(ctx({ impersonate: 'system:serviceaccount:team-a:tenant' }));
    for (const s of [a, b, a]) {
      const res = await send(port, s, 'GET', '/version?timeout=32s');
      assert.equal(res.status, 200);
      assert.equal(((await res.json()) as { gitVersion: string }).gitVersion, 'v1.33.13');
    }
    assert.equal(api.seen.filter((r) => r.pathAndQuery.startsWith('/version')).length, 1, 'one request upstream');
  });

  it('reads a server-side apply body as JSON when it is JSON, and as YAML otherwise; either way what it read is sent', async (t) => {
    const { proxy, api, port } = await started(t);
    api.answer = (req) => ({ status: 200, body: req.body?.toString('utf8') ?? '{}' });
    const run = proxy.openSession(ctx({ injectOwnerRef: false }));
    const apply = { 'content-type': 'application/apply-patch+yaml' };
    // Duplicate keys: JSON.parse keeps the last, and the server gets only that one.
    const dup = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"team-a"},"data":{"k":"first","k":"second"}}';
    assert.equal((await send(port, run, 'PATCH', '/api/v1/namespaces/team-a/configmaps/x?fieldManager=helm', { body: dup, headers: apply })).status, 200);
    assert.deepEqual((JSON.parse(api.seen[0]?.text ?? '{}') as { data: unknown }).data, { k: 'second' });
    // YAML (not JSON): read as YAML, sent as JSON.
    const yaml = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: why, namespace: team-a}\ndata: {on: yes}\n';
    assert.equal((await send(port, run, 'PATCH', '/api/v1/namespaces/team-a/configmaps/why?fieldManager=helm', { body: yaml, headers: apply })).status, 200);
    assert.deepEqual(JSON.parse(api.seen[1]?.text ?? '{}'), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'why', namespace: 'team-a' }, data: { true: true } });
    // A JSON body naming another namespace is refused as a YAML one would be.
    const elsewhere = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"z","namespace":"kube-system"}}';
    assert.equal((await send(port, run, 'PATCH', '/api/v1/namespaces/team-a/configmaps/z?fieldManager=helm', { body: elsewhere, headers: apply })).status, 403);
  });
});

