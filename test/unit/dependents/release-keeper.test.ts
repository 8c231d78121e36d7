import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AGGREGATED_DISCOVERY_ACCEPT, ScopeMap } from '../../../src/dependents/scopes.js';
import { ReleaseKeeper, type ReleaseKeeperOptions } from '../../../src/dependents/release-keeper.js';
import { bucketOf } from '../../../src/lib/uid-bucket.js';
import type { DependentWatcher } from '../../../src/dependents/watcher.js';
import { KubeApiError } from '../../../src/kube/errors.js';
import type { KubeClient, RequestOptions } from '../../../src/kube/rest.js';
import { resourcePath } from '../../../src/kube/resource.js';
import type { ApiResource, KubeObject } from '../../../src/kube/types.js';
import type { KeepInput } from '../../../src/engines/helm/ports.js';
import type { Confinement } from '../../../src/core/confinement.js';
import { readReleaseManifest } from '../../../src/helm/storage.js';
import { capturingLogger } from '../fakes/reconcile-ports.js';
import { fixtureJson } from './fixtures.js';

const CONFINED: Confinement = { namespace: 'ns1', allowClusterScoped: false, allowCrossNamespace: false };
const configMaps: ApiResource = { group: '', version: 'v1', apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };
const deployments: ApiResource = { group: 'apps', version: 'v1', apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments', namespaced: true };
const secrets: ApiResource = { group: '', version: 'v1', apiVersion: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true };

/**
 * The API server as the keeper reads and writes it: objects by path (GET, 404 when absent),
 * server-side apply (stores the body), discovery documents, and resourceFor for known kinds.
 */
class ObjectApi implements KubeClient {
  readonly objects = new Map<string, KubeObject>();
  readonly calls: { method: string; path: string; opts: RequestOptions }[] = [];
  readonly resources = [configMaps, deployments, secrets];
  readonly docs = new Map<string, unknown>([
    ['/api', fixtureJson<unknown>('discovery-api-v2.json')],
    ['/apis', fixtureJson<unknown>('discovery-apis-v2.json')],
  ]);

  put(resource: ApiResource, obj: KubeObject): void {
    this.objects.set(resourcePath(resource, obj.metadata.namespace, obj.metadata.name), obj);
  }

  /** Method and path of each call, e.g. `GET /api/v1/namespaces/ns1/configmaps/cfg`. */
  get requests(): string[] {
    return this.calls.map((c) => `${c.method} ${c.path}`);
  }

  request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    this.calls.push({ method, path, opts });
    const doc = this.docs.get(path);
    if (doc !== undefined) return Promise.resolve(doc as T);
    if (method === 'PATCH' && opts.contentType === 'application/merge-patch+json') return this.mergePatch<T>(method, path, opts.body as KubeObject);
    if (method === 'PATCH') {
      const body = opts.body as KubeObject;
      this.objects.set(path, body);
      return Promise.resolve(body as T);
    }
    const obj = this.objects.get(path);
    if (method === 'GET' && obj !== undefined) return Promise.resolve(structuredClone(obj) as T);
    return Promise.reject(new KubeApiError(`${path} not found`, { status: 404, method, path }));
  }

  /** A merge patch of labels, guarded by the resourceVersion it names (what the keeper's label fix sends). */
  private mergePatch<T>(method: string, path: string, patch: KubeObject): Promise<T> {
    const obj = this.objects.get(path);
    if (obj === undefined) return Promise.reject(new KubeApiError(`${path} not found`, { status: 404, method, path }));
    if (patch.metadata.resourceVersion !== undefined && patch.metadata.resourceVersion !== obj.metadata.resourceVersion) {
      return Promise.reject(new KubeApiError('the object has been modified', { status: 409, reason: 'Conflict', method, path }));
    }
    const next: KubeObject = { ...obj, metadata: { ...obj.metadata, labels: { ...obj.metadata.labels, ...patch.metadata.labels }, resourceVersion: String(Number(obj.metadata.resourceVersion ?? '0') + 1) } };
    this.objects.set(path, next);
    return Promise.resolve(next as T);
  }

  watch(): never {
    throw new Error('the keeper does not watch; its watcher does');
  }

  resourceFor(apiVersion: string, kind: string): Promise<ApiResource> {
    const found = this.resources.find((r) => r.apiVersion === apiVersion && r.kind === kind);
    return found === undefined ? Promise.reject(new KubeApiError(`no ${kind} in ${apiVersion}`, { status: 404 })) : Promise.resolve(found);
  }

  forward(): never {
    throw new Error('not used');
  }

  pathFor = resourcePath;
}

