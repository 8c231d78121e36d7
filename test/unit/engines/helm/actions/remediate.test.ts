import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HelmError } from '../../../../../src/helm/types.js';
import { failureMessage, type FailedDeploy } from '../../../../../src/engines/helm/actions/context.js';
import { ReconcileFailure } from '../../../../../src/core/outcome.js';
import { fail, remediationFailed, removeFailedInstall, rollback } from '../../../../../src/engines/helm/actions/remediate.js';
import { actionContext, conditionSummary, HELM_TIMEOUT_MS, reconcilingWrites, writtenCondition, type FixtureOptions, settle } from './context-fixture.js';

const upgradeCause = new HelmError('failed', 'Deployment.apps "web" is invalid', 'upgrade');
const installCause = new HelmError('failed', 'Service "web" is invalid', 'upgrade');

function failedUpgrade(): FailedDeploy {
  return { action: 'upgrade', cause: upgradeCause, error: 'helm upgrade failed: Deployment.apps "web" is invalid', remediation: [] };
}

function failedInstall(): FailedDeploy {
  return { action: 'install', cause: installCause, error: 'helm install failed: Service "web" is invalid', remediation: [] };
}

/** What the context's failure now tells, or '' without one. */
function told(ctx: ReturnType<typeof actionContext>['ctx']): string {
  return ctx.failure === undefined ? '' : failureMessage(ctx.failure);
}

function afterFailed(action: 'install' | 'upgrade', o: FixtureOptions = {}): ReturnType<typeof actionContext> {
  return actionContext({ failure: action === 'install' ? failedInstall() : failedUpgrade(), progress: { failedDeploy: action }, ...o });
}

describe('the failure record', () => {
  it('is never changed: each remediation step makes a new one, and the earlier still tells only what it knew', async () => {
    const { ctx } = afterFailed('upgrade');
    const before = ctx.failure;
    await rollback(ctx, 3);
    assert.notEqual(ctx.failure, before);
    assert.deepEqual(before?.remediation, []);
    assert.deepEqual(ctx.failure?.remediation, ['rolled back to revision 3']);
    remediationFailed(ctx, new Error('secrets is forbidden'));
    assert.equal(told(ctx), 'helm upgrade failed: Deployment.apps "web" is invalid; rolled back to revision 3; cleaning up after it also failed: secrets is forbidden');
  });
});

describe('rollback', () => {
  it('rolls back without replacing objects, notes it on the failure, announces it and continues', async () => {
    const { ctx, helm, events, writer } = afterFailed('upgrade');
    const result = await rollback(ctx, 3);
    assert.deepEqual(result, { done: false });
    assert.deepEqual(helm.rollbacks, [{ release: 'demo', namespace: 'ns1', revision: 3, force: false, timeoutMs: HELM_TIMEOUT_MS, impersonate: undefined, signal: undefined, owner: { uid: 'uid-1', confinement: { namespace: 'ns1', allowClusterScoped: false, allowCrossNamespace: false } } }]);
    assert.equal(told(ctx), 'helm upgrade failed: Deployment.apps "web" is invalid; rolled back to revision 3');
    assert.deepEqual(events.events, [{ type: 'Normal', reason: 'RollbackSuccessful', message: 'rolled back release demo to revision 3 after a failed upgrade' }]);
    assert.equal(ctx.progress.remediationFailed, false);
    assert.deepEqual(reconcilingWrites(writer), ["True/RollingBack/Running 'rollback' of release ns1/demo (timeout 5m)"], 'only the announcement: fail writes the status, after remediation');
  });

  it("remediates as the namespace's ServiceAccount when the kind names one", async () => {
    const upgrade = afterFailed('upgrade', { target: { serviceAccount: 'tenant' } });
    await rollback(upgrade.ctx, 3);
    const install = afterFailed('install', { target: { serviceAccount: 'tenant' } });
    await removeFailedInstall(install.ctx);
    assert.deepEqual([upgrade.helm.rollbacks[0]?.impersonate, install.helm.uninstalls[0]?.impersonate], ['system:serviceaccount:ns1:tenant', 'system:serviceaccount:ns1:tenant']);
  });

  it('replaces objects only with rollback-force', async () => {
    const { ctx, helm } = afterFailed('upgrade', { options: { rollbackForce: true } });
    await rollback(ctx, 3);
    assert.equal(helm.rollbacks[0]?.force, true);
  });

  it('notes a failed rollback on the failure and stops remediating, announcing nothing', async () => {
    const { ctx, helm, events } = afterFailed('upgrade');
    helm.rollbackError = new HelmError('failed', 'rollback refused', 'rollback');
    assert.deepEqual(await rollback(ctx, 3), { done: false });
    assert.equal(told(ctx), 'helm upgrade failed: Deployment.apps "web" is invalid; cleaning up after it also failed: rollback refused');
    assert.equal(ctx.progress.remediationFailed, true);
    assert.equal(ctx.progress.failedDeploy, 'upgrade', 'the rest of the progress is kept');
    assert.deepEqual(events.events, []);
  });

  it('refuses to run without a failed deploy', async () => {
    const { ctx, helm } = actionContext();
    await assert.rejects(rollback(ctx, 3), /unreachable/);
    assert.deepEqual(helm.rollbacks, []);
  });
});

