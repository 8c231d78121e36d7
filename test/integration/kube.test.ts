// The Kubernetes edge against the real API server: REST errors, discovery, and the informer through
// the paths that matter in production (label-selected events, metadata-only caching, watch resume,
// relist after 410 Gone with synthetic deletes, and a visible Forbidden when RBAC is missing).
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { isAlreadyExists, isConflict, isForbidden, isInvalid, isNotFound } from '../../src/kube/errors.js';
import { Informer } from '../../src/kube/informer.js';
import { kubeConnection } from '../../src/kube/kubeconfig.js';
import { KubeApiError, createKubeClient, loadKubeConfig, type KubeClient, type Query, type WatchHandle } from '../../src/kube/rest.js';
import type { ApiResource, KubeList, KubeObject, WatchEventType } from '../../src/kube/types.js';
import { readServerStart } from '../../src/kube/server-clock.js';
import { writtenBy } from '../../src/engines/helm/plan.js';
import { newNamespace, testCluster } from './harness.js';
import { waitFor } from './wait.js';

const c = await testCluster();
const kc = loadKubeConfig({ files: [c.kubeconfig] });
const client = createKubeClient(kc, { userAgent: 'chartpilot-test' });
const configMaps = await client.resourceFor('v1', 'ConfigMap');

/** The same cluster, but every request impersonates a user with no permissions at all. */
function nobodyClient(): KubeClient {
  return createKubeClient(kubeConnection(kc.cluster, { ...kc.user, impersonateUser: 'chartpilot-test-nobody' }));
}

function configMap(ns: string, name: string, labels: Record<string, string> = {}, data: Record<string, string> = {}): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns, labels }, data };
}

const create = (obj: KubeObject): Promise<KubeObject> =>
  client.request<KubeObject>('POST', client.pathFor(configMaps, obj.metadata.namespace), { body: obj });
const patchData = (ns: string, name: string, data: Record<string, string>): Promise<KubeObject> =>
  client.request<KubeObject>('PATCH', client.pathFor(configMaps, ns, name), { body: { data }, contentType: 'application/merge-patch+json' });
const remove = (ns: string, name: string): Promise<unknown> => client.request('DELETE', client.pathFor(configMaps, ns, name));

/** Records handler calls as short strings: `add a`, `update a`, `delete a`. */
function recorder(): { log: string[]; handlers: { onAdd(o: KubeObject): void; onUpdate(o: KubeObject, n: KubeObject): void; onDelete(o: KubeObject): void } } {
  const log: string[] = [];
  return {
    log,
    handlers: {
      onAdd: (o) => log.push(`add ${o.metadata.name}`),
      onUpdate: (_o, n) => log.push(`update ${n.metadata.name}`),
      onDelete: (o) => log.push(`delete ${o.metadata.name}`),
    },
  };
}

const has = (log: string[], ...entries: string[]) => async (): Promise<boolean> => Promise.resolve(entries.every((e) => log.includes(e)));

function startInformer(t: TestContext, opts: ConstructorParameters<typeof Informer<KubeObject>>[0]): Informer<KubeObject> {
  const inf = new Informer<KubeObject>(opts);
  inf.start();
  t.after(() => inf.stop());
  return inf;
}

/**
 * A client that passes everything through to the real one but lets a test see and steer watches:
 * rewrite their query, hold them back, abort them, and see what the server sent.
 */
class SteeredClient implements KubeClient {
  lists = 0;
  readonly watchQueries: Query[] = [];
  readonly handles: WatchHandle[] = [];
  readonly errorEvents: unknown[] = [];
  readonly doneErrors: unknown[] = [];
  rewrite: (q: Query, call: number) => Query = (q) => q;
  gate: Promise<void> | undefined;

  constructor(private readonly inner: KubeClient) {}

  request<T = unknown>(...args: Parameters<KubeClient['request']>): Promise<T> {
    if (args[0] === 'GET') this.lists++;
    return this.inner.request<T>(...args);
  }

  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- implements KubeClient.watch
  async watch<T = unknown>(
    path: string,
    query: Query,
    onEvent: (type: WatchEventType, obj: T) => void,
    onDone: (err: unknown) => void,
    opts?: { accept?: string },
  ): Promise<WatchHandle> {
    const call = this.watchQueries.length;
    if (this.gate) await this.gate;
    const q = this.rewrite(query, call);
    this.watchQueries.push(q);
    const h = await this.inner.watch<T>(
      path,
      q,
      (type, obj) => {
        if (type === 'ERROR') this.errorEvents.push(obj);
        onEvent(type, obj);
      },
      (err) => {
        if (err) this.doneErrors.push(err);
        onDone(err);
      },
      opts,
    );
    this.handles.push(h);
    return h;
  }