/** The dependent watcher's cache, set by the test: which kinds are watched and what they hold. */
class FakeWatcher implements Pick<DependentWatcher, 'ensureWatching' | 'waitForSync' | 'waitForOwner' | 'isWatching' | 'get'> {
  readonly ensured: string[] = [];
  readonly cache = new Map<string, KubeObject>();
  /** Kinds (`apiVersion/Kind`) that cannot be watched. */
  readonly unwatchable = new Set<string>();
  syncError: Error | undefined;
  /** Owners (by uid) whose objects these caches do not hold (--shards: another replica's share). */
  readonly notWatchedOwners = new Set<string>();
  readonly waitedFor: string[] = [];
  private readonly watching = new Set<string>();

  put(obj: KubeObject): void {
    this.cache.set(`${obj.apiVersion ?? ''}/${obj.kind ?? ''}/${obj.metadata.namespace ?? ''}/${obj.metadata.name}`, obj);
  }

  ensureWatching(apiVersion: string, kind: string): Promise<void> {
    const k = `${apiVersion}/${kind}`;
    this.ensured.push(k);
    if (this.unwatchable.has(k)) return Promise.reject(new Error(`${kind} is not served`));
    this.watching.add(k);
    return Promise.resolve();
  }

  waitForSync(): Promise<void> {
    return this.syncError === undefined ? Promise.resolve() : Promise.reject(this.syncError);
  }

  waitForOwner(ownerUid: string): Promise<boolean> {
    this.waitedFor.push(ownerUid);
    return Promise.resolve(!this.notWatchedOwners.has(ownerUid));
  }

  isWatching(apiVersion: string, kind: string): boolean {
    return this.watching.has(`${apiVersion}/${kind}`);
  }

  get(apiVersion: string, kind: string, namespace: string | undefined, name: string): KubeObject | undefined {
    return this.cache.get(`${apiVersion}/${kind}/${namespace ?? ''}/${name}`);
  }
}

const MANIFEST = `apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
data:
  mode: fast
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: extra
`;

const INVENTORY = [
  { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'ns1', name: 'web' },
  { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns1', name: 'cfg' },
  { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns1', name: 'extra' },
];

function configMap(name: string, data: Record<string, string> = {}, annotations?: Record<string, string>): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'ns1', ...(annotations === undefined ? {} : { annotations }) }, data };
}

/** The Deployment `web` with `available` of its 2 replicas available. */
function deployment(available: number): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'ns1', generation: 4 },
    spec: { replicas: 2 },
    status: { observedGeneration: 4, replicas: 2, updatedReplicas: 2, availableReplicas: available },
  };
}

function setup(extra: Partial<ReleaseKeeperOptions> = {}) {
  const api = new ObjectApi();
  const watcher = new FakeWatcher();
  const { log, text } = capturingLogger();
  const reading: string[] = [];
  const keeper = new ReleaseKeeper({
    ...extra,
    client: api,
    watcher,
    scopes: new ScopeMap({ client: api }),
    log,
    syncTimeoutMs: 1_000,
    catchUpTimeoutMs: 300,
    readManifest: (at: { namespace: string; release: string; revision: number }) => readReleaseManifest(api, at.namespace, at.release, at.revision),
    onReading: (namespace, release) => reading.push(`${namespace}/${release} ${String(watcher.get('apps/v1', 'Deployment', 'ns1', 'web') !== undefined)}`),
  });
  return { api, watcher, keeper, logged: text, reading };
}

function input(extra: Partial<KeepInput> = {}): KeepInput {
  return { namespace: 'ns1', release: 'demo', revision: 1, manifest: MANIFEST, watch: true, repair: false, ownerUid: 'uid-1', confinement: CONFINED, ...extra };
}

/** The cache and the server agree: every object as the chart says, the Deployment available. */
function inSync(api: ObjectApi, watcher: FakeWatcher): void {
  for (const obj of [configMap('cfg', { mode: 'fast' }), configMap('extra'), deployment(2)]) {
    watcher.put(obj);
    api.put(obj.kind === 'Deployment' ? deployments : configMaps, obj);
  }
}

