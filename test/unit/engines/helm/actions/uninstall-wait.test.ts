import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkObjectsGone, UNINSTALL_WAIT_POLL_MS, waitObjectsGone } from '../../../../../src/engines/helm/actions/uninstall-wait.js';
import type { ObjectRef } from '../../../../../src/core/model.js';
import { actionContext, conditionSummary, webApp, writtenCondition, settle } from './context-fixture.js';

const deployment: ObjectRef = { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'ns1', name: 'web' };
const service: ObjectRef = { apiVersion: 'v1', kind: 'Service', namespace: 'ns1', name: 'web' };

function refs(n: number): ObjectRef[] {
  return Array.from({ length: n }, (_, i) => ({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns1', name: `cfg-${i + 1}` }));
}

describe('checkObjectsGone', () => {
  it('asks the keeper which objects of the inventory remain and records them for the plan', async () => {
    const inventory = [deployment, service];
    const { ctx, keeper, writer } = actionContext({
      cr: webApp({ deletionTimestamp: '2026-01-01T09:59:00Z' }, { deployedRelease: { name: 'demo', inventory } }),
      progress: { taken: ['uninstall', 'check-objects-gone'] },
    });
    keeper.left = [service];
    const result = await checkObjectsGone(ctx);
    assert.deepEqual(result, { done: false });
    assert.deepEqual(keeper.asked, [inventory]);
    assert.deepEqual(ctx.progress.remaining, [service]);
    assert.deepEqual(ctx.progress.taken, ['uninstall', 'check-objects-gone'], 'the rest of the progress is kept');
    assert.deepEqual(writer.statuses, []);
  });

  it('records that nothing remains when nothing can be looked up', async () => {
    const { ctx } = actionContext({ keeper: false, cr: webApp({}, { deployedRelease: { name: 'demo', inventory: [deployment] } }) });
    await checkObjectsGone(ctx);
    assert.deepEqual(ctx.progress.remaining, []);
  });

  it('asks about no objects when the status has no inventory', async () => {
    const { ctx, keeper } = actionContext();
    await checkObjectsGone(ctx);
    assert.deepEqual(keeper.asked, [[]]);
  });
});

describe('waitObjectsGone', () => {
  it('names the remaining objects in the Deployed condition and looks again after the poll interval', async () => {
    const { ctx, writer } = actionContext();
    const result = await settle(ctx, waitObjectsGone([deployment, service]));
    assert.equal(UNINSTALL_WAIT_POLL_MS, 2_000);
    assert.deepEqual(result, { done: true, outcome: { requeueAfterMs: 2_000 } });
    assert.deepEqual(conditionSummary(writtenCondition(writer, 'Deployed')), {
      status: 'False',
      reason: 'UninstallSuccessful',
      message: 'release uninstalled; waiting for Deployment web, Service web to be deleted (uninstall-wait)',
    });
  });

  it('names at most three objects and counts the rest', async () => {
    const { ctx, writer } = actionContext();
    await settle(ctx, waitObjectsGone(refs(5)));
    assert.equal(
      writtenCondition(writer, 'Deployed').message,
      'release uninstalled; waiting for ConfigMap cfg-1, ConfigMap cfg-2, ConfigMap cfg-3 and 2 more to be deleted (uninstall-wait)',
    );
  });

  it('names exactly three objects without a count', async () => {
    const { ctx, writer } = actionContext();
    await settle(ctx, waitObjectsGone(refs(3)));
    assert.equal(writtenCondition(writer, 'Deployed').message, 'release uninstalled; waiting for ConfigMap cfg-1, ConfigMap cfg-2, ConfigMap cfg-3 to be deleted (uninstall-wait)');
  });
});