  resourceFor(apiVersion: string, kind: string): Promise<ApiResource> {
    return this.inner.resourceFor(apiVersion, kind);
  }

  forward(...args: Parameters<KubeClient['forward']>): ReturnType<KubeClient['forward']> {
    return this.inner.forward(...args);
  }

  pathFor(...args: Parameters<KubeClient['pathFor']>): string {
    return this.inner.pathFor(...args);
  }
}

describe('kube client and informer against the API server', { concurrency: true }, () => {
  it('loadKubeConfig reads KUBECONFIG', () => {
    const saved = process.env.KUBECONFIG;
    process.env.KUBECONFIG = c.kubeconfig;
    try {
      assert.equal(loadKubeConfig().server, kc.server);
    } finally {
      if (saved === undefined) delete process.env.KUBECONFIG;
      else process.env.KUBECONFIG = saved;
    }
  });

  it('discovery finds namespaced and cluster-scoped kinds, and says when a kind is missing', async () => {
    const deploy = await client.resourceFor('apps/v1', 'Deployment');
    assert.deepEqual(deploy, { group: 'apps', version: 'v1', apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments', namespaced: true });
    const ns = await client.resourceFor('v1', 'Namespace');
    assert.equal(ns.plural, 'namespaces');
    assert.equal(ns.namespaced, false);
    assert.equal(client.pathFor(ns, 'ignored', 'default'), '/api/v1/namespaces/default');
    await assert.rejects(client.resourceFor('apps/v1', 'Gizmo'), { reason: 'NotFound', message: 'no resource for kind Gizmo in apiVersion apps/v1' });
    await assert.rejects(client.resourceFor('nothing.example.com/v1', 'Gizmo'), isNotFound);
  });

  it('API failures carry the server reason: NotFound, AlreadyExists, Conflict, Invalid, Forbidden', async (t) => {
    const ns = await newNamespace(t, 'kube-errors');
    await assert.rejects(client.request('GET', client.pathFor(configMaps, ns, 'missing')), (e: unknown) => {
      assert.ok(e instanceof KubeApiError);
      assert.equal(e.status, 404);
      assert.equal(e.reason, 'NotFound');
      assert.equal(e.message, 'configmaps "missing" not found');
      return true;
    });
    const created = await create(configMap(ns, 'cm'));
    await assert.rejects(create(configMap(ns, 'cm')), (e: unknown) => isAlreadyExists(e) && (e as KubeApiError).status === 409);
    // An update based on a stale resourceVersion: optimistic concurrency says Conflict.
    await patchData(ns, 'cm', { v: '2' });
    await assert.rejects(
      client.request('PUT', client.pathFor(configMaps, ns, 'cm'), { body: { ...created, data: { v: '3' } } }),
      (e: unknown) => isConflict(e) && (e as KubeApiError).reason === 'Conflict',
    );
    await assert.rejects(create(configMap(ns, 'Not_A_Valid_Name')), (e: unknown) => isInvalid(e) && (e as KubeApiError).reason === 'Invalid');
    await assert.rejects(nobodyClient().request('GET', client.pathFor(configMaps, ns)), (e: unknown) => {
      assert.ok(isForbidden(e));
      assert.equal((e as KubeApiError).reason, 'Forbidden');
      assert.match((e as KubeApiError).message, /chartpilot-test-nobody.*cannot list/);
      return true;
    });
  });

  it("reads the API server's clocks at start: its write order (Secrets' resourceVersion) and its time, whatever this host's says", async (t) => {
    const ns = await newNamespace(t, 'kube-server-clock');
    const secrets = await client.resourceFor('v1', 'Secret');
    const secret = (name: string): Promise<KubeObject> => client.request<KubeObject>('POST', client.pathFor(secrets, ns), { body: { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: ns } } });
    const before = await secret('before');
    // The monotonic clock is the test's: an hour passes between the read and the second look.
    let mono = 5_000;
    const start = await readServerStart(client, ns, () => mono);
    const after = await secret('after');
    assert.equal(writtenBy(before.metadata.resourceVersion, start.resourceVersion), true, `${String(before.metadata.resourceVersion)} ≤ ${String(start.resourceVersion)}`);
    assert.equal(writtenBy(after.metadata.resourceVersion, start.resourceVersion), false, `${String(after.metadata.resourceVersion)} > ${String(start.resourceVersion)}`);
    // creationTimestamp has whole seconds and the clock is good to half a second and the round trip.
    const created = Date.parse(after.metadata.creationTimestamp ?? '');
    const offBy = start.clock.now() - created;
    assert.ok(offBy > -1_500 && offBy < 2_500, `server clock ${String(offBy)} ms from a creationTimestamp made just now`);
    mono += 3_600_000;
    const later = start.clock.now() - created;
    assert.ok(Math.abs(later - offBy - 3_600_000) < 1_000, 'carried on by the monotonic clock alone');
    const cluster = await readServerStart(client, undefined);
    assert.ok(writtenBy(after.metadata.resourceVersion, cluster.resourceVersion), 'a cluster-wide LIST is as late');
  });

  it('server-side apply and metadata-only lists go through request()', async (t) => {
    const ns = await newNamespace(t, 'kube-apply');
    const applied = await client.request<KubeObject>('PATCH', client.pathFor(configMaps, ns, 'applied'), {
      body: configMap(ns, 'applied', { app: 'x' }, { k: 'v' }),
      contentType: 'application/apply-patch+yaml',
      query: { fieldManager: 'chartpilot-test', force: true },
    });
    assert.deepEqual(applied.data, { k: 'v' });
    const list = await client.request<KubeList>('GET', client.pathFor(configMaps, ns), {
      accept: 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json',
      query: { labelSelector: 'app=x' },
    });
    assert.equal(list.kind, 'PartialObjectMetadataList');
    assert.deepEqual(list.items.map((i) => i.metadata.name), ['applied']);
    assert.equal(list.items[0]?.data, undefined);
  });

  it('informer sees add/update/delete of label-selected ConfigMaps and nothing else', async (t) => {
    const ns = await newNamespace(t, 'kube-informer');
    await create(configMap(ns, 'before', { app: 'mine' }));
    await create(configMap(ns, 'other-before', { app: 'theirs' }));
    const r = recorder();
    const inf = startInformer(t, { client, resource: configMaps, namespace: ns, labelSelector: 'app=mine', handlers: r.handlers });
    await inf.waitForSync();
    assert.deepEqual(r.log, ['add before']);

    await create(configMap(ns, 'mine', { app: 'mine' }));
    await create(configMap(ns, 'theirs', { app: 'theirs' }));
    await patchData(ns, 'mine', { v: '1' });
    await patchData(ns, 'theirs', { v: '1' });
    await remove(ns, 'before');
    await remove(ns, 'other-before');
    await waitFor('add/update/delete events', has(r.log, 'add mine', 'update mine', 'delete before'), { timeoutMs: 15_000, intervalMs: 50 });
    assert.deepEqual(r.log, ['add before', 'add mine', 'update mine', 'delete before']);
    assert.deepEqual(inf.get(ns, 'mine')?.data, { v: '1' });
    assert.equal(inf.get(ns, 'theirs'), undefined);
    assert.deepEqual(inf.list().map((o) => o.metadata.name), ['mine']);
    assert.equal(inf.lastError, undefined);
  });

  it('metadataOnly informer caches metadata, never data', async (t) => {
    const ns = await newNamespace(t, 'kube-meta');
    await create(configMap(ns, 'a', { app: 'm' }, { secret: 'do-not-cache' }));
    const r = recorder();
    const inf = startInformer(t, { client, resource: configMaps, namespace: ns, metadataOnly: true, handlers: r.handlers });
    await inf.waitForSync();
    await create(configMap(ns, 'b', { app: 'm' }, { secret: 'do-not-cache' }));
    await waitFor('b in the cache', () => Promise.resolve(inf.get(ns, 'b')), { timeoutMs: 15_000, intervalMs: 50 });
    for (const name of ['a', 'b']) {
      const o = inf.get(ns, name);
      assert.ok(o);
      assert.deepEqual(Object.keys(o).sort(), ['apiVersion', 'kind', 'metadata'], `${name} has metadata only`);
      assert.equal(o.kind, 'ConfigMap');
      assert.deepEqual(o.metadata.labels, { app: 'm' });
      assert.ok(o.metadata.uid && o.metadata.resourceVersion);
      assert.equal(o.metadata.managedFields, undefined);
    }
  });

  it('a watch the server ends is resumed from the last resourceVersion, without a relist', async (t) => {
    const ns = await newNamespace(t, 'kube-resume');
    const steered = new SteeredClient(client);
    steered.rewrite = (q) => ({ ...q, timeoutSeconds: 1 }); // the server closes every watch after 1 s
    const r = recorder();
    const inf = startInformer(t, { client: steered, resource: configMaps, namespace: ns, labelSelector: 'kube-test', handlers: r.handlers });
    await inf.waitForSync();
    const names = ['one', 'two', 'three'];
    for (const name of names) {
      const watchesBefore = steered.watchQueries.length;
      await waitFor('the next watch', () => Promise.resolve(steered.watchQueries.length > watchesBefore), { timeoutMs: 15_000, intervalMs: 50 });
      await create(configMap(ns, name, { 'kube-test': 'resume' }));
    }
    await waitFor('all adds', has(r.log, ...names.map((n) => `add ${n}`)), { timeoutMs: 15_000, intervalMs: 50 });
    assert.ok(steered.watchQueries.length >= names.length, `${steered.watchQueries.length} watches`);
    assert.equal(steered.lists, 1, 'never relisted');
    assert.deepEqual(r.log, names.map((n) => `add ${n}`), 'each event exactly once');
    // Every resume started where the previous watch left off.
    const rvs = steered.watchQueries.map((q) => Number(q.resourceVersion));
    assert.deepEqual([...rvs].sort((a, b) => a - b), rvs, 'resourceVersions never go back');
    assert.deepEqual(steered.doneErrors, []);
  });

  it('410 Gone → relist, with onDelete for an object deleted while away', async (t) => {
    const ns = await newNamespace(t, 'kube-gone');
    const labels = { 'kube-test': 'gone' };
    await create(configMap(ns, 'stays', labels));
    await create(configMap(ns, 'changes', labels));
    await create(configMap(ns, 'deleted-away', labels));
    const steered = new SteeredClient(client);
    const r = recorder();
    const inf = startInformer(t, {
      client: steered,
      resource: configMaps,
      namespace: ns,
      labelSelector: 'kube-test',
      handlers: r.handlers,
      backoff: { initialMs: 50, maxMs: 200 },
    });
    await inf.waitForSync();
    await waitFor('first watch open', () => Promise.resolve(steered.handles.length === 1), { timeoutMs: 15_000, intervalMs: 20 });
    r.log.length = 0;

    // Disconnect the informer and hold its reconnect back while the world changes.
    let release: () => void = () => undefined;
    steered.gate = new Promise<void>((res) => (release = res));
    steered.handles[0]?.abort();
    await remove(ns, 'deleted-away');
    await patchData(ns, 'changes', { v: '2' });
    await create(configMap(ns, 'new-away', labels));
    // Resume from a resourceVersion the server no longer has in its window: it answers 410.
    steered.rewrite = (q, call) => (call === 1 ? { ...q, resourceVersion: '1' } : q);
    steered.gate = undefined;
    release();

    await waitFor('relist diff', has(r.log, 'delete deleted-away', 'update changes', 'add new-away'), { timeoutMs: 20_000, intervalMs: 50 });
    assert.deepEqual([...r.log].sort(), ['add new-away', 'delete deleted-away', 'update changes']);
    assert.equal(steered.lists, 2, 'one relist');
    const saw410 = [...steered.errorEvents, ...steered.doneErrors].some(
      (e) => (e as { code?: number }).code === 410 || (e instanceof KubeApiError && e.status === 410),
    );
    assert.ok(saw410, `the server answered 410: ${JSON.stringify(steered.errorEvents)} ${String(steered.doneErrors)}`);
    t.diagnostic(`410 arrived as ${steered.errorEvents.length > 0 ? `a watch ERROR event: ${JSON.stringify(steered.errorEvents[0])}` : `an HTTP error: ${String(steered.doneErrors[0])}`}`);
    assert.deepEqual(inf.list().map((o) => o.metadata.name).sort(), ['changes', 'new-away', 'stays']);
    // And it watches on from the relist.
    await create(configMap(ns, 'after', labels));
    await waitFor('add after', has(r.log, 'add after'), { timeoutMs: 15_000, intervalMs: 50 });
  });

  it('an informer without RBAC reports Forbidden in lastError instead of hanging silently', async (t) => {
    const ns = await newNamespace(t, 'kube-forbidden');
    const inf = startInformer(t, {
      client: nobodyClient(),
      resource: configMaps,
      namespace: ns,
      handlers: {},
      backoff: { initialMs: 100, maxMs: 500 },
    });
    const err = await waitFor('lastError', () => Promise.resolve(inf.lastError), { timeoutMs: 15_000, intervalMs: 20 });
    assert.ok(isForbidden(err), String(err));
    assert.equal(inf.hasSynced(), false);
    const ac = new AbortController();
    const waiting = inf.waitForSync(ac.signal);
    ac.abort(new Error('gave up waiting'));
    await assert.rejects(waiting, /gave up waiting/);
  });
});
