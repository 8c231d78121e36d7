import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ReconcileFailure } from '../../../../../src/core/outcome.js';
import { HelmError } from '../../../../../src/helm/types.js';
import { FINALIZER } from '../../../../../src/engines/helm/names.js';
import { clearFailedRelease, skipUninstall, uninstallDeleted } from '../../../../../src/engines/helm/actions/uninstall.js';
import { actionContext, conditionSummary, HELM_TIMEOUT_MS, reconcilingWrites, writtenCondition, settle } from './context-fixture.js';

describe('uninstallDeleted', () => {
  it('uninstalls the release with hooks, announces it and continues', async () => {
    const { ctx, helm, events, writer } = actionContext();
    const result = await settle(ctx, uninstallDeleted(ctx));
    assert.deepEqual(result, { done: false });
    assert.deepEqual(helm.uninstalls, [{ release: 'demo', namespace: 'ns1', timeoutMs: HELM_TIMEOUT_MS, disableHooks: false, description: undefined, impersonate: undefined, signal: undefined, owner: { uid: 'uid-1', confinement: { namespace: 'ns1', allowClusterScoped: false, allowCrossNamespace: false } } }]);
    assert.deepEqual(events.events, [{ type: 'Normal', reason: 'UninstallSuccessful', message: 'uninstalled release demo (resource deleted)' }]);
    assert.deepEqual(reconcilingWrites(writer), ["True/Uninstalling/Running 'uninstall' of release ns1/demo (timeout 5m)"], 'then the status is left to the actions that follow');
  });

  it('passes the uninstall annotations on to helm', async () => {
    const { ctx, helm } = actionContext({ options: { uninstallDisableHooks: true, uninstallDescription: 'removed by the platform team' } });
    await settle(ctx, uninstallDeleted(ctx));
    assert.equal(helm.uninstalls[0]?.disableHooks, true);
    assert.equal(helm.uninstalls[0].description, 'removed by the platform team');
  });

  it('uninstalls with hooks and no description when the annotations are invalid', async () => {
    const { ctx, helm } = actionContext({ options: null });
    await settle(ctx, uninstallDeleted(ctx));
    assert.equal(helm.uninstalls[0]?.disableHooks, false);
    assert.equal(helm.uninstalls[0].description, undefined);
  });

  it('announces nothing when there was no release to uninstall', async () => {
    const { ctx, helm, events } = actionContext();
    helm.uninstallResult = 'not-found';
    assert.deepEqual(await settle(ctx, uninstallDeleted(ctx)), { done: false });
    assert.equal(helm.uninstalls.length, 1);
    assert.deepEqual(events.events, []);
  });

  it('records a failure as UninstallError (event and ReleaseFailed) and fails the reconcile', async () => {
    const { ctx, helm, events, writer } = actionContext();
    const cause = new Error('uninstall: Release not loaded: timed out waiting for the condition');
    helm.uninstallResult = cause;
    const expected = 'helm uninstall failed: uninstall: Release not loaded: timed out waiting for the condition';
    await assert.rejects(settle(ctx, uninstallDeleted(ctx)), (err: unknown) => {
      assert.ok(err instanceof ReconcileFailure);
      assert.equal(err.reason, 'UninstallError');
      assert.equal(err.message, expected);
      assert.equal(err.cause, cause);
      return true;
    });
    assert.deepEqual(events.events, [{ type: 'Warning', reason: 'UninstallError', message: expected }]);
    assert.deepEqual(conditionSummary(writtenCondition(writer, 'ReleaseFailed')), { status: 'True', reason: 'UninstallError', message: expected });
  });
});

describe('uninstall as a tenant', () => {
  it("uninstalls as the namespace's ServiceAccount, and says whose rights are missing when RBAC refuses", async () => {
    const { ctx, helm, writer } = actionContext({ target: { serviceAccount: 'tenant' } });
    helm.uninstallResult = new HelmError('forbidden', 'system:serviceaccount:ns1:tenant may not list secrets in namespace ns1', 'uninstall');
    await assert.rejects(settle(ctx, uninstallDeleted(ctx)), ReconcileFailure);
    assert.equal(helm.uninstalls[0]?.impersonate, 'system:serviceaccount:ns1:tenant');
    assert.match(writtenCondition(writer, 'ReleaseFailed').message, /^helm uninstall failed: system:serviceaccount:ns1:tenant may not list secrets in namespace ns1; this release runs as ServiceAccount ns1\/tenant: grant it/);
  });

  it('lets the resource go without helm when the ServiceAccount is gone, saying what stays', async () => {
    const { ctx, helm, events, writer, keeper } = actionContext({ target: { serviceAccount: 'tenant' } });
    assert.deepEqual(await skipUninstall(ctx), { done: true, outcome: {} });
    assert.deepEqual(helm.uninstalls, [], 'no helm uninstall as the operator: the release record could be forged');
    assert.deepEqual(writer.finalizerLists, [[]], `${FINALIZER} removed`);
    assert.deepEqual(keeper.forgotten, ['ns1/demo']);
    const [event] = events.events;
    assert.equal(event?.reason, 'UninstallSkipped');
    assert.match(event.message, /^ServiceAccount ns1\/tenant no longer exists, so release demo cannot be uninstalled as it/);
  });
});

describe('clearFailedRelease', () => {
  it('uninstalls a release that never deployed and says why', async () => {
    const { ctx, helm, events } = actionContext();
    assert.deepEqual(await settle(ctx, clearFailedRelease(ctx)), { done: false });
    assert.equal(helm.uninstalls.length, 1);
    assert.deepEqual(events.events, [
      { type: 'Normal', reason: 'UninstallSuccessful', message: 'uninstalled release demo (failed release cleared before installing again)' },
    ]);
  });
});