describe('ReleaseKeeper.keep', () => {
  it('only lists the inventory when dependents are not watched', async () => {
    const { keeper, watcher, api } = setup();
    const kept = await keeper.keep(input({ watch: false, repair: true }));
    assert.deepEqual(kept, { inventory: INVENTORY, repaired: [], readiness: undefined });
    assert.deepEqual(watcher.ensured, []);
    assert.deepEqual(api.requests, []);
  });

  it('watches each kind of the release once and tells readiness from the cache', async () => {
    const { keeper, watcher, api } = setup();
    inSync(api, watcher);
    watcher.put(deployment(1));
    const kept = await keeper.keep(input());
    assert.deepEqual(watcher.ensured, ['v1/ConfigMap', 'apps/v1/Deployment']);
    assert.deepEqual(kept.inventory, INVENTORY);
    assert.deepEqual(kept.readiness, { ready: false, failed: false, reason: 'DeploymentNotAvailable', message: 'Deployment web: 1/2 replicas available' });
    assert.deepEqual(kept.repaired, []);
    assert.deepEqual(api.requests, [], 'readiness comes from the cache alone');
  });

  it('right after a deploy, tells readiness once the caches show what helm wrote', async () => {
    const { keeper, watcher, api, reading } = setup();
    watcher.put(configMap('cfg', { mode: 'slow' })); // the previous revision's, not yet replaced in the cache
    setTimeout(() => {
      inSync(api, watcher);
      watcher.put(deployment(1));
    }, 60);
    const kept = await keeper.keep(input({ awaitCaches: true }));
    assert.deepEqual(kept.readiness, { ready: false, failed: false, reason: 'DeploymentNotAvailable', message: 'Deployment web: 1/2 replicas available' });
    assert.deepEqual(reading, ['ns1/demo true'], 'says when it reads the caches: after they caught up');
  });

  it('waits for the caches only so long, then tells readiness as they are', async () => {
    const { keeper } = setup();
    const started = performance.now();
    const kept = await keeper.keep(input({ awaitCaches: true }));
    assert.ok(performance.now() - started >= 290, 'waited for the caches');
    assert.equal(kept.readiness?.reason, 'ResourceMissing');
  });

  it('says all is ready when every object is', async () => {
    const { keeper, watcher, api } = setup();
    inSync(api, watcher);
    const kept = await keeper.keep(input({ repair: true }));
    assert.deepEqual(kept.readiness, { ready: true, failed: false, reason: 'AllResourcesReady', message: 'all 3 resources are ready' });
    assert.deepEqual(kept.repaired, []);
    assert.deepEqual(api.requests, [], 'nothing drifted: no request');
  });

  it('neither reads nor repairs nor tells readiness of objects outside the confinement, whatever the record lists', async () => {
    const { keeper, watcher, api } = setup();
    inSync(api, watcher);
    const elsewhere = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: theirs\n  namespace: kube-system\ndata:\n  x: "1"\n';
    const kept = await keeper.keep(input({ repair: true, manifest: `${MANIFEST}---\n${elsewhere}` }));
    assert.deepEqual(kept.repaired, []);
    assert.ok(!api.requests.some((r) => r.includes('kube-system')), api.requests.join('\n'));
    assert.deepEqual(kept.readiness, { ready: true, failed: false, reason: 'AllResourcesReady', message: 'all 3 resources are ready' });
    assert.ok(kept.inventory.some((i) => i.namespace === 'kube-system'), 'the inventory still names it: the record lists it');
    // With allowCrossNamespace the entry allows it, and it is repaired like the others.
    const allowed = await keeper.keep(input({ repair: true, manifest: `${MANIFEST}---\n${elsewhere}`, confinement: { ...CONFINED, allowCrossNamespace: true } }));
    assert.deepEqual(allowed.repaired, [{ object: 'ConfigMap theirs', action: 'created', fields: [] }]);
  });

  it('reads an object for a repair as the tenant when there is one', async () => {
    const { keeper, watcher, api } = setup();
    inSync(api, watcher);
    const drifted = configMap('cfg', { mode: 'slow' });
    watcher.put(drifted);
    api.put(configMaps, drifted);
    await keeper.keep(input({ repair: true, impersonate: 'system:serviceaccount:ns1:tenant' }));
    assert.deepEqual(api.calls.map((c) => c.opts.impersonateUser), ['system:serviceaccount:ns1:tenant', 'system:serviceaccount:ns1:tenant']);
  });

  it('sets back a drifted object the fresh read confirms, applying as Helm', async () => {
    const { keeper, watcher, api } = setup();
    inSync(api, watcher);
    const drifted = configMap('cfg', { mode: 'slow' }, { team: 'web' });
    watcher.put(drifted);
    api.put(configMaps, drifted);
    const kept = await keeper.keep(input({ repair: true }));
    assert.deepEqual(kept.repaired, [{ object: 'ConfigMap cfg', action: 'updated', fields: ['data.mode'] }]);
    assert.deepEqual(api.requests, ['GET /api/v1/namespaces/ns1/configmaps/cfg', 'PATCH /api/v1/namespaces/ns1/configmaps/cfg']);
    const patch = api.calls[1]?.opts;
    assert.equal(patch?.contentType, 'application/apply-patch+yaml');
    assert.deepEqual(patch.query, { fieldManager: 'helm', force: true });
    assert.deepEqual(patch.body, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'cfg',
        namespace: 'ns1',
        labels: { 'app.kubernetes.io/managed-by': 'Helm' },
        annotations: { 'meta.helm.sh/release-name': 'demo', 'meta.helm.sh/release-namespace': 'ns1' },
      },
      data: { mode: 'fast' },
    });
  });

  it('recreates an object that is gone', async () => {
    const { keeper, watcher, api } = setup();
    inSync(api, watcher);
    watcher.cache.delete('v1/ConfigMap/ns1/extra');
    api.objects.delete('/api/v1/namespaces/ns1/configmaps/extra');
    const kept = await keeper.keep(input({ repair: true }));
    assert.deepEqual(kept.repaired, [{ object: 'ConfigMap extra', action: 'created', fields: [] }]);
    assert.deepEqual(api.requests, ['GET /api/v1/namespaces/ns1/configmaps/extra', 'PATCH /api/v1/namespaces/ns1/configmaps/extra']);
  });

  it('trusts a fresh read over a cache that lags behind', async () => {
    const { keeper, watcher, api } = setup();
    inSync(api, watcher);
    watcher.put(configMap('cfg', { mode: 'slow' }));
    const kept = await keeper.keep(input({ repair: true }));
    assert.deepEqual(kept.repaired, []);
    assert.deepEqual(api.requests, ['GET /api/v1/namespaces/ns1/configmaps/cfg'], 'read, found in order, not written');
  });

  it('repairs nothing on a pass that must not (right after an upgrade)', async () => {
    const { keeper, watcher, api } = setup();
    inSync(api, watcher);
    watcher.put(configMap('cfg', { mode: 'slow' }));
    assert.deepEqual((await keeper.keep(input({ repair: false }))).repaired, []);
    assert.deepEqual(api.requests, []);
  });

  it('keeps and judges only the kinds it can watch, and says which it cannot', async () => {
    const { keeper, watcher, api, logged } = setup();
    watcher.unwatchable.add('apps/v1/Deployment');
    watcher.put(configMap('cfg', { mode: 'fast' }));
    watcher.put(configMap('extra'));
    const kept = await keeper.keep(input({ repair: true }));
    assert.deepEqual(kept.readiness, { ready: true, failed: false, reason: 'AllResourcesReady', message: 'all 2 resources are ready' });
    assert.deepEqual(kept.repaired, [], 'the missing Deployment is not recreated: its kind is not watched');
    assert.deepEqual(api.requests, []);
    assert.match(logged(), /cannot watch a kind of this release; its objects are not kept/);
  });

  it('tells no readiness while the caches have not synced', async () => {
    const { keeper, watcher, logged } = setup();
    watcher.syncError = new Error('The operation was aborted due to timeout');
    const kept = await keeper.keep(input({ repair: true }));
    assert.deepEqual(kept, { inventory: INVENTORY, repaired: [], readiness: undefined });
    assert.match(logged(), /dependent caches not synced in time/);
  });

  it('reads the manifest from Helm’s record when it is not at hand', async () => {
    const { keeper, api } = setup();
    const secret = fixtureJson('release-secret-web2-v1.json');
    api.put(secrets, secret);
    const kept = await keeper.keep({ namespace: 'exp', release: 'web2', revision: 1, watch: false, repair: false, ownerUid: 'uid-1', confinement: CONFINED });
    assert.deepEqual(api.requests, ['GET /api/v1/namespaces/exp/secrets/sh.helm.release.v1.web2.v1']);
    assert.deepEqual(
      kept.inventory.map((r) => `${r.kind} ${r.namespace ?? ''}/${r.name}`),
      ['Deployment exp/web2', 'ConfigMap exp/web2-content', 'Service exp/web2'],
    );
  });

  it('parses a revision’s manifest once, until the release is forgotten', async () => {
    const { keeper, api } = setup();
    await keeper.keep(input({ watch: false }));
    const again = await keeper.keep(input({ watch: false, manifest: undefined }));
    assert.deepEqual(again.inventory, INVENTORY, 'the same revision: the parsed manifest is reused');
    assert.deepEqual(api.requests, []);

    keeper.forget('ns1', 'demo');
    const afterForget = await keeper.keep(input({ watch: false, manifest: undefined }));
    assert.deepEqual(api.requests, ['GET /api/v1/namespaces/ns1/secrets/sh.helm.release.v1.demo.v1'], 'forgotten: read from the record again');
    assert.deepEqual(afterForget.inventory, [], 'no record left');
  });

  it('parses the manifest again for a new revision', async () => {
    const { keeper } = setup();
    await keeper.keep(input({ watch: false }));
    const next = await keeper.keep(input({ watch: false, revision: 2, manifest: 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: only\n' }));
    assert.deepEqual(next.inventory, [{ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns1', name: 'only' }]);
  });
});

describe('ReleaseKeeper: which record a parsed manifest belongs to', () => {
  const ONLY = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: only\n';
  const web2 = (extra: Partial<KeepInput>): KeepInput => ({ namespace: 'exp', release: 'web2', revision: 1, watch: false, repair: false, ownerUid: 'uid-1', confinement: CONFINED, ...extra });
  const names = (kept: { inventory: readonly { kind: string; name: string }[] }): string[] => kept.inventory.map((r) => `${r.kind}/${r.name}`);

  it('reads a revision 1 made again after an outside helm uninstall, not the old revision 1', async () => {
    const { keeper, api } = setup();
    api.put(secrets, fixtureJson('release-secret-web2-v1.json'));
    // Our install wrote revision 1 and parsed helm's output.
    await keeper.keep(web2({ manifest: ONLY, fingerprint: 'ours', ownerKind: 'Web.example.com' }));
    // Someone ran `helm uninstall` and `helm install`: a new revision 1, not ours.
    const kept = await keeper.keep(web2({ recordCreatedAt: '2026-01-02T00:00:00Z', fingerprint: undefined }));
    assert.deepEqual(api.requests, ['GET /api/v1/namespaces/exp/secrets/sh.helm.release.v1.web2.v1']);
    assert.deepEqual(names(kept), ['Deployment/web2', 'ConfigMap/web2-content', 'Service/web2']);
  });

  it('reuses its own parse for the record it wrote (same fingerprint), then knows that record by its creation time', async () => {
    const { keeper, api } = setup();
    await keeper.keep(web2({ manifest: ONLY, fingerprint: 'ours' }));
    assert.deepEqual(names(await keeper.keep(web2({ recordCreatedAt: '2026-01-01T00:00:00Z', fingerprint: 'ours' }))), ['ConfigMap/only']);
    assert.deepEqual(names(await keeper.keep(web2({ recordCreatedAt: '2026-01-01T00:00:00Z', fingerprint: 'ours' }))), ['ConfigMap/only']);
    assert.deepEqual(api.requests, [], 'no record read');
    // Same number and fingerprint, another record (made again later): read it.
    await keeper.keep(web2({ recordCreatedAt: '2026-01-03T00:00:00Z', fingerprint: 'ours' }));
    assert.deepEqual(api.requests, ['GET /api/v1/namespaces/exp/secrets/sh.helm.release.v1.web2.v1']);
  });

  it('prefers a manifest fresh from helm over an earlier parse of the same revision number', async () => {
    const { keeper } = setup();
    await keeper.keep(input({ watch: false }));
    const fresh = await keeper.keep(input({ watch: false, manifest: ONLY }));
    assert.deepEqual(names(fresh), ['ConfigMap/only']);
  });

  it('forgets the releases of a kind hot reload removed, and only those', async () => {
    const { keeper, api } = setup();
    await keeper.keep(input({ watch: false, ownerKind: 'Gone.example.com' }));
    await keeper.keep(input({ release: 'other', watch: false, manifest: ONLY, ownerKind: 'Kept.example.com' }));
    keeper.forgetKind('Gone.example.com');
    await keeper.keep(input({ watch: false, manifest: undefined }));
    await keeper.keep(input({ release: 'other', watch: false, manifest: undefined }));
    assert.deepEqual(api.requests, ['GET /api/v1/namespaces/ns1/secrets/sh.helm.release.v1.demo.v1']);
  });
});

describe('ReleaseKeeper.remaining', () => {
  it('names the objects that still exist (being deleted counts), except those Helm keeps on purpose and kinds no longer served', async () => {
    const { keeper, api } = setup();
    api.put(deployments, deployment(2));
    api.put(configMaps, configMap('kept', {}, { 'helm.sh/resource-policy': 'keep' }));
    const terminating = configMap('terminating');
    api.put(configMaps, { ...terminating, metadata: { ...terminating.metadata, deletionTimestamp: '2026-01-01T10:00:00Z' } });
    const items = [
      { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'ns1', name: 'web' },
      { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns1', name: 'kept' },
      { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns1', name: 'gone' },
      { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns1', name: 'terminating' },
      { apiVersion: 'example.com/v1', kind: 'Widget', namespace: 'ns1', name: 'w' },
    ];
    assert.deepEqual(await keeper.remaining(items, CONFINED), [items[0], items[3]]);
  });

  it('does not skip an object whose resource-policy is something else', async () => {
    const { keeper, api } = setup();
    api.put(configMaps, configMap('cfg', {}, { 'helm.sh/resource-policy': 'delete' }));
    const item = { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns1', name: 'cfg' };
    assert.deepEqual(await keeper.remaining([item], CONFINED), [item]);
  });
});

describe('ReleaseKeeper.kindScopes', () => {
  it('reads discovery, and at most every ten minutes', async () => {
    const { keeper, api } = setup();
    const first = await keeper.kindScopes();
    const second = await keeper.kindScopes();
    assert.ok(first.clusterScoped.includes('v1/Namespace'));
    assert.ok(first.clusterScoped.includes('rbac.authorization.k8s.io/v1/ClusterRole'));
    assert.equal(first.clusterScoped.includes('v1/ConfigMap'), false);
    assert.ok(first.namespaced.includes('v1/ConfigMap'));
    assert.deepEqual(second, first);
    assert.deepEqual(api.requests, ['GET /api', 'GET /apis']);
    assert.equal(api.calls[0]?.opts.accept, AGGREGATED_DISCOVERY_ACCEPT);
  });
});

describe('ReleaseKeeper.keep with driftDetection', () => {
  function keeperWith(opts: { now?: () => number } = {}) {
    const api = new ObjectApi();
    const watcher = new FakeWatcher();
    const { log } = capturingLogger();
    const keeper = new ReleaseKeeper({
      client: api,
      watcher,
      scopes: new ScopeMap({ client: api }),
      log,
      syncTimeoutMs: 1_000,
      catchUpTimeoutMs: 300,
      readManifest: () => Promise.resolve(MANIFEST),
      contestPolicy: { repairs: 2, windowMs: 60_000 },
      ...opts,
    });
    inSync(api, watcher);
    return { api, watcher, keeper };
  }

  /** The Deployment scaled to `replicas` by an HPA (the scale subresource's manager), in the cache and on the server. */
  function scaledByHpa(api: ObjectApi, watcher: FakeWatcher, replicas: number): void {
    const d = deployment(2);
    (d.spec as { replicas: number }).replicas = replicas;
    d.metadata.managedFields = [{ manager: 'kube-controller-manager', operation: 'Update', subresource: 'scale', fieldsV1: { 'f:spec': { 'f:replicas': {} } } }];
    watcher.put(d);
    api.put(deployments, d);
  }

  const writes = (api: ObjectApi): string[] => api.requests.filter((r) => r.startsWith('PATCH'));

  it('warn: tells what differs (a missing object too) from the cache, and sends nothing', async () => {
    const { api, watcher, keeper } = keeperWith();
    scaledByHpa(api, watcher, 5);
    watcher.cache.delete('v1/ConfigMap/ns1/extra');
    const kept = await keeper.keep(input({ repair: true, driftDetection: { mode: 'warn', ignore: [] } }));
    assert.deepEqual(kept.unrepaired, [
      { object: 'Deployment web', fields: ['spec.replicas'] },
      { object: 'ConfigMap extra', fields: [] },
    ]);
    assert.deepEqual(kept.repaired, []);
    assert.deepEqual(api.requests, [], 'no read, no write');
  });

  it('off: compares nothing and writes nothing, and still tells readiness', async () => {
    const { api, watcher, keeper } = keeperWith();
    scaledByHpa(api, watcher, 5);
    const kept = await keeper.keep(input({ repair: true, driftDetection: { mode: 'off', ignore: [] } }));
    assert.deepEqual([kept.repaired, kept.unrepaired, kept.contests], [[], [], []]);
    assert.deepEqual(kept.readiness, { ready: false, failed: false, reason: 'DeploymentNotAvailable', message: 'Deployment web: 2/5 replicas updated' });
    assert.deepEqual(api.requests, []);
  });

  it('an ignore rule leaves a field to its owner: no read, no write, nothing told', async () => {
    const { api, watcher, keeper } = keeperWith();
    scaledByHpa(api, watcher, 5);
    const kept = await keeper.keep(input({ repair: true, driftDetection: { mode: 'repair', ignore: [{ paths: ['/spec/replicas'], target: { kind: 'Deployment' } }] } }));
    assert.deepEqual([kept.repaired, kept.unrepaired, kept.contests], [[], [], []]);
    assert.deepEqual(api.requests, []);
  });

  it('a field set back again and again is given up to the other manager: bounded writes, told once, named in every pass after', async () => {
    let now = 0;
    const { api, watcher, keeper } = keeperWith({ now: () => now });
    const pass = () => keeper.keep(input({ repair: true, manifest: undefined }));
    await keeper.keep(input()); // parses the record
    for (let round = 1; round <= 2; round++) {
      scaledByHpa(api, watcher, 5);
      const kept = await pass();
      assert.deepEqual(kept.repaired, [{ object: 'Deployment web', action: 'updated', fields: ['spec.replicas'] }], `round ${String(round)}`);
      assert.equal(writes(api).length, round);
      now += 15_000;
    }
    scaledByHpa(api, watcher, 5);
    const given = await pass();
    assert.deepEqual(given.repaired, []);
    assert.deepEqual(given.contests, [
      { object: 'Deployment web', kind: 'Deployment', field: 'spec.replicas', pointer: '/spec/replicas', managers: ['kube-controller-manager (scale)'], repairs: 2, withinMs: 30_000, announce: true },
    ]);
    const after = await pass();
    assert.deepEqual(after.contests?.map((c) => c.announce), [false], 'still named, not announced again');
    assert.equal(writes(api).length, 2, 'no write after giving up');

    // Other drift on the same object is still set back, and the given-up field is left out of the body.
    const drifted = deployment(2);
    drifted.spec = { replicas: 5, paused: true };
    watcher.put(drifted);
    api.put(deployments, { ...drifted, metadata: { ...drifted.metadata, managedFields: [{ manager: 'kube-controller-manager', operation: 'Update', subresource: 'scale', fieldsV1: { 'f:spec': { 'f:replicas': {} } } }] } });
    const web = MANIFEST.replace('  replicas: 2', '  replicas: 2\n  paused: false');
    const repaired = await keeper.keep(input({ repair: true, manifest: web }));
    assert.equal(writes(api).length, 3);
    assert.deepEqual(repaired.repaired.map((r) => r.fields), [['spec.replicas', 'spec.paused']], 'a new record starts afresh');
  });

  it('judges nothing right after a deploy (repair: false): unrepaired and contests are not told', async () => {
    const { keeper } = keeperWith();
    const kept = await keeper.keep(input({ driftDetection: { mode: 'warn', ignore: [] } }));
    assert.equal(kept.unrepaired, undefined);
    assert.equal(kept.contests, undefined);
  });
});

describe('ReleaseKeeper with --shards: the owner-bucket label', () => {
  const OWNER = 'chartpilot.io/owner-uid';
  const BUCKET = 'chartpilot.io/owner-bucket';
  /** The bucket of the test's owner uid-1, and one that is not. */
  const mine = String(bucketOf('uid-1'));
  const other = String((bucketOf('uid-1') + 1) % 1024);
  const labelled = (obj: KubeObject, labels: Record<string, string>, resourceVersion = '5'): KubeObject => ({ ...obj, metadata: { ...obj.metadata, resourceVersion, labels: { ...obj.metadata.labels, ...labels } } });
  /** MANIFEST as the post-renderer emits it now: every object labelled with its owner and bucket. */
  const STAMPED = MANIFEST.replace(/^metadata:\n/gmu, `metadata:\n  labels:\n    ${OWNER}: uid-1\n    ${BUCKET}: "${mine}"\n`);
  const merges = (api: ObjectApi) => api.calls.filter((c) => c.method === 'PATCH' && c.opts.contentType === 'application/merge-patch+json');

  it('judges nothing from caches that do not hold the owner\'s objects, and tells no readiness', async () => {
    const { keeper, watcher, api, logged } = setup();
    inSync(api, watcher);
    watcher.cache.delete('v1/ConfigMap/ns1/extra'); // would be recreated if this pass judged
    watcher.notWatchedOwners.add('uid-1');
    const kept = await keeper.keep(input({ repair: true }));
    assert.deepEqual(watcher.waitedFor, ['uid-1']);
    assert.deepEqual(kept, { inventory: INVENTORY, repaired: [], readiness: undefined });
    assert.deepEqual(api.requests, [], 'no read, no write');
    assert.match(logged(), /does not watch this resource's objects/);
  });

  it('a changed bucket label takes the object out of its owner\'s cache: the fresh read finds the label drifted from the chart, and the repair sets it back', async () => {
    const { keeper, watcher, api } = setup({ fixBucketLabels: true });
    inSync(api, watcher);
    const cfg = labelled(configMap('cfg', { mode: 'fast' }), { [OWNER]: 'uid-1', [BUCKET]: other });
    watcher.cache.delete('v1/ConfigMap/ns1/cfg'); // another replica's bucket: not in this one's cache
    api.put(configMaps, cfg);
    for (const name of ['extra']) api.put(configMaps, labelled(configMap(name), { [OWNER]: 'uid-1', [BUCKET]: mine }));
    watcher.put(labelled(configMap('extra'), { [OWNER]: 'uid-1', [BUCKET]: mine }));
    const d = labelled(deployment(2), { [OWNER]: 'uid-1', [BUCKET]: mine });
    watcher.put(d);
    api.put(deployments, d);
    const kept = await keeper.keep(input({ repair: true, manifest: STAMPED }));
    assert.deepEqual(kept.repaired, [{ object: 'ConfigMap cfg', action: 'updated', fields: [`metadata.labels["${BUCKET}"]`] }]);
    const apply = api.calls.find((c) => c.method === 'PATCH');
    assert.equal(apply?.opts.contentType, 'application/apply-patch+yaml', 'set back as Helm, like any drift');
    assert.equal((apply.opts.body as KubeObject).metadata.labels?.[BUCKET], mine);
    assert.deepEqual(merges(api), [], 'the repair did it: no second write');
  });

  it('sets a missing or wrong label of a release made before the label existed: one guarded merge patch of that label, no repair reported', async () => {
    const { keeper, watcher, api, logged } = setup({ fixBucketLabels: true });
    inSync(api, watcher);
    // cfg: no bucket label (in the cache of unlabelled objects); extra: another bucket (a cache miss); web: right.
    const cfg = labelled(configMap('cfg', { mode: 'fast' }), { [OWNER]: 'uid-1' });
    watcher.put(cfg);
    api.put(configMaps, cfg);
    api.put(configMaps, labelled(configMap('extra'), { [OWNER]: 'uid-1', [BUCKET]: other }, '7'));
    watcher.cache.delete('v1/ConfigMap/ns1/extra');
    const d = labelled(deployment(2), { [OWNER]: 'uid-1', [BUCKET]: mine });
    watcher.put(d);
    api.put(deployments, d);
    const kept = await keeper.keep(input({ repair: true }));
    assert.deepEqual(kept.repaired, [], 'not drift from the chart: no DriftRepaired');
    assert.deepEqual(api.requests, ['PATCH /api/v1/namespaces/ns1/configmaps/cfg', 'GET /api/v1/namespaces/ns1/configmaps/extra', 'PATCH /api/v1/namespaces/ns1/configmaps/extra']);
    assert.deepEqual(merges(api).map((c) => c.opts.body), [
      { metadata: { resourceVersion: '5', labels: { [BUCKET]: mine } } },
      { metadata: { resourceVersion: '7', labels: { [BUCKET]: mine } } },
    ]);
    assert.deepEqual(merges(api).map((c) => c.opts.query), [{ fieldManager: 'chartpilot' }, { fieldManager: 'chartpilot' }]);
    assert.equal(api.objects.get('/api/v1/namespaces/ns1/configmaps/extra')?.metadata.labels?.[BUCKET], mine);
    assert.equal(api.objects.get('/api/v1/namespaces/ns1/configmaps/cfg')?.metadata.labels?.[BUCKET], mine);
    assert.match(logged(), /set the owner-bucket label of an object/);
  });

  it('leaves the label alone without --shards, in warn mode, on another owner\'s object, and on a copy that changed since (the next pass sees it)', async () => {
    const legacy = (api: ObjectApi, watcher: FakeWatcher, owner: string, cachedVersion = '5'): void => {
      inSync(api, watcher);
      api.put(configMaps, labelled(configMap('cfg', { mode: 'fast' }), { [OWNER]: owner }));
      watcher.put(labelled(configMap('cfg', { mode: 'fast' }), { [OWNER]: owner }, cachedVersion));
    };
    const off = setup();
    legacy(off.api, off.watcher, 'uid-1');
    await off.keeper.keep(input({ repair: true }));
    assert.deepEqual(off.api.requests, [], 'without the option (no --shards)');

    const warn = setup({ fixBucketLabels: true });
    legacy(warn.api, warn.watcher, 'uid-1');
    await warn.keeper.keep(input({ repair: true, driftDetection: { mode: 'warn', ignore: [] } }));
    assert.deepEqual(warn.api.requests, [], 'warn writes nothing');

    const theirs = setup({ fixBucketLabels: true });
    legacy(theirs.api, theirs.watcher, 'uid-2');
    await theirs.keeper.keep(input({ repair: true }));
    assert.deepEqual(theirs.api.requests, [], 'an object naming another owner is not this owner\'s to label');

    const stale = setup({ fixBucketLabels: true });
    legacy(stale.api, stale.watcher, 'uid-1', '4');
    const kept = await stale.keeper.keep(input({ repair: true }));
    assert.deepEqual(stale.api.requests, ['PATCH /api/v1/namespaces/ns1/configmaps/cfg'], 'tried once');
    assert.equal(stale.api.objects.get('/api/v1/namespaces/ns1/configmaps/cfg')?.metadata.labels?.[BUCKET], undefined, 'refused: it changed since the cache saw it');
    assert.equal(kept.readiness?.ready, true, 'the pass went on');
    assert.doesNotMatch(stale.logged(), /could not set the owner-bucket label/, 'a conflict is no failure: the watch brings the change and the next pass');
  });
});
