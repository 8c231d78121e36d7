import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { Logger } from 'pino';
import { CrController, keyOf, releases, type ShardAdmission, type ShardHooks } from '../../../src/controller/cr-controller.js';
import { KubeApiError } from '../../../src/kube/errors.js';
import { resourcePath } from '../../../src/kube/resource.js';
import type { ApiResource, KubeObject } from '../../../src/kube/types.js';
import type { CustomResource } from '../../../src/core/model.js';
import { FINALIZER, FINALIZERS, LEGACY_FINALIZER } from '../../../src/engines/helm/names.js';
import { HelmCallInterrupted, HelmCallsStopped } from '../../../src/engines/helm/ports.js';
import { ReconcileFailure, type Reconciler } from '../../../src/engines/helm/reconciler.js';
import { type ReconcileOutcome } from '../../../src/core/outcome.js';
import { FakeClock, settle, until } from '../fakes/clock.js';
import { capturingLogger } from '../fakes/reconcile-ports.js';
import { configMaps, FakeApi, forbidden } from '../kube/fake-api.js';

/** Records every reconcile; answers with `outcome` (a rejection when it is an Error). */
class FakeReconciler implements Pick<Reconciler, 'reconcile'> {
  readonly seen: CustomResource[] = [];
  outcome: ReconcileOutcome | Error = {};
  private inside: ((cr: CustomResource) => Promise<void>) | undefined;

  /** What the next reconcile does before it answers: its own writes, and what changes meanwhile. */
  duringNext(inside: (cr: CustomResource) => Promise<void>): void {
    this.inside = inside;
  }

  async reconcile(cr: CustomResource, _log: Logger, _signal?: AbortSignal): Promise<ReconcileOutcome> {
    this.seen.push(cr);
    const inside = this.inside;
    this.inside = undefined;
    if (inside !== undefined) await inside(cr);
    if (this.outcome instanceof Error) throw this.outcome;
    return this.outcome;
  }

  get keys(): string[] {
    return this.seen.map((cr) => keyOf(cr));
  }
}

interface SetupOptions {
  readonly namespaces?: string[];
  readonly labelSelector?: string;
  readonly resource?: ApiResource;
  readonly onStopping?: () => void;
  readonly onSpec?: (cr: CustomResource) => void;
  readonly shard?: ShardHooks;
  /** The kind's finalizers; a chart kind's unless given. */
  readonly finalizers?: readonly string[];
}

/** A controller of ConfigMaps (the kind FakeApi serves) with a fake reconciler and a hand-driven clock. */
function setup(t: TestContext, o: SetupOptions = {}) {
  const api = new FakeApi();
  const clock = new FakeClock();
  const reconciler = new FakeReconciler();
  const results: string[] = [];
  const retries: string[] = [];
  const resources: string[] = [];
  const { log, text } = capturingLogger();
  const controller = new CrController({
    name: 'webapp',
    resource: o.resource ?? configMaps,
    client: api,
    namespaces: o.namespaces ?? [],
    labelSelector: o.labelSelector,
    concurrency: 2,
    reconciler,
    finalizers: () => o.finalizers ?? FINALIZERS,
    log,
    clock,
    queueMetrics: { onRetry: (key) => retries.push(key) },
    onReconciled: (result) => results.push(result),
    onResource: (change, obj) => resources.push(`${change} ${obj.metadata.namespace ?? ''}/${obj.metadata.name}`),
    ...(o.onStopping === undefined ? {} : { onStopping: o.onStopping }),
    ...(o.onSpec === undefined ? {} : { onSpec: o.onSpec }),
    ...(o.shard === undefined ? {} : { shard: o.shard }),
  });
  t.after(() => controller.stop(0));
  return { api, clock, reconciler, controller, results, retries, resources, logged: text };
}

/** Starts the controller with `names` in namespace ns1 and waits until each was reconciled once. */
async function started(t: TestContext, names: string[], o: SetupOptions = {}) {
  const s = setup(t, o);
  for (const name of names) s.api.put(name, { mode: 'fast' }, 'ns1', { generation: 1 });
  s.controller.start();
  await until(`${names.length} reconciles`, () => s.reconciler.seen.length === names.length);
  return s;
}

