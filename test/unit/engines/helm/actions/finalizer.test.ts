import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { addFinalizer, removeFinalizer } from '../../../../../src/engines/helm/actions/finalizer.js';
import { FINALIZER, LEGACY_FINALIZER } from '../../../../../src/engines/helm/names.js';
import { actionContext, webApp } from './context-fixture.js';

describe('addFinalizer', () => {
  it('appends ours to the finalizers already there and continues with the object the API returned', async () => {
    const { ctx, writer, events } = actionContext({ cr: webApp({ finalizers: ['example.com/other'], resourceVersion: '7' }) });
    const result = await addFinalizer(ctx);
    assert.deepEqual(result, { done: false });
    assert.deepEqual(writer.finalizerLists, [['example.com/other', FINALIZER]]);
    // The next observation must see the finalizer (and the new resourceVersion for the next CAS).
    assert.deepEqual(ctx.cr.metadata.finalizers, ['example.com/other', FINALIZER]);
    assert.equal(ctx.cr.metadata.resourceVersion, '8');
    assert.deepEqual(writer.statuses, [], 'no status is written');
    assert.deepEqual(events.events, []);
  });

  it('adds it to a resource that has no finalizers at all', async () => {
    const { ctx, writer } = actionContext({ cr: webApp({ finalizers: undefined }) });
    await addFinalizer(ctx);
    assert.deepEqual(writer.finalizerLists, [[FINALIZER]]);
  });
});

describe('removeFinalizer', () => {
  it('removes ours and operator-sdk’s legacy one, keeps the others, forgets the release and ends', async () => {
    const { ctx, writer, keeper } = actionContext({
      cr: webApp({ deletionTimestamp: '2026-01-01T09:59:00Z', finalizers: ['a.example.com/first', FINALIZER, LEGACY_FINALIZER, 'z.example.com/last'] }),
    });
    const result = await removeFinalizer(ctx);
    assert.deepEqual(result, { done: true, outcome: {} });
    assert.deepEqual(writer.finalizerLists, [['a.example.com/first', 'z.example.com/last']]);
    assert.deepEqual(keeper.forgotten, ['ns1/demo']);
  });

  it('lets the resource go without a keeper', async () => {
    const { ctx, writer, keeper } = actionContext({ keeper: false, cr: webApp({ finalizers: [LEGACY_FINALIZER] }) });
    assert.deepEqual(await removeFinalizer(ctx), { done: true, outcome: {} });
    assert.deepEqual(writer.finalizerLists, [[]]);
    assert.deepEqual(keeper.forgotten, [], 'the keeper that is not wired is not told');
  });

  it('names the release by the resource’s namespace, "default" when it has none', async () => {
    const { ctx, keeper } = actionContext({ cr: webApp({ namespace: undefined }) });
    await removeFinalizer(ctx);
    assert.deepEqual(keeper.forgotten, ['default/demo']);
  });
});
