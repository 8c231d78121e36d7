import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { plan, type PlanInput } from '../../../../src/engines/helm/plan.js';
import { planReason } from '../../../../src/engines/helm/plan-reason.js';
import { input, rev, START } from './plan-fixture.js';

const NOW = START;

/** The plan for `i` and the sentence the reconciler logs with it. */
function why(i: PlanInput): { kind: string; why: string } {
  const next = plan(i);
  return { kind: next.kind, why: planReason(i, next) };
}

describe('planReason: the why logged with each plan and shown beside its helm call', () => {
  it('an upgrade names the revision it replaces, never a fingerprint (a hash of the values: the status shows this)', () => {
    const r = why(input({ revisions: [rev(3, 'deployed', { fingerprint: 'fp-old' })] }));
    assert.equal(r.kind, 'upgrade');
    assert.equal(r.why, 'the spec, chart or settings changed since revision 3');
  });

  it('an upgrade over a record with no fingerprint says so, not a changed spec', () => {
    const r = why(input({ revisions: [rev(1, 'deployed', { fingerprint: undefined })] }));
    assert.equal(r.kind, 'upgrade');
    assert.match(r.why, /carries no fingerprint/);
  });

  it('each way a lock is freed gives its own reason, with the numbers it was decided on', () => {
    const older = why(input({ revisions: [rev(1, 'deployed'), rev(2, 'pending-upgrade', { resourceVersion: '999', createdAt: new Date(NOW - 1000).toISOString() })] }));
    assert.equal(older.kind, 'unlock');
    assert.match(older.why, /revision 2 \(pending-upgrade\) was last written before this process started \(resourceVersion 999 ≤ 1000\)/);

    const stale = why(input({ revisions: [rev(1, 'deployed'), rev(2, 'pending-upgrade', { resourceVersion: '1001', createdAt: new Date(NOW - 400_000).toISOString() })] }));
    assert.equal(stale.kind, 'unlock');
    assert.match(stale.why, /older than any helm call may run/);

    const stopped = why(input({ stoppedCalls: new Set(['abc-1']), revisions: [rev(1, 'deployed'), rev(2, 'pending-upgrade', { call: 'abc-1', resourceVersion: '1001', createdAt: new Date(NOW - 1000).toISOString() })] }));
    assert.equal(stopped.kind, 'unlock');
    assert.match(stopped.why, /helm call an operator stopped on its way out/);
  });

  it('a young lock is waited on, and the reason says which revision holds it', () => {
    const r = why(input({ revisions: [rev(1, 'deployed'), rev(2, 'pending-upgrade', { resourceVersion: '1001', createdAt: new Date(NOW - 1000).toISOString() })] }));
    assert.equal(r.kind, 'wait-pending');
    assert.match(r.why, /revision 2 is locked \(pending-upgrade\)/);
  });

  it('install tells a first install from one after an uninstall; none names the revision that holds the spec', () => {
    assert.equal(why(input()).why, 'no release of this name yet');
    assert.match(why(input({ revisions: [rev(4, 'uninstalled')] })).why, /revision 4 was uninstalled/);
    const none = why(input({ revisions: [rev(5, 'deployed')], statusRevision: 5 }));
    assert.equal(none.kind, 'none');
    assert.match(none.why, /revision 5 holds what the resource asks for/);
  });
});
