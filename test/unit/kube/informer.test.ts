import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Informer, type InformerOptions } from '../../../src/kube/informer.js';
import type { KubeObject } from '../../../src/kube/types.js';
import { FakeClock, settle } from '../fakes/clock.js';
import { FakeApi, configMaps, forbidden, gone, unavailable } from './fake-api.js';

type Ev = ['add', string] | ['update', string, string, string] | ['delete', string];

function setup(over: Partial<InformerOptions<KubeObject>> = {}, prepare?: (api: FakeApi) => void) {
  const api = new FakeApi();
  prepare?.(api);
  const clock = new FakeClock();
  const events: Ev[] = [];
  const informer = new Informer<KubeObject>({
    client: api,
    resource: configMaps,
    namespace: 'default',
    clock,
    random: () => 0.5,
    silenceTimeoutMs: 60_000,
    backoff: { initialMs: 1000, maxMs: 16_000 },
    handlers: {
      onAdd: (o) => events.push(['add', o.metadata.name]),
      onUpdate: (o, n) => events.push(['update', n.metadata.name, o.metadata.resourceVersion ?? '', n.metadata.resourceVersion ?? '']),
      onDelete: (o) => events.push(['delete', o.metadata.name]),
    },
    ...over,
  });
  return { api, clock, events, informer };
}

async function started(s: ReturnType<typeof setup>): Promise<void> {
  s.informer.start();
  await s.informer.waitForSync();
  await settle();
}

