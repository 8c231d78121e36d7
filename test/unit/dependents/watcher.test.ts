import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino, type Logger } from 'pino';
import { specHash } from '../../../src/dependents/spec-hash.js';
import { DependentWatcher, sameReadinessVerdict, type DependentChange } from '../../../src/dependents/watcher.js';
import { KubeApiError } from '../../../src/kube/errors.js';
import type { KubeObject } from '../../../src/kube/types.js';
import { until } from '../fakes/clock.js';
import { FakeApi, forbidden } from '../kube/fake-api.js';

const OWNER = 'chartpilot.io/owner-uid';

function capture(): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  return { log: pino({ level: 'info' }, { write: (s: string) => lines.push(s) }), lines };
}


function setup(namespaces: string[] = [], opts: { notifyInitial?: boolean } = {}) {
  const api = new FakeApi();
  const changes: [string, DependentChange][] = [];
  const { log, lines } = capture();
  const watcher = new DependentWatcher({
    client: api,
    namespaces,
    log,
    onChange: (uid, change) => changes.push([uid, change]),
    ...opts,
  });
  return { api, watcher, changes, lines };
}

const summary = (changes: [string, DependentChange][]): string[] =>
  changes.map(([uid, c]) => `${uid} ${c.type} ${c.objectRef.kind} ${c.objectRef.namespace ?? '-'}/${c.objectRef.name} spec=${c.specChanged} verdict=${c.verdictChanged}`);

describe('DependentWatcher', () => {
  it('lists and watches only labelled objects and reports events to their owner', async (t) => {
    const { api, watcher, changes } = setup();
    t.after(() => watcher.stop());
    api.put('before', { a: '1' }, 'ns', { labels: { [OWNER]: 'u1' } });
    await watcher.ensureWatching('v1', 'ConfigMap');
    await watcher.ensureWatching('v1', 'ConfigMap'); // idempotent
    await watcher.waitForSync();
    assert.ok(api.lists.length > 0 && api.lists.every((l) => l.query.labelSelector === OWNER), 'every LIST selects by the owner label');
    await until('watch open', () => api.current !== undefined);
    assert.equal(api.current?.query.labelSelector, OWNER);
    assert.equal(api.current.accept, undefined, 'full objects, not metadata only');
    assert.deepEqual(changes, [], 'objects found by the first LIST are not reported');
    assert.equal(watcher.get('v1', 'ConfigMap', 'ns', 'before')?.data !== undefined, true);

    api.put('web', { a: '1' }, 'ns', { labels: { [OWNER]: 'u1' } });
    api.put('web', { a: '2' }, 'ns', { labels: { [OWNER]: 'u1' } });
    api.put('unlabelled', {}, 'ns');
    api.remove('web', 'ns');
    assert.deepEqual(summary(changes), [
      'u1 added ConfigMap ns/web spec=true verdict=true',
      'u1 updated ConfigMap ns/web spec=true verdict=true',
      'u1 deleted ConfigMap ns/web spec=true verdict=true',
    ]);
    assert.deepEqual(watcher.watchedKinds(), ['v1/ConfigMap']);
    assert.equal(watcher.isWatching('v1', 'ConfigMap'), true);
  });

  it('reports a status-only or metadata-noise update with specChanged false', async (t) => {
    const { api, watcher, changes } = setup();
    t.after(() => watcher.stop());
    const obj = api.put('web', { a: '1' }, 'ns', { labels: { [OWNER]: 'u1' }, generation: 1 });
    await watcher.ensureWatching('v1', 'ConfigMap');
    await watcher.waitForSync();
    await until('watch open', () => api.current !== undefined);
    const next = (patch: Partial<KubeObject>, rv: string): KubeObject => ({ ...structuredClone(obj), ...patch, metadata: { ...obj.metadata, resourceVersion: rv, ...patch.metadata } });
    api.current?.emit('MODIFIED', next({ status: { phase: 'x' } }, '201'));
    api.current?.emit('MODIFIED', next({ status: { phase: 'x' }, metadata: { name: 'web', managedFields: [{ manager: 'm' }] } }, '202'));
    api.current?.emit('MODIFIED', next({ status: { phase: 'x' }, metadata: { name: 'web', labels: { [OWNER]: 'u1', extra: 'y' } } }, '203'));
    assert.deepEqual(summary(changes), [
      'u1 updated ConfigMap ns/web spec=false verdict=false',
      'u1 updated ConfigMap ns/web spec=false verdict=false',
      'u1 updated ConfigMap ns/web spec=true verdict=true',
    ]);
  });

  it('tells both owners when an object moves from one owner to another', async (t) => {
    const { api, watcher, changes } = setup();
    t.after(() => watcher.stop());
    api.put('web', {}, 'ns', { labels: { [OWNER]: 'u1' } });
    await watcher.ensureWatching('v1', 'ConfigMap');
    await watcher.waitForSync();
    await until('watch open', () => api.current !== undefined);
    api.put('web', {}, 'ns', { labels: { [OWNER]: 'u2' } });
    assert.deepEqual(summary(changes), ['u1 updated ConfigMap ns/web spec=true verdict=true', 'u2 updated ConfigMap ns/web spec=true verdict=true']);
  });

  it('reports the first LIST when asked to', async (t) => {
    const { api, watcher, changes } = setup([], { notifyInitial: true });
    t.after(() => watcher.stop());
    api.put('web', {}, 'ns', { labels: { [OWNER]: 'u1' } });
    await watcher.ensureWatching('v1', 'ConfigMap');
    await watcher.waitForSync();
    assert.deepEqual(summary(changes), ['u1 added ConfigMap ns/web spec=true verdict=true']);
  });

  it('runs one informer per namespace when it has a namespace list', async (t) => {
    const { api, watcher } = setup(['a', 'b']);
    t.after(() => watcher.stop());
    await watcher.ensureWatching('v1', 'ConfigMap');
    await watcher.waitForSync();
    await until('two watches', () => api.watches.length === 2);
    assert.deepEqual(api.watches.map((w) => w.path).sort(), ['/api/v1/namespaces/a/configmaps', '/api/v1/namespaces/b/configmaps']);
    assert.equal(watcher.get('v1', 'ConfigMap', 'c', 'x'), undefined, 'unwatched namespace');
  });

  it('skips a kind it may not list, logs that once and does not retry at once', async (t) => {
    const { api, watcher, lines } = setup();
    t.after(() => watcher.stop());
    api.listFailures.push(forbidden());
    await watcher.ensureWatching('v1', 'ConfigMap');
    await watcher.ensureWatching('v1', 'ConfigMap');
    await watcher.waitForSync();
    assert.equal(watcher.isWatching('v1', 'ConfigMap'), false);
    assert.equal(api.lists.length, 1, 'one probe, no informer');
    assert.equal(api.watches.length, 0);
    assert.equal(lines.filter((l) => l.includes('cannot list configmaps cluster-wide')).length, 1);
  });

  it('skips a kind the cluster does not serve', async (t) => {
    const { api, watcher, lines } = setup();
    t.after(() => watcher.stop());
    api.resourceFor = () => Promise.reject(new KubeApiError('no resource for kind Widget', { status: 404, reason: 'NotFound' }));
    await watcher.ensureWatching('example.com/v1', 'Widget');
    assert.equal(watcher.isWatching('example.com/v1', 'Widget'), false);
    assert.equal(lines.filter((l) => l.includes('Widget example.com/v1 is not served')).length, 1);
  });

  it('rejects other failures so the caller retries', async (t) => {
    const { api, watcher } = setup();
    t.after(() => watcher.stop());
    api.listFailures.push(new KubeApiError('connection refused', { status: 0 }));
    await assert.rejects(watcher.ensureWatching('v1', 'ConfigMap'), /connection refused/);
    await watcher.ensureWatching('v1', 'ConfigMap');
    assert.equal(watcher.isWatching('v1', 'ConfigMap'), true);
  });

  it('stops its informers and refuses new kinds afterwards', async () => {
    const { api, watcher } = setup();
    await watcher.ensureWatching('v1', 'ConfigMap');
    await watcher.waitForSync();
    await until('watch open', () => api.current !== undefined);
    await watcher.stop();
    assert.equal(api.current, undefined, 'the watch was ended');
    await assert.rejects(watcher.ensureWatching('v1', 'Secret'), /stopped/);
  });

  it('refuses an empty namespace name', () => {
    assert.throws(() => new DependentWatcher({ client: new FakeApi(), namespaces: [''], log: pino({ level: 'silent' }), onChange: () => undefined }), TypeError);
  });
});

