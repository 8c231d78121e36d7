import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino, type Logger } from 'pino';
import { specHash } from '../../../src/dependents/spec-hash.js';
import { bucketSelection, type SwapDelays } from '../../../src/dependents/selection.js';
import { DependentWatcher, sameReadinessVerdict, type DependentChange } from '../../../src/dependents/watcher.js';
import { KubeApiError } from '../../../src/kube/errors.js';
import { bucketOf } from '../../../src/lib/uid-bucket.js';
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

describe('DependentWatcher with --shards', () => {
  const BUCKET = 'chartpilot.io/owner-bucket';
  /** Three owners in three different buckets (uids as the API server would not make them, but any string has a bucket). */
  const owners = ((): string[] => {
    const out: string[] = [];
    for (let i = 0; out.length < 3; i++) {
      const uid = `owner-${String(i)}`;
      if (!out.some((u) => bucketOf(u) === bucketOf(uid))) out.push(uid);
    }
    return out;
  })();
  const [u1 = '', u2 = '', u3 = ''] = owners;
  const [b1, b2] = [bucketOf(u1), bucketOf(u2)];
  const stamped = (uid: string, bucket: number = bucketOf(uid)): Partial<KubeObject['metadata']> => ({ labels: { [OWNER]: uid, [BUCKET]: String(bucket) } });
  const FAST: SwapDelays = { gainMs: 5, shrinkMs: 20 };

  function sharded(buckets: number[], opts: { swapDelays?: SwapDelays; onCovered?: (uid: string) => void } = {}) {
    const api = new FakeApi();
    api.honourSelectors = true;
    const changes: [string, DependentChange][] = [];
    const { log, lines } = capture();
    const watcher = new DependentWatcher({
      client: api,
      namespaces: [],
      log,
      onChange: (uid, change) => changes.push([uid, change]),
      selection: bucketSelection(buckets),
      swapDelays: opts.swapDelays ?? FAST,
      onCovered: opts.onCovered,
    });
    return { api, watcher, changes, lines };
  }
  const ownedSelector = (buckets: number[]): string => `${OWNER},${BUCKET} in (${[...buckets].sort((a, b) => a - b).join(',')})`;
  /** Waits in real time (the swap timers are real), polling. */
  const eventually = async (what: string, cond: () => boolean, timeoutMs = 2_000): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    while (!cond()) {
      if (Date.now() > deadline) throw new Error(`never happened: ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  };
  const dataOf = (o: KubeObject | undefined): unknown => (o?.data as Record<string, string> | undefined)?.['v'];
  const openWatches = (api: FakeApi): string[] => api.watches.filter((w) => !w.ended).map((w) => String(w.query.labelSelector)).sort();

  it('caches only the objects of its buckets, and every object without a bucket label', async (t) => {
    const { api, watcher } = sharded([b1]);
    t.after(() => watcher.stop());
    api.put('mine', {}, 'ns', stamped(u1));
    api.put('theirs', {}, 'ns', stamped(u2));
    api.put('old', {}, 'ns', { labels: { [OWNER]: u3 } });
    await watcher.ensureWatching('v1', 'ConfigMap');
    await watcher.waitForSync();
    assert.deepEqual([...new Set(api.lists.slice(1).map((l) => l.query.labelSelector))].sort(), [`${OWNER},!${BUCKET}`, ownedSelector([b1])], 'after the RBAC probe: one LIST per watch');
    await until('both watches open', () => openWatches(api).length === 2);
    assert.notEqual(watcher.get('v1', 'ConfigMap', 'ns', 'mine'), undefined);
    assert.equal(watcher.get('v1', 'ConfigMap', 'ns', 'theirs'), undefined, 'another replica\'s share');
    assert.notEqual(watcher.get('v1', 'ConfigMap', 'ns', 'old'), undefined, 'no bucket label: every replica watches it');
    assert.deepEqual(watcher.stats(), { owned: 1, unbucketed: 1, buckets: 1, swaps: 0 });
    assert.equal(await watcher.waitForOwner(u1), true);
    assert.equal(await watcher.waitForOwner(u2), false, 'not this replica\'s: no wait');
  });

  it('a changed bucket label takes the object out of its owner\'s cache, told as a delete; a removed one brings it back through the unbucketed watch', async (t) => {
    const { api, watcher, changes } = sharded([b1]);
    t.after(() => watcher.stop());
    api.put('web', {}, 'ns', stamped(u1));
    await watcher.ensureWatching('v1', 'ConfigMap');
    await watcher.waitForSync();
    await until('both watches open', () => openWatches(api).length === 2);
    api.put('web', {}, 'ns', stamped(u1, b2));
    assert.equal(watcher.get('v1', 'ConfigMap', 'ns', 'web'), undefined);
    api.put('web', {}, 'ns', { labels: { [OWNER]: u1 } });
    assert.notEqual(watcher.get('v1', 'ConfigMap', 'ns', 'web'), undefined);
    assert.deepEqual(summary(changes), [`${u1} deleted ConfigMap ns/web spec=true verdict=true`, `${u1} added ConfigMap ns/web spec=true verdict=true`]);
  });

  it('swaps to a new share: the new watch syncs while the old one serves, what the old one missed is told, a gained owner\'s wait ends, a lost owner\'s objects go', async (t) => {
    const { api, watcher, changes, lines } = sharded([b1]);
    t.after(() => watcher.stop());
    api.put('one', { v: '1' }, 'ns', stamped(u1));
    api.put('two', {}, 'ns', stamped(u2));
    await watcher.ensureWatching('v1', 'ConfigMap');
    await watcher.waitForSync();
    await until('both watches open', () => openWatches(api).length === 2);

    // A change the old watch never delivers (its connection lags): only the new LIST sees it.
    api.live = false;
    api.put('one', { v: '2' }, 'ns', stamped(u1));
    api.live = true;
    assert.equal(dataOf(watcher.get('v1', 'ConfigMap', 'ns', 'one')), '1');

    watcher.select(bucketSelection([b1, b2]));
    const waiting = watcher.waitForOwner(u2);
    assert.equal(watcher.get('v1', 'ConfigMap', 'ns', 'two'), undefined, 'not before the swap');
    assert.equal(await waiting, true, 'the gained owner\'s wait ends once its objects are cached');
    assert.notEqual(watcher.get('v1', 'ConfigMap', 'ns', 'two'), undefined);
    assert.equal(dataOf(watcher.get('v1', 'ConfigMap', 'ns', 'one')), '2');
    assert.deepEqual(summary(changes), [`${u1} updated ConfigMap ns/one spec=true verdict=true`], 'the missed change is told; the gained owner\'s objects are not (its pass runs anyway)');
    assert.deepEqual(openWatches(api), [`${OWNER},!${BUCKET}`, ownedSelector([b1, b2])], 'the old owned watch stopped; the unbucketed one stays');
    assert.equal(api.lists.filter((l) => l.query.labelSelector === ownedSelector([b1, b2])).length, 1, 'one LIST for the swap');
    assert.equal(watcher.stats().swaps, 1);
    assert.ok(lines.some((l) => l.includes('dependent watches swapped')));

    // Events now come from the new watch.
    api.put('two', { v: '2' }, 'ns', stamped(u2));
    assert.equal(summary(changes).at(-1), `${u2} updated ConfigMap ns/two spec=true verdict=true`);

    // Losing a bucket: after the (longer) shrink delay the objects of that owner leave the cache.
    watcher.select(bucketSelection([b2]));
    assert.notEqual(watcher.get('v1', 'ConfigMap', 'ns', 'one'), undefined, 'still cached until the swap');
    assert.equal(await watcher.waitForOwner(u1), true, 'still covered until the swap: a pass running here reads what is there');
    await eventually('swapped again', () => watcher.stats().swaps === 2);
    assert.equal(watcher.get('v1', 'ConfigMap', 'ns', 'one'), undefined);
    assert.deepEqual(watcher.stats(), { owned: 1, unbucketed: 0, buckets: 1, swaps: 2 });
    assert.equal(await watcher.waitForOwner(u1), false);
  });

  it('a burst of changes within the delay costs one swap, to the last selection', async (t) => {
    const { api, watcher } = sharded([b1], { swapDelays: { gainMs: 50, shrinkMs: 50 } });
    t.after(() => watcher.stop());
    await watcher.ensureWatching('v1', 'ConfigMap');
    await watcher.waitForSync();
    watcher.select(bucketSelection([b1, b2]));
    watcher.select(bucketSelection([b2]));
    watcher.select(bucketSelection([b2, bucketOf(u3)]));
    await eventually('swapped', () => watcher.stats().swaps === 1);
    await new Promise((resolve) => setTimeout(resolve, 120));
    assert.equal(watcher.stats().swaps, 1);
    const owned = api.lists.map((l) => String(l.query.labelSelector)).filter((s) => s.includes(' in ('));
    assert.deepEqual(owned, [ownedSelector([b1]), ownedSelector([b2, bucketOf(u3)])], 'no LIST of the selections in between');
  });

  it('a pass that gave up waiting for its owner\'s bucket is told once the bucket is watched', async (t) => {
    const covered: string[] = [];
    const { watcher } = sharded([b1], { swapDelays: { gainMs: 100, shrinkMs: 100 }, onCovered: (uid) => covered.push(uid) });
    t.after(() => watcher.stop());
    await watcher.ensureWatching('v1', 'ConfigMap');
    await watcher.waitForSync();
    watcher.select(bucketSelection([b1, b2]));
    assert.equal(await watcher.waitForOwner(u2, AbortSignal.timeout(10)), false, 'gave up');
    assert.deepEqual(covered, []);
    await eventually('swapped', () => watcher.stats().swaps === 1);
    assert.deepEqual(covered, [u2]);
  });

  it('a kind first watched during a swap gets its own new watch before the swap commits', async (t) => {
    const { api, watcher } = sharded([b1], { swapDelays: { gainMs: 0, shrinkMs: 0 } });
    t.after(() => watcher.stop());
    api.put('two', {}, 'ns', stamped(u2));
    await watcher.ensureWatching('v1', 'ConfigMap');
    await watcher.waitForSync();
    const release = api.holdLists(ownedSelector([b1, b2])); // the swap's LIST is slow
    watcher.select(bucketSelection([b1, b2]));
    await new Promise((resolve) => setTimeout(resolve, 20));
    await watcher.ensureWatching('v1', 'Secret'); // the fake serves ConfigMaps for any kind
    await watcher.waitForSync();
    assert.equal(watcher.stats().swaps, 0, 'the swap still waits for its LIST');
    release();
    await watcher.waitForOwner(u2);
    assert.notEqual(watcher.get('v1', 'Secret', 'ns', 'two'), undefined);
    assert.notEqual(watcher.get('v1', 'ConfigMap', 'ns', 'two'), undefined);
  });

  it('a swap in flight that would not cover a newer gain is dropped for one that does; one that would finishes first', async (t) => {
    const { api, watcher } = sharded([b1], { swapDelays: { gainMs: 0, shrinkMs: 30 } });
    t.after(() => watcher.stop());
    api.put('three', {}, 'ns', stamped(u3));
    await watcher.ensureWatching('v1', 'ConfigMap');
    await watcher.waitForSync();
    const b3 = bucketOf(u3);
    api.holdLists(ownedSelector([b1, b2])); // never answered
    watcher.select(bucketSelection([b1, b2]));
    await new Promise((resolve) => setTimeout(resolve, 20));
    watcher.select(bucketSelection([b1, b2, b3]));
    assert.equal(await watcher.waitForOwner(u3, AbortSignal.timeout(1_000)), true, 'the newer gain is watched, not stuck behind the older swap');
    assert.equal(watcher.stats().swaps, 1);
    assert.notEqual(watcher.get('v1', 'ConfigMap', 'ns', 'three'), undefined);

    // A loss while a swap that covers everything still wanted runs: that swap commits, the loss follows.
    const release = api.holdLists(ownedSelector([b1, b2, b3, bucketOf('other')]));
    watcher.select(bucketSelection([b1, b2, b3, bucketOf('other')]));
    await new Promise((resolve) => setTimeout(resolve, 20));
    watcher.select(bucketSelection([b3]));
    release();
    await eventually('both swaps', () => watcher.stats().swaps === 3);
    assert.deepEqual(watcher.stats(), { owned: 1, unbucketed: 0, buckets: 1, swaps: 3 });
  });

  it('stopping ends a pending swap and every wait', async () => {
    const { api, watcher } = sharded([b1], { swapDelays: { gainMs: 60_000, shrinkMs: 60_000 } });
    await watcher.ensureWatching('v1', 'ConfigMap');
    await watcher.waitForSync();
    watcher.select(bucketSelection([b1, b2]));
    const waiting = watcher.waitForOwner(u2);
    await watcher.stop();
    assert.equal(await waiting, false);
    assert.deepEqual(openWatches(api), []);
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