describe('Informer', () => {
  it('lists in pages, fills the cache, fires onAdd, then watches from the list resourceVersion', async () => {
    const s = setup({ pageSize: 2, labelSelector: 'app=x' }, (api) => {
      for (const n of ['a', 'b', 'c', 'd', 'e']) api.put(n);
    });
    assert.equal(s.informer.hasSynced(), false);
    await started(s);
    assert.equal(s.informer.hasSynced(), true);
    assert.deepEqual(s.events, ['a', 'b', 'c', 'd', 'e'].map((n) => ['add', n]));
    assert.equal(s.api.lists.length, 3, 'three pages of two');
    assert.deepEqual(s.api.lists.map((l) => l.query.continue), [undefined, '2', '4']);
    assert.ok(s.api.lists.every((l) => l.query.limit === 2 && l.query.labelSelector === 'app=x'));
    assert.equal(s.api.lists[0]?.path, '/api/v1/namespaces/default/configmaps');
    const w = s.api.current;
    assert.ok(w);
    assert.equal(w.query.resourceVersion, '105');
    assert.equal(w.query.allowWatchBookmarks, true);
    assert.equal(w.query.labelSelector, 'app=x');
    const t = w.query.timeoutSeconds as number;
    assert.ok(t >= 300 && t < 600, `timeoutSeconds ${t} in [300, 600)`);
    // list items come without apiVersion/kind; the cache stamps them
    assert.equal(s.informer.get('default', 'c')?.kind, 'ConfigMap');
    assert.equal(s.informer.get('default', 'c')?.apiVersion, 'v1');
    assert.equal(s.informer.list().length, 5);
    await s.informer.stop();
  });

  it('watch events update the cache; onUpdate only when resourceVersion changed', async () => {
    const s = setup({}, (api) => api.put('a', { k: '1' }));
    await started(s);
    s.events.length = 0;
    s.api.put('b');
    s.api.put('a', { k: '2' });
    const a = s.informer.get('default', 'a');
    assert.deepEqual(a?.data, { k: '2' });
    // same resourceVersion again (e.g. a replayed event): no onUpdate
    s.api.current?.emit('MODIFIED', structuredClone(s.api.objects.get('default/a')));
    s.api.remove('b');
    assert.equal(s.informer.get('default', 'b'), undefined);
    assert.deepEqual(s.events, [['add', 'b'], ['update', 'a', '101', '103'], ['delete', 'b']]);
    await s.informer.stop();
  });

  it('bookmarks advance the resourceVersion without touching handlers', async () => {
    const s = setup({}, (api) => api.put('a'));
    await started(s);
    s.events.length = 0;
    s.api.current?.emit('BOOKMARK', { kind: 'ConfigMap', apiVersion: 'v1', metadata: { resourceVersion: '500' } });
    assert.equal(s.informer.lastResourceVersion, '500');
    assert.deepEqual(s.events, []);
    assert.equal(s.informer.list().length, 1);
    await s.informer.stop();
  });

  it('a watch that ends normally is resumed from the last resourceVersion, without a relist', async () => {
    const s = setup({}, (api) => api.put('a'));
    await started(s);
    s.api.put('b');
    s.api.current?.emit('BOOKMARK', { metadata: { resourceVersion: '300' } });
    await s.clock.advance(2_000); // watch lived a while
    s.api.current?.close();
    await settle();
    assert.equal(s.api.watches.length, 2);
    assert.equal(s.api.current?.query.resourceVersion, '300');
    assert.equal(s.api.lists.length, 1, 'no relist');
    assert.equal(s.informer.lastError, undefined);
    await s.informer.stop();
  });

  it('410 in a watch ERROR event → relist with synthetic add/update/delete for what changed while away', async () => {
    const s = setup({}, (api) => {
      api.put('keep');
      api.put('change', { v: '1' });
      api.put('gone');
      api.put('recreated');
    });
    await started(s);
    s.events.length = 0;
    // Changes nobody sees on the watch (the informer was disconnected).
    s.api.live = false;
    s.api.put('change', { v: '2' });
    s.api.remove('gone');
    s.api.put('new');
    s.api.remove('recreated');
    s.api.put('recreated', {}, 'default', { uid: 'uid-recreated-2' });
    s.api.live = true;
    await s.clock.advance(5_000);
    s.api.current?.emit('ERROR', { kind: 'Status', status: 'Failure', code: 410, reason: 'Expired', message: 'too old resource version' });
    await settle();
    assert.equal(s.api.lists.length, 2, 'relisted');
    assert.deepEqual(
      [...s.events].sort(),
      [['add', 'new'], ['add', 'recreated'], ['delete', 'gone'], ['delete', 'recreated'], ['update', 'change', '102', '105']].sort(),
    );
    assert.equal(s.informer.get('default', 'gone'), undefined);
    assert.deepEqual(s.informer.get('default', 'change')?.data, { v: '2' });
    assert.equal(s.api.current?.query.resourceVersion, String(s.api.rv), 'watch restarts from the new list');
    assert.equal(s.informer.lastError, undefined);
    await s.informer.stop();
  });

  it('410 as the watch request status → relist too', async () => {
    const s = setup({}, (api) => api.put('a'));
    await started(s);
    s.api.live = false;
    s.api.remove('a');
    s.api.live = true;
    s.api.watchFailures.push(gone());
    await s.clock.advance(5_000);
    s.api.current?.close(); // normal end → resume → the resume fails with 410
    await settle();
    assert.equal(s.api.lists.length, 2);
    assert.deepEqual(s.events.at(-1), ['delete', 'a']);
    await s.informer.stop();
  });

  it('410 straight after a relist backs off instead of spinning', async () => {
    const s = setup({}, (api) => api.put('a'));
    await started(s);
    s.api.watchFailures.push(gone(), gone());
    await s.clock.advance(5_000);
    s.api.current?.emit('ERROR', { kind: 'Status', code: 410, reason: 'Expired' });
    await settle();
    // first 410: immediate relist; its watch fails with 410 again → backoff, not another relist
    assert.equal(s.api.lists.length, 2);
    assert.equal(s.api.watches.length, 2);
    assert.ok(s.informer.lastError instanceof Error);
    await s.clock.advance(1000);
    assert.equal(s.api.lists.length, 3, 'relists after the backoff');
    await s.clock.advance(2000);
    assert.equal(s.api.lists.length, 4, 'and backs off further while it keeps happening');
    assert.ok(s.api.current, 'the watch is open again');
    await s.informer.stop();
  });

  it('an expired continue token while paging restarts the list from the first page', async () => {
    const s = setup({ pageSize: 1 }, (api) => {
      api.put('a');
      api.put('b');
      api.listFailures.push(undefined, gone()); // first page fine, second page 410
    });
    s.informer.start();
    await settle();
    assert.equal(s.informer.hasSynced(), false);
    assert.deepEqual(s.events, [], 'a partial list fires nothing');
    await s.clock.runNext();
    assert.equal(s.informer.hasSynced(), true);
    assert.deepEqual(s.api.lists.map((l) => l.query.continue), [undefined, '1', undefined, '1']);
    assert.deepEqual(s.events, [['add', 'a'], ['add', 'b']]);
    await s.informer.stop();
  });

  it('watch errors reconnect with capped exponential backoff from the same resourceVersion', async () => {
    const s = setup({}, (api) => api.put('a'));
    await started(s);
    const rv = s.api.current?.query.resourceVersion;
    s.api.watchFailures.push(unavailable(), unavailable(), unavailable(), unavailable(), unavailable(), unavailable());
    s.api.current?.close(unavailable());
    await settle();
    const delays: number[] = [];
    for (let i = 0; i < 6; i++) {
      assert.ok(s.informer.lastError instanceof Error, 'error surfaced');
      const [d] = s.clock.pendingDelays().filter((x) => x <= 16_000);
      assert.ok(d !== undefined);
      delays.push(d);
      await s.clock.advance(d);
    }
    assert.deepEqual(delays, [1000, 2000, 4000, 8000, 16_000, 16_000]);
    assert.equal(s.api.watches.length, 7);
    await s.clock.advance(16_000);
    assert.equal(s.api.watches.length, 8);
    assert.ok(s.api.current, 'the eighth watch is open');
    assert.ok(s.api.watches.every((w) => w.query.resourceVersion === rv));
    assert.equal(s.api.lists.length, 1, 'errors other than 410 do not relist');
    // The watch now works: the next event clears lastError.
    s.api.put('b');
    assert.equal(s.informer.lastError, undefined);
    await s.informer.stop();
  });

  it('a watch that closes at once without events counts as a failure (no hot loop)', async () => {
    const s = setup({}, (api) => api.put('a'));
    await started(s);
    s.api.current?.close();
    await settle();
    assert.equal(s.api.watches.length, 1, 'no immediate reconnect');
    await s.clock.advance(1000);
    assert.equal(s.api.watches.length, 2);
    await s.informer.stop();
  });

  it('the watchdog restarts a watch that went silent', async () => {
    const s = setup({}, (api) => api.put('a'));
    await started(s);
    await s.clock.advance(59_000);
    s.api.current?.emit('BOOKMARK', { metadata: { resourceVersion: '400' } }); // resets the watchdog
    await s.clock.advance(59_000);
    assert.equal(s.api.watches.length, 1);
    await s.clock.advance(1_000);
    assert.equal(s.api.watches[0]?.aborted, true, 'silent watch aborted');
    assert.equal(s.api.watches.length, 2, 'and restarted at once');
    assert.equal(s.api.current?.query.resourceVersion, '400');
    assert.equal(s.api.lists.length, 1);
    await s.informer.stop();
  });

  it('a throwing handler is logged and never stops the informer', async () => {
    const logged: unknown[] = [];
    const log = { child: () => log, error: (o: unknown) => logged.push(o), warn: () => undefined, info: () => undefined, debug: () => undefined };
    const seen: string[] = [];
    const s = setup(
      {
        log: log as unknown as InformerOptions<KubeObject>['log'],
        handlers: {
          onAdd: (o) => {
            seen.push(o.metadata.name);
            if (o.metadata.name === 'bad') throw new Error('handler bug');
          },
        },
      },
      (api) => {
        api.put('bad');
        api.put('good');
      },
    );
    await started(s);
    s.api.put('later');
    assert.deepEqual(seen, ['bad', 'good', 'later']);
    assert.equal(logged.length, 1);
    assert.equal(s.informer.list().length, 3, 'the object is cached even though its handler threw');
    await s.informer.stop();
  });

  it('a failing LIST (e.g. Forbidden) is surfaced in lastError and retried with backoff', async () => {
    const s = setup({}, (api) => {
      api.put('a');
      api.listFailures.push(forbidden(), forbidden());
    });
    s.informer.start();
    await settle();
    assert.equal(s.informer.hasSynced(), false);
    assert.equal((s.informer.lastError as { reason?: string }).reason, 'Forbidden');
    await s.clock.advance(1000);
    assert.equal(s.api.lists.length, 2);
    await s.clock.advance(2000);
    assert.equal(s.informer.hasSynced(), true);
    assert.equal(s.informer.lastError, undefined);
    assert.deepEqual(s.events, [['add', 'a']]);
    await s.informer.stop();
  });

  it('metadataOnly asks for PartialObjectMetadata and caches metadata only', async () => {
    const s = setup({ metadataOnly: true }, (api) => api.put('a', { secret: 'x' }, 'default', { managedFields: [{ manager: 'kubectl' }] }));
    await started(s);
    assert.match(s.api.lists[0]?.accept ?? '', /^application\/json;as=PartialObjectMetadataList;g=meta\.k8s\.io;v=v1,application\/json$/);
    assert.match(s.api.current?.accept ?? '', /^application\/json;as=PartialObjectMetadata;g=meta\.k8s\.io;v=v1,application\/json$/);
    const a = s.informer.get('default', 'a');
    assert.ok(a);
    assert.deepEqual(Object.keys(a).sort(), ['apiVersion', 'kind', 'metadata']);
    assert.equal(a.kind, 'ConfigMap');
    assert.equal(a.metadata.managedFields, undefined, 'managedFields dropped');
    s.api.put('b', { secret: 'y' });
    assert.equal(s.informer.get('default', 'b')?.data, undefined);
    await s.informer.stop();
  });

  it('pageBudget sizes each LIST page by the last page’s objects', async () => {
    const s = setup(
      { pageSize: 4, pageBudget: { bytes: 3000, first: 1, sizeOf: (o) => Number((o as KubeObject & { data?: Record<string, string> }).data?.['size'] ?? 0) } },
      (api) => {
        for (const [n, size] of [['a', 1000], ['b', 1000], ['c', 1000], ['d', 1000], ['e', 100], ['f', 100], ['g', 100], ['h', 100]] as const) api.put(n, { size: String(size) });
      },
    );
    await started(s);
    // 1 first; then 3000 / 1000 = 3; then 3000 / 1000 = 3 again; then 3000 / 100, capped at pageSize.
    assert.deepEqual(s.api.lists.map((l) => l.query.limit), [1, 3, 3, 4]);
    assert.equal(s.informer.list().length, 8);
    await s.informer.stop();
  });

  it('transform shrinks every object from list and watch before the cache keeps it', async () => {
    const seen: KubeObject[] = [];
    const s = setup(
      {
        transform: (o) => {
          const { data, ...rest } = o as KubeObject & { data?: Record<string, string> };
          return { ...rest, size: JSON.stringify(data ?? {}).length };
        },
        handlers: { onAdd: (o) => seen.push(o), onUpdate: (_o, n) => seen.push(n) },
      },
      (api) => api.put('a', { big: 'x'.repeat(1000) }),
    );
    await started(s);
    s.api.put('b', { big: 'y'.repeat(10) });
    s.api.put('a', { big: 'z' });
    for (const name of ['a', 'b']) {
      const o = s.informer.get('default', name) as KubeObject & { data?: unknown; size?: number };
      assert.equal(o.data, undefined, `${name} is cached without data`);
      assert.equal(o.kind, 'ConfigMap');
    }
    assert.deepEqual(seen.map((o) => [o.metadata.name, (o as KubeObject & { size?: number }).size]), [['a', 1010], ['b', 20], ['a', 11]]);
    await s.informer.stop();
  });

  it('stop() ends the watch, rejects pending waitForSync, and is final', async () => {
    const s = setup({}, (api) => api.listFailures.push(unavailable()));
    s.informer.start();
    const waiting = s.informer.waitForSync();
    await settle();
    await s.informer.stop();
    await assert.rejects(waiting, /stopped/);
    await assert.rejects(s.informer.waitForSync(), /stopped/);
    assert.equal(s.clock.pending, 0, 'no timers left behind');

    const t = setup({}, (api) => api.put('a'));
    await started(t);
    await t.informer.stop();
    assert.equal(t.api.watches[0]?.aborted, true);
    assert.equal(t.clock.pending, 0);
    t.api.put('b');
    assert.equal(t.informer.list().length, 1);
  });

  it('waitForSync honours an abort signal', async () => {
    const s = setup({}, (api) => api.listFailures.push(unavailable()));
    s.informer.start();
    const ac = new AbortController();
    const waiting = s.informer.waitForSync(ac.signal);
    ac.abort(new Error('gave up'));
    await assert.rejects(waiting, /gave up/);
    await s.informer.stop();
  });

  it('cluster-scoped resources ignore the namespace', async () => {
    const ns = { ...configMaps, kind: 'Namespace', plural: 'namespaces', namespaced: false };
    const s = setup({ resource: ns, namespace: 'default' });
    await started(s);
    assert.equal(s.api.lists[0]?.path, '/api/v1/namespaces');
    await s.informer.stop();
  });
});