describe('removeFailedInstall', () => {
  it('uninstalls the half-made release and notes it on the failure', async () => {
    const { ctx, helm, events } = afterFailed('install');
    assert.deepEqual(await removeFailedInstall(ctx), { done: false });
    assert.deepEqual(helm.uninstalls, [{ release: 'demo', namespace: 'ns1', timeoutMs: HELM_TIMEOUT_MS, impersonate: undefined, signal: undefined, owner: { uid: 'uid-1', confinement: { namespace: 'ns1', allowClusterScoped: false, allowCrossNamespace: false } } }]);
    assert.equal(told(ctx), 'helm install failed: Service "web" is invalid; the partial release was uninstalled');
    assert.deepEqual(events.events, []);
  });

  it('notes a failed clean-up on the failure and stops remediating', async () => {
    const { ctx, helm } = afterFailed('install');
    helm.uninstallResult = new Error('context deadline exceeded');
    assert.deepEqual(await removeFailedInstall(ctx), { done: false });
    assert.equal(told(ctx), 'helm install failed: Service "web" is invalid; cleaning up after it also failed: context deadline exceeded');
    assert.equal(ctx.progress.remediationFailed, true);
  });
});

describe('remediationFailed', () => {
  it('appends why to the failure message and marks the remediation failed', () => {
    const { ctx } = afterFailed('upgrade', { progress: { failedDeploy: 'upgrade', taken: ['unlock'] } });
    remediationFailed(ctx, 'secrets is forbidden');
    assert.equal(told(ctx), 'helm upgrade failed: Deployment.apps "web" is invalid; cleaning up after it also failed: secrets is forbidden');
    assert.deepEqual(ctx.progress, { taken: ['unlock'], failedDeploy: 'upgrade', remediationFailed: true, remaining: undefined });
  });
});

describe('fail', () => {
  for (const [action, reason, cause] of [
    ['install', 'InstallError', installCause],
    ['upgrade', 'UpgradeError', upgradeCause],
  ] as const) {
    it(`records a failed ${action} as ${reason} (event and ReleaseFailed) and throws ReconcileFailure`, async () => {
      const { ctx, events, writer } = afterFailed(action);
      const message = told(ctx);
      await assert.rejects(settle(ctx, fail(ctx, action)), (err: unknown) => {
        assert.ok(err instanceof ReconcileFailure);
        assert.equal(err.reason, reason);
        assert.equal(err.message, message);
        assert.equal(err.cause, cause);
        return true;
      });
      assert.deepEqual(events.events, [{ type: 'Warning', reason, message }]);
      assert.deepEqual(conditionSummary(writtenCondition(writer, 'ReleaseFailed')), { status: 'True', reason, message });
    });
  }

  it('reports the remediation that followed', async () => {
    const { ctx, events, writer } = afterFailed('upgrade');
    await rollback(ctx, 2);
    await assert.rejects(settle(ctx, fail(ctx, 'upgrade')), /is invalid; rolled back to revision 2$/);
    assert.equal(events.events.at(-1)?.message, 'helm upgrade failed: Deployment.apps "web" is invalid; rolled back to revision 2');
    assert.equal(writtenCondition(writer, 'ReleaseFailed').message, 'helm upgrade failed: Deployment.apps "web" is invalid; rolled back to revision 2');
  });

  it('clips a very long message in the event and condition, but not in the error', async () => {
    const long = `helm upgrade failed: ${'x'.repeat(10_000)}`;
    const { ctx, events, writer } = actionContext({ failure: { action: 'upgrade', cause: upgradeCause, error: long, remediation: [] } });
    await assert.rejects(settle(ctx, fail(ctx, 'upgrade')), (err: unknown) => err instanceof Error && err.message === long);
    const event = events.events[0]?.message ?? '';
    assert.equal(event, `${long.slice(0, 7_986)}… (truncated)`);
    assert.equal(writtenCondition(writer, 'ReleaseFailed').message, event);
  });
});