describe('specHash', () => {
  it('ignores status and volatile metadata, and key order', () => {
    const a: KubeObject = { apiVersion: 'v1', kind: 'X', metadata: { name: 'a', labels: { x: '1', y: '2' }, resourceVersion: '1', generation: 1 }, spec: { p: 1, q: [1, 2] } };
    const b: KubeObject = { kind: 'X', apiVersion: 'v1', spec: { q: [1, 2], p: 1 }, metadata: { labels: { y: '2', x: '1' }, name: 'a', resourceVersion: '9', generation: 2, managedFields: [] }, status: { ok: true } };
    assert.equal(specHash(a), specHash(b));
    assert.notEqual(specHash(a), specHash({ ...a, spec: { p: 2, q: [1, 2] } }));
    assert.notEqual(specHash(a), specHash({ ...a, metadata: { ...a.metadata, annotations: { n: 'x' } } }));
  });
});

describe('sameReadinessVerdict', () => {
  const ref = { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'ns', name: 'web' };
  const deployment = (status: Record<string, unknown>): KubeObject => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'ns', generation: 2 },
    spec: { replicas: 1 },
    status: { observedGeneration: 2, replicas: 1, ...status },
  });

  it('is the same while a rollout only progresses, and changes when it becomes available or fails', () => {
    const updating = deployment({ updatedReplicas: 0 });
    const updated = deployment({ updatedReplicas: 1, availableReplicas: 0 });
    const available = deployment({ updatedReplicas: 1, availableReplicas: 1 });
    const stuck = deployment({ conditions: [{ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded' }] });
    assert.equal(sameReadinessVerdict(ref, updating, updated), true, '0/1 updated → 0/1 available: progress only');
    assert.equal(sameReadinessVerdict(ref, updated, available), false);
    assert.equal(sameReadinessVerdict(ref, updated, stuck), false);
    assert.equal(sameReadinessVerdict(ref, undefined, updated), false, 'missing → present');
  });
});