describe('CrController', () => {
  it('reconciles every object its informer lists, as the cache has it', async (t) => {
    const { reconciler, results, clock } = await started(t, ['a', 'b']);
    assert.deepEqual(reconciler.keys.sort(), ['ns1/a', 'ns1/b']);
    const a = reconciler.seen.find((cr) => cr.metadata.name === 'a');
    assert.equal(a?.metadata.uid, 'uid-a');
    assert.deepEqual((a as { data?: unknown }).data, { mode: 'fast' });
    assert.deepEqual(results, ['success', 'success']);
    assert.equal(clock.pending, 0, 'no requeue was asked for');
  });

  it('says once, when every CR of the first LIST finished a reconcile, how many there were (a restart is over)', async (t) => {
    const s = setup(t);
    for (const name of ['a', 'b', 'c']) s.api.put(name, { mode: 'fast' }, 'ns1', { generation: 1 });
    const checkedLines = (): Record<string, unknown>[] =>
      s.logged().split('\n').filter((l) => l.includes('every resource checked since start')).map((l) => JSON.parse(l) as Record<string, unknown>);
    s.controller.start();
    await until('3 reconciles', () => s.reconciler.seen.length === 3);
    await until('the line', () => checkedLines().length === 1);
    assert.equal(checkedLines()[0]?.resources, 3);
    assert.equal(checkedLines()[0]?.failed, 0);
    assert.equal(typeof checkedLines()[0]?.seconds, 'number');
    // A CR created later is not part of the start: no second line.
    await until('watch open', () => s.api.current !== undefined);
    s.api.put('d', { mode: 'fast' }, 'ns1', { generation: 1 });
    await until('4 reconciles', () => s.reconciler.seen.length === 4);
    await settle();
    assert.equal(checkedLines().length, 1);
  });

  it('counts a first reconcile that failed as checked, and says how many failed; with no CR at all it says so at sync', async (t) => {
    const s = setup(t);
    for (const name of ['a', 'b']) s.api.put(name, { mode: 'fast' }, 'ns1', { generation: 1 });
    s.reconciler.outcome = new Error('helm is down');
    s.controller.start();
    await until('the line', () => s.logged().includes('every resource checked since start'));
    const line = JSON.parse(s.logged().split('\n').find((l) => l.includes('every resource checked since start')) ?? '{}') as Record<string, unknown>;
    assert.deepEqual([line.resources, line.failed], [2, 2]);

    const empty = setup(t);
    empty.controller.start();
    await until('the line for none', () => empty.logged().includes('every resource checked since start'));
    assert.match(empty.logged(), /"resources":0,"failed":0/);
  });

  it('shows onSpec each CR whole with its spec summary as it arrives, while the cache keeps no spec; a throwing onSpec changes nothing', async (t) => {
    const seen: CustomResource[] = [];
    const s = setup(t, { onSpec: (cr) => { seen.push(cr); if (cr.metadata.name === 'b') throw new Error('boom'); } });
    s.api.put('a', { mode: 'fast' }, 'ns1', { generation: 1 });
    s.api.objects.set('ns1/b', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'b', namespace: 'ns1', uid: 'uid-b', resourceVersion: '7', generation: 1 }, spec: { replicas: 2 } });
    s.controller.start();
    await until('2 reconciles', () => s.reconciler.seen.length === 2);
    const b = seen.find((cr) => cr.metadata.name === 'b');
    assert.ok(b !== undefined);
    assert.deepEqual(b.spec, { replicas: 2 });
    assert.match(b.specSummary?.digest ?? '', /^[0-9a-f]{64}$/);
    assert.equal(s.controller.get('ns1/b')?.spec, undefined, 'the cache drops the spec');
    assert.ok(s.controller.get('ns1/b')?.specSummary !== undefined);
  });

  it('lists and watches with the entry’s label selector', async (t) => {
    const { api } = await started(t, ['a'], { labelSelector: 'team=web,tier in (frontend)' });
    await until('watch open', () => api.current !== undefined);
    assert.deepEqual(
      api.lists.map((l) => l.query.labelSelector),
      ['team=web,tier in (frontend)'],
    );
    assert.equal(api.current?.query.labelSelector, 'team=web,tier in (frontend)');
  });

  it('runs one informer per watched namespace', async (t) => {
    const { api, controller } = setup(t, { namespaces: ['b', 'a'] });
    controller.start();
    await controller.waitForSync();
    assert.equal(controller.hasSynced(), true);
    assert.deepEqual(api.lists.map((l) => l.path).sort(), ['/api/v1/namespaces/a/configmaps', '/api/v1/namespaces/b/configmaps']);
  });

  it('runs one cluster-wide informer without namespaces, and for a cluster-scoped kind', async (t) => {
    const all = setup(t);
    all.controller.start();
    await all.controller.waitForSync();
    assert.deepEqual(all.api.lists.map((l) => l.path), ['/api/v1/configmaps']);

    const widgets: ApiResource = { group: 'example.com', version: 'v1', apiVersion: 'example.com/v1', kind: 'Widget', plural: 'widgets', namespaced: false };
    const scoped = setup(t, { namespaces: ['a', 'b'], resource: widgets });
    scoped.controller.start();
    await scoped.controller.waitForSync();
    assert.deepEqual(scoped.api.lists.map((l) => l.path), ['/apis/example.com/v1/widgets']);
  });

  it('reconciles on a spec, label, annotation, finalizer or deletion change, not on a status-only update', async (t) => {
    const { api, reconciler, controller } = await started(t, ['a']);
    await until('watch open', () => api.current !== undefined);
    api.put('a', { mode: 'slow' }, 'ns1', { generation: 1 }); // same generation: a status write
    await until('cache updated', () => (controller.get('ns1/a') as { data?: { mode?: string } } | undefined)?.data?.mode === 'slow');
    await settle();
    assert.equal(reconciler.seen.length, 1, 'a status-only update is not reconciled');

    const changes: Partial<KubeObject['metadata']>[] = [
      { generation: 2 },
      { generation: 2, labels: { team: 'web' } },
      { generation: 2, labels: { team: 'web' }, annotations: { 'helm.sdk.operatorframework.io/upgrade-force': 'true' } },
      { generation: 2, labels: { team: 'web' }, annotations: { 'helm.sdk.operatorframework.io/upgrade-force': 'true' }, finalizers: ['x'] },
      {
        generation: 2,
        labels: { team: 'web' },
        annotations: { 'helm.sdk.operatorframework.io/upgrade-force': 'true' },
        finalizers: ['x'],
        deletionTimestamp: '2026-01-01T10:00:00Z',
      },
    ];
    for (const [i, metadata] of changes.entries()) {
      api.put('a', { mode: 'slow' }, 'ns1', metadata);
      await until(`reconcile after change ${i}`, () => reconciler.seen.length === i + 2);
    }
    assert.equal(reconciler.seen.at(-1)?.metadata.deletionTimestamp, '2026-01-01T10:00:00Z');
  });

  it('does not reconcile the echo of its own finalizer write, but any later change', async (t) => {
    const { api, reconciler, controller } = await started(t, ['a']);
    await until('watch open', () => api.current !== undefined);
    const before = controller.get('ns1/a')?.metadata.resourceVersion;
    // What the reconciler's finalizer PATCH returned; the watch then delivers that very version.
    api.live = false;
    const written = api.put('a', { mode: 'fast' }, 'ns1', { generation: 1, finalizers: ['chartpilot.io/uninstall'] });
    controller.noteOwnWrite(before, written);
    api.live = true;
    api.current?.emit('MODIFIED', structuredClone(written));
    await until('cache caught up', () => controller.get('ns1/a')?.metadata.resourceVersion === written.metadata.resourceVersion);
    await settle();
    assert.equal(reconciler.seen.length, 1, 'the own write is not reconciled again');
    api.put('a', { mode: 'fast' }, 'ns1', { generation: 2, finalizers: ['chartpilot.io/uninstall'] });
    await until('the next change is reconciled', () => reconciler.seen.length === 2);
  });

  it('skips the echoes of a finalizer write and a status write that both came before either echo', async (t) => {
    const { api, reconciler, controller } = await started(t, ['a']);
    await until('watch open', () => api.current !== undefined);
    const before = controller.get('ns1/a')?.metadata.resourceVersion;
    api.live = false;
    const withFinalizer = api.put('a', { mode: 'fast' }, 'ns1', { generation: 1, finalizers: ['chartpilot.io/uninstall'] });
    controller.noteOwnWrite(before, withFinalizer);
    const withStatus = api.put('a', { mode: 'fast', status: 'Deployed' }, 'ns1', { generation: 1, finalizers: ['chartpilot.io/uninstall'] });
    controller.noteOwnWrite(withFinalizer.metadata.resourceVersion, withStatus);
    api.live = true;
    api.current?.emit('MODIFIED', structuredClone(withFinalizer));
    api.current?.emit('MODIFIED', structuredClone(withStatus));
    await until('cache caught up', () => controller.get('ns1/a')?.metadata.resourceVersion === withStatus.metadata.resourceVersion);
    await settle();
    assert.equal(reconciler.seen.length, 1);
  });

  it('reconciles the echo of its own write that folds in a deletion or a spec change the cache never showed (a relist after a watch gap)', async (t) => {
    for (const change of [{ deletionTimestamp: '2026-01-01T10:00:00Z' }, { generation: 2 }, { labels: { team: 'web' } }]) {
      const { api, reconciler, controller } = await started(t, ['a']);
      await until('watch open', () => api.current !== undefined);
      const before = controller.get('ns1/a')?.metadata.resourceVersion;
      // Someone changes the CR, then our status write lands on top; the watch shows neither
      // (down meanwhile), and its relist hands over only the newest version: our write's.
      api.live = false;
      api.put('a', { mode: 'fast' }, 'ns1', { generation: 1, finalizers: [FINALIZER], ...change });
      const written = api.put('a', { mode: 'fast', status: 'Deployed' }, 'ns1', { generation: 1, finalizers: [FINALIZER], ...change });
      controller.noteOwnWrite(before, written);
      api.live = true;
      api.current?.emit('MODIFIED', structuredClone(written));
      await until(`${JSON.stringify(change)}: reconciled`, () => reconciler.seen.length === 2);
    }
  });

  it('forgets each own status write once its echo arrives: the list does not grow with every write', async (t) => {
    const { api, reconciler, controller } = await started(t, ['a']);
    await until('watch open', () => api.current !== undefined);
    for (let i = 0; i < 20; i++) {
      const before = controller.get('ns1/a')?.metadata.resourceVersion;
      // A status write (the generation stays): the reconciler tells the controller, then the watch echoes it.
      api.live = false;
      const written = api.put('a', { mode: 'fast', status: `pass ${String(i)}` }, 'ns1', { generation: 1 });
      controller.noteOwnWrite(before, written);
      api.live = true;
      api.current?.emit('MODIFIED', structuredClone(written));
      await until(`echo ${String(i)} cached`, () => controller.get('ns1/a')?.metadata.resourceVersion === written.metadata.resourceVersion);
    }
    await settle();
    assert.equal(controller.unseenOwnWrites, 0, 'every echoed write was consumed');
    assert.equal(reconciler.seen.length, 1, 'status-only echoes are not reconciled');
  });

  it('remembers at most a few own writes per CR when their echoes never come', async (t) => {
    const { api, controller } = await started(t, ['a']);
    await until('watch open', () => api.current !== undefined);
    const cached = controller.get('ns1/a');
    assert.ok(cached);
    for (let i = 0; i < 100; i++) {
      controller.noteOwnWrite(String(1000 + i), { metadata: { ...cached.metadata, resourceVersion: String(1001 + i) } });
    }
    assert.ok(controller.unseenOwnWrites <= 8, `bounded, got ${String(controller.unseenOwnWrites)}`);
  });

  it('does not reconcile a deleting CR again once its finalizer came off, whatever version the cache still shows', async (t) => {
    const { api, reconciler, controller, logged } = await started(t, ['a']);
    await until('watch open', () => api.current !== undefined);
    api.put('a', { mode: 'fast' }, 'ns1', { generation: 1, finalizers: ['helm.sdk.operatorframework.io/uninstall-release'], deletionTimestamp: '2026-01-01T10:00:00Z' });
    await until('deletion reconciled', () => reconciler.seen.length === 2);
    const cached = controller.get('ns1/a');
    assert.ok(cached);
    controller.noteOwnWrite('some-other-version', { metadata: { ...cached.metadata, finalizers: [], resourceVersion: '999' } });
    controller.enqueue('ns1/a', { respectBackoff: true });
    await settle();
    assert.equal(reconciler.seen.length, 2);
    assert.match(logged(), /"namespace":"ns1","name":"a","msg":"our finalizer is off this resource: nothing to do until its deletion arrives"/);
  });

  it('lets a CR being deleted go only once a write of ours left none of the kind’s finalizers on it', () => {
    const ANSIBLE = ['cache.example.com/finalizer'];
    const cr = (deletionTimestamp: string | undefined, finalizers: string[]) => ({ metadata: { ...(deletionTimestamp === undefined ? {} : { deletionTimestamp }), finalizers } });
    const T = '2026-01-01T10:00:00Z';
    assert.equal(releases(cr(undefined, []), FINALIZERS), false, 'not being deleted');
    assert.equal(releases(cr(T, [FINALIZER]), FINALIZERS), false, 'a status write to a chart kind’s CR being deleted');
    assert.equal(releases(cr(T, [LEGACY_FINALIZER]), FINALIZERS), false, 'operator-sdk’s old finalizer holds it too');
    assert.equal(releases(cr(T, ['other.io/keep']), FINALIZERS), true, 'only someone else’s finalizer is left');
    assert.equal(releases(cr(T, ANSIBLE), ANSIBLE), false, 'a status write to an Ansible kind’s CR being deleted (the bug: taken for a release)');
    assert.equal(releases(cr(T, [FINALIZER]), ANSIBLE), true, 'Helm’s finalizer means nothing to an Ansible kind');
    assert.equal(releases(cr(T, []), ANSIBLE), true);
    assert.equal(releases(cr(T, ['x']), []), true, 'a kind without a finalizer holds nothing');
  });

  it('acts on a deletion that came during a reconcile whose last write, to the CR being deleted, kept the kind’s finalizer (an Ansible run ending)', async (t) => {
    const F = 'cache.example.com/finalizer';
    const { api, reconciler, controller } = await started(t, ['a'], { finalizers: [F] });
    await until('watch open', () => api.current !== undefined);
    const deleting = { generation: 2, finalizers: [F], deletionTimestamp: '2026-01-01T10:00:00Z' };
    reconciler.duringNext(async () => {
      // Deleted while the run goes on: the watch tells the controller at once.
      api.put('a', { size: '2' }, 'ns1', deleting);
      await until('the deletion cached', () => controller.get('ns1/a')?.metadata.deletionTimestamp !== undefined);
      // The run ends: its outcome is written to the status of the CR as it is now.
      const from = controller.get('ns1/a')?.metadata.resourceVersion;
      api.live = false;
      const written = api.put('a', { size: '2', status: 'Successful' }, 'ns1', deleting);
      controller.noteOwnWrite(from, written);
      api.live = true;
      api.current?.emit('MODIFIED', structuredClone(written));
      await until('the status write cached', () => controller.get('ns1/a')?.metadata.resourceVersion === written.metadata.resourceVersion);
    });
    // A spec change, whose run the deletion overtakes.
    api.put('a', { size: '2' }, 'ns1', { generation: 2, finalizers: [F] });
    await until('the run of the spec change', () => reconciler.seen.length === 2);
    await until('the deletion reconciled', () => reconciler.seen.length === 3);
    assert.equal(reconciler.seen[2]?.metadata.deletionTimestamp, deleting.deletionTimestamp);
    // Its finalizer run removes the finalizer: from then on nothing is left to do.
    const cached = controller.get('ns1/a');
    assert.ok(cached);
    controller.noteOwnWrite(cached.metadata.resourceVersion, { metadata: { ...cached.metadata, finalizers: [], resourceVersion: '999' } });
    controller.enqueue('ns1/a');
    await settle();
    assert.equal(reconciler.seen.length, 3);
  });

  it('retries a failed reconcile of a CR being deleted after its Running status write kept the kind’s finalizer (a failed finalizer run)', async (t) => {
    const F = 'cache.example.com/finalizer';
    const s = await started(t, ['a'], { finalizers: [F] });
    await until('watch open', () => s.api.current !== undefined);
    const deleting = { generation: 1, finalizers: [F], deletionTimestamp: '2026-01-01T10:00:00Z' };
    s.reconciler.outcome = new ReconcileFailure('Failed', 'the finalizer role failed');
    s.reconciler.duringNext(async () => {
      const from = s.controller.get('ns1/a')?.metadata.resourceVersion;
      const written = s.api.put('a', { mode: 'fast', status: 'Running' }, 'ns1', deleting);
      s.controller.noteOwnWrite(from, written);
      await until('the status write cached', () => s.controller.get('ns1/a')?.metadata.resourceVersion === written.metadata.resourceVersion);
    });
    s.api.put('a', { mode: 'fast' }, 'ns1', deleting);
    await until('the finalizer run failed', () => s.results.includes('error'));
    const [retry] = s.clock.pendingDelays();
    assert.ok(retry !== undefined, 'a retry is scheduled');
    s.reconciler.outcome = {};
    await s.clock.advance(retry);
    await until('the finalizer run is retried', () => s.reconciler.seen.length === 3);
  });

  it('does not start a reconcile from the version its own write replaced; looks again once the cache caught up', async (t) => {
    const { api, clock, reconciler, controller } = await started(t, ['a']);
    await until('watch open', () => api.current !== undefined);
    const cached = controller.get('ns1/a');
    assert.ok(cached);
    // The finalizer was removed (the PATCH answered) but the cache has not seen it yet, when a
    // dependent's hint asks for another pass.
    controller.noteOwnWrite(cached.metadata.resourceVersion, { ...cached, metadata: { ...cached.metadata, resourceVersion: '999' } });
    controller.enqueue('ns1/a', { respectBackoff: true });
    await settle();
    assert.equal(reconciler.seen.length, 1, 'no reconcile from the replaced version');
    assert.deepEqual(clock.pendingDelays(), [50]);
    api.remove('a', 'ns1');
    await until('cache caught up', () => controller.get('ns1/a') === undefined);
    await clock.advance(50);
    await settle();
    assert.equal(reconciler.seen.length, 1, 'the resource is gone: nothing to reconcile');
  });

  it('finds a cached object’s key by uid until it is deleted, without reconciling the deletion', async (t) => {
    const { api, reconciler, controller } = await started(t, ['a']);
    await until('watch open', () => api.current !== undefined);
    assert.equal(controller.keyForUid('uid-a'), 'ns1/a');
    assert.equal(controller.keyForUid('uid-other'), undefined);
    api.remove('a', 'ns1');
    await until('uid forgotten', () => controller.keyForUid('uid-a') === undefined);
    await settle();
    assert.equal(reconciler.seen.length, 1);
  });

  it('reports each CR as present when cached and gone when deleted or no longer watched (per-CR metrics)', async (t) => {
    const { api, controller, resources } = await started(t, ['a', 'b']);
    await until('watch open', () => api.current !== undefined);
    assert.deepEqual([...resources].sort(), ['present ns1/a', 'present ns1/b']);
    api.remove('a', 'ns1');
    await until('a gone', () => resources.includes('gone ns1/a'));
    await controller.stop(0);
    assert.deepEqual(resources.filter((r) => r.startsWith('gone')).sort(), ['gone ns1/a', 'gone ns1/b']);
  });

  it('sharded: reconciles only what the ring admits, recording the run until it ends; waits, skips or lets go of the rest', async (t) => {
    const admitted: string[] = [];
    const ended: string[] = [];
    const acknowledged: string[] = [];
    let waitFor = 'b';
    const shard: ShardHooks = {
      draining: () => false,
      admit: (obj): ShardAdmission => {
        const name = obj.metadata.name;
        admitted.push(name);
        if (name === waitFor) return { kind: 'wait', retryMs: 2_000, reason: 'claimed' };
        if (name === 'c') return { kind: 'skip' };
        if (name === 'd') return { kind: 'let-go' };
        return { kind: 'act', end: () => ended.push(name) };
      },
      acknowledge: (obj) => {
        acknowledged.push(obj.metadata.name);
        return Promise.resolve();
      },
    };
    const s = setup(t, { shard });
    for (const name of ['a', 'b', 'c', 'd']) s.api.put(name, {}, 'ns1');
    s.controller.start();
    await until('a reconciled, d let go', () => s.reconciler.seen.length === 1 && acknowledged.length === 1);
    assert.deepEqual(s.reconciler.keys, ['ns1/a']);
    assert.deepEqual(ended, ['a'], 'the run is recorded as over once the reconcile ended');
    assert.deepEqual(acknowledged, ['d']);
    assert.deepEqual(admitted.sort(), ['a', 'b', 'c', 'd']);
    // b waits: asked again after the retry, and reconciled once admitted; c is never looked at again.
    waitFor = '';
    await s.clock.advance(2_000);
    await until('b reconciled', () => s.reconciler.seen.length === 2);
    assert.deepEqual(s.reconciler.keys, ['ns1/a', 'ns1/b']);
    assert.equal(admitted.filter((n) => n === 'c').length, 1);
  });

  it('requeues after the period a reconcile asks for', async (t) => {
    const s = setup(t);
    s.reconciler.outcome = { requeueAfterMs: 30_000 };
    s.api.put('a', {}, 'ns1');
    s.controller.start();
    await until('first reconcile', () => s.reconciler.seen.length === 1);
    assert.deepEqual(s.results, ['requeue_after']);
    assert.deepEqual(s.clock.pendingDelays(), [30_000]);
    await s.clock.advance(29_999);
    assert.equal(s.reconciler.seen.length, 1);
    await s.clock.advance(1);
    await until('requeued reconcile', () => s.reconciler.seen.length === 2);
  });

  it('retries a failed reconcile with growing backoff and logs why', async (t) => {
    const s = setup(t);
    s.reconciler.outcome = new ReconcileFailure('InstallError', 'helm install failed: Service "web" is invalid');
    s.api.put('a', {}, 'ns1');
    s.controller.start();
    await until('first reconcile', () => s.results.length === 1);
    assert.deepEqual(s.results, ['error']);
    assert.deepEqual(s.retries, ['ns1/a']);
    const [first] = s.clock.pendingDelays();
    assert.ok(first !== undefined && first >= 450 && first <= 550, `first retry after ~500 ms, got ${String(first)}`);
    assert.match(s.logged(), /"namespace":"ns1","name":"a","attempt":1,"err":"helm install failed: Service \\"web\\" is invalid","msg":"reconcile failed; will retry"/);

    await s.clock.advance(first);
    await until('second reconcile', () => s.results.length === 2);
    const [second] = s.clock.pendingDelays();
    assert.ok(second !== undefined && second >= 900 && second <= 1_100, `second retry after ~1 s, got ${String(second)}`);
  });

  it('lets a dependent-change hint wait out a failing key’s backoff, but not an explicit enqueue', async (t) => {
    const s = setup(t);
    s.reconciler.outcome = new Error('helm upgrade failed');
    s.api.put('a', {}, 'ns1');
    s.controller.start();
    await until('first reconcile', () => s.results.length === 1);
    s.controller.enqueue('ns1/a', { respectBackoff: true });
    await settle();
    assert.equal(s.reconciler.seen.length, 1, 'the hint does not cut the backoff short');
    s.controller.enqueue('ns1/a');
    await until('enqueued reconcile', () => s.reconciler.seen.length === 2);
  });

  it('does not retry when the resource itself is gone', async (t) => {
    const s = setup(t);
    const own = `${resourcePath(configMaps, 'ns1', 'a')}/status`;
    s.reconciler.outcome = new KubeApiError('configmaps "a" not found', { status: 404, path: own });
    s.api.put('a', {}, 'ns1');
    s.controller.start();
    await until('reconcile', () => s.results.length === 1);
    assert.deepEqual(s.results, ['success']);
    assert.deepEqual(s.retries, []);
    assert.equal(s.clock.pending, 0);
  });

  it('retries when something else is not found', async (t) => {
    const s = setup(t);
    s.reconciler.outcome = new KubeApiError('secrets "x" not found', { status: 404, path: '/api/v1/namespaces/ns1/secrets/x' });
    s.api.put('a', {}, 'ns1');
    s.controller.start();
    await until('reconcile', () => s.results.length === 1);
    assert.deepEqual(s.results, ['error']);
    assert.deepEqual(s.retries, ['ns1/a']);
  });

  it('neither counts nor retries a reconcile whose helm call was turned away because it stops', async (t) => {
    const s = setup(t);
    s.reconciler.outcome = new HelmCallsStopped('stopping');
    s.api.put('a', {}, 'ns1');
    s.controller.start();
    await until('reconcile', () => s.reconciler.seen.length === 1);
    await settle();
    assert.deepEqual(s.results, []);
    assert.deepEqual(s.retries, []);
    assert.equal(s.clock.pending, 0);
  });

  it('aborts a running reconcile’s signal once the drain time is up, and neither counts nor retries the stopped call', async (t) => {
    const s = setup(t);
    let signal: AbortSignal | undefined;
    s.reconciler.reconcile = (cr, _log, sig) => {
      s.reconciler.seen.push(cr);
      signal = sig;
      return new Promise((_resolve, reject) => {
        sig?.addEventListener('abort', () => {
          reject(new HelmCallInterrupted('helm upgrade was stopped (SIGTERM): the operator is stopping'));
        });
      });
    };
    s.api.put('a', {}, 'ns1');
    s.controller.start();
    await until('reconcile running', () => signal !== undefined);
    const stopped = s.controller.stop(1000);
    await settle();
    assert.equal(signal?.aborted, false, 'running work gets the drain time first');
    await s.clock.advance(1000);
    await stopped;
    assert.equal(signal.aborted, true);
    assert.deepEqual(s.results, []);
    assert.deepEqual(s.retries, []);
    assert.match(s.logged(), /the running helm call was stopped; the next owner of this release finishes the work/);
  });

  it('calls onStopping when it stops, and takes no work after', async (t) => {
    const order: string[] = [];
    const s = setup(t, { onStopping: () => order.push('onStopping') });
    s.api.put('a', {}, 'ns1');
    s.controller.start();
    await until('reconcile', () => s.reconciler.seen.length === 1);
    await s.controller.stop(0);
    order.push('stopped');
    s.controller.enqueue('ns1/a');
    await settle();
    assert.deepEqual(order, ['onStopping', 'stopped']);
    assert.equal(s.reconciler.seen.length, 1);
  });

  it('enqueues every cached object on enqueueAll, and nothing for a key not in the cache', async (t) => {
    const { reconciler, controller, results } = await started(t, ['a', 'b']);
    controller.enqueue('ns1/ghost');
    await settle();
    assert.equal(reconciler.seen.length, 2, 'an unknown key reconciles nothing');
    assert.equal(results.length, 2);
    controller.enqueueAll();
    await until('all reconciled again', () => reconciler.seen.length === 4);
    assert.deepEqual(reconciler.keys.slice(2).sort(), ['ns1/a', 'ns1/b']);
  });

  it('stops its watches and reconciles nothing more once stopped', async (t) => {
    const { api, reconciler, controller } = await started(t, ['a']);
    await until('watch open', () => api.current !== undefined);
    await controller.stop(0);
    assert.ok(api.watches.every((w) => w.ended));
    controller.enqueue('ns1/a');
    await settle();
    assert.equal(reconciler.seen.length, 1);
  });

  it('reports the first error its informers hit', async (t) => {
    const { api, controller } = setup(t);
    api.listFailures.push(forbidden());
    controller.start();
    await until('list failed', () => controller.lastError() !== undefined);
    assert.equal((controller.lastError() as KubeApiError).reason, 'Forbidden');
    assert.equal(controller.hasSynced(), false);
  });
});
