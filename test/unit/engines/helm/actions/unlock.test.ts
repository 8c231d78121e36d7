import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { unlock, waitPending } from '../../../../../src/engines/helm/actions/unlock.js';
import { actionContext, storedRevision } from './context-fixture.js';

describe('unlock', () => {
  it('deletes the pending revision’s record, says so in a ReleaseUnlocked warning and continues', async () => {
    const { ctx, releases, events, writer, logged } = actionContext();
    const pending = storedRevision(4, 'pending-upgrade');
    const result = await unlock(ctx, pending);
    assert.deepEqual(result, { done: false });
    assert.deepEqual(releases.deleted, [{ namespace: 'ns1', revision: pending, impersonate: undefined }]);
    assert.deepEqual(events.events, [
      {
        type: 'Warning',
        reason: 'ReleaseUnlocked',
        message: 'revision 4 was left pending-upgrade by an interrupted operation; its lock was removed so the release can proceed',
      },
    ]);
    assert.deepEqual(writer.statuses, []);
    assert.match(logged(), /removed stale pending revision/);
  });

  it("deletes the record as the namespace's ServiceAccount when the kind names one", async () => {
    const { ctx, releases } = actionContext({ target: { serviceAccount: 'tenant' } });
    await unlock(ctx, storedRevision(4, 'pending-upgrade'));
    assert.equal(releases.deleted[0]?.impersonate, 'system:serviceaccount:ns1:tenant');
  });

  it('announces nothing when the record cannot be deleted', async () => {
    const { ctx, releases, events } = actionContext();
    releases.deleteError = new Error('secrets "sh.helm.release.v1.demo.v4" is forbidden');
    await assert.rejects(unlock(ctx, storedRevision(4, 'pending-install')), /is forbidden/);
    assert.deepEqual(events.events, []);
  });
});

describe('waitPending', () => {
  it('touches nothing and ends the reconcile, to look again when the lock would be stale', () => {
    const { ctx, releases, events, writer } = actionContext();
    const result = waitPending(ctx, storedRevision(4, 'pending-upgrade'), 12_345);
    assert.deepEqual(result, { done: true, outcome: { requeueAfterMs: 12_345 } });
    assert.deepEqual(releases.deleted, []);
    assert.deepEqual(events.events, []);
    assert.deepEqual(writer.statuses, []);
  });
});
