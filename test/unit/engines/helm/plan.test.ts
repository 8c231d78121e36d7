import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NO_PROGRESS, plan, rollbackTarget, writtenBy, type PlanInput, type Progress } from '../../../../src/engines/helm/plan.js';
import { input, rev, START, STARTED_AT_REVISION } from './plan-fixture.js';


describe('plan', () => {
  it('adds the finalizer before the first install', () => {
    assert.deepEqual(plan(input({ hasFinalizer: false })), { kind: 'add-finalizer' });
  });

  it('installs when there is no release', () => {
    assert.deepEqual(plan(input()), { kind: 'install' });
  });

  it('installs again when the only history is an uninstalled release', () => {
    assert.deepEqual(plan(input({ revisions: [rev(1, 'uninstalled')] })), { kind: 'install' });
  });

  it('does nothing when the deployed fingerprint matches, and asks for status details only when missing', () => {
    assert.deepEqual(plan(input({ revisions: [rev(1, 'superseded'), rev(2, 'deployed')], statusRevision: 2 })), {
      kind: 'none',
      refreshStatus: false,
    });
    assert.deepEqual(plan(input({ revisions: [rev(2, 'deployed')], statusRevision: undefined })), { kind: 'none', refreshStatus: true });
  });

  it('upgrades when the fingerprint changed or is unknown', () => {
    assert.deepEqual(plan(input({ revisions: [rev(1, 'deployed', { fingerprint: 'fp-old' })] })), { kind: 'upgrade' });
    assert.deepEqual(plan(input({ revisions: [rev(1, 'deployed', { fingerprint: undefined })] })), { kind: 'upgrade' });
  });

  it('upgrades again when the latest upgrade failed but an earlier revision is good', () => {
    assert.deepEqual(plan(input({ revisions: [rev(1, 'deployed', { fingerprint: 'fp-old' }), rev(2, 'failed')] })), { kind: 'upgrade' });
  });

  it('clears a failed first install before installing again', () => {
    assert.deepEqual(plan(input({ revisions: [rev(1, 'failed')] })), { kind: 'clear-failed-release' });
  });

  describe('a pending lock, judged on the API server\'s clocks alone', () => {
    it('unlocks one the start read already saw (its own version too), however young its timestamp', () => {
      // etcd's order, not the time: a predecessor's lock may be stamped in the very second this process started.
      for (const rv of ['1000', '999', '42', '1']) {
        const pending = rev(2, 'pending-upgrade', { createdAt: new Date(START + 5_000).toISOString(), resourceVersion: rv });
        assert.deepEqual(plan(input({ revisions: [rev(1, 'deployed'), pending] })), { kind: 'unlock', revision: pending }, rv);
      }
    });

    it('waits on one written since, which may be a live helm call of this process', () => {
      for (const rv of ['1001', '99999999999999999999']) {
        const pending = rev(2, 'pending-upgrade', { createdAt: new Date(START - 5_000).toISOString(), resourceVersion: rv });
        assert.equal(plan(input({ revisions: [rev(1, 'deployed'), pending] })).kind, 'wait-pending', rv);
      }
    });

    it('fails closed when the order cannot be told: no resourceVersion, one that is not a number, or no start revision', () => {
      const at = (resourceVersion: string | undefined, startedAtRevision: string | undefined): string =>
        plan(input({ revisions: [rev(1, 'pending-install', { createdAt: new Date(START - 5_000).toISOString(), resourceVersion })], startedAtRevision })).kind;
      assert.equal(at(undefined, STARTED_AT_REVISION), 'wait-pending');
      assert.equal(at('12ab', STARTED_AT_REVISION), 'wait-pending');
      assert.equal(at('0999', STARTED_AT_REVISION), 'wait-pending', 'leading zeros are not a resourceVersion');
      assert.equal(at('999', undefined), 'wait-pending', 'the server could not be read at start');
      assert.equal(at('999', 'rv-7'), 'wait-pending');
    });

    it('compares resourceVersions as the numbers they are, past 2^53 too', () => {
      assert.equal(writtenBy('999', '1000'), true, 'not as strings');
      assert.equal(writtenBy('1000', '999'), false);
      assert.equal(writtenBy('1001', '1000'), false);
      assert.equal(writtenBy('9007199254740993', '9007199254740994'), true);
      assert.equal(writtenBy('9007199254740994', '9007199254740993'), false);
    });
  });

  it('waits on a fresh pending revision that may belong to a live operation, then unlocks it once stale', () => {
    const pending = rev(1, 'pending-install', { createdAt: new Date(START + 5_000).toISOString() });
    const waiting = plan(input({ revisions: [pending], serverNow: START + 10_000 }));
    assert.ok(waiting.kind === 'wait-pending');
    assert.ok(waiting.retryAfterMs > 0 && waiting.retryAfterMs <= 300_000 + 30_000);
    assert.deepEqual(plan(input({ revisions: [pending], serverNow: START + 5_000 + 330_000 })), { kind: 'unlock', revision: pending });
  });

  describe('a lock whose helm call an operator stopped on its way out', () => {
    // Fresh: by the time rule alone it would wait out the helm timeout.
    const fresh = { createdAt: new Date(START + 5_000).toISOString() };
    const stopped = new Set(['0123456789ab-7']);

    it('is unlocked at once: pending-install or pending-upgrade, created by that very call', () => {
      const install = rev(1, 'pending-install', { ...fresh, call: '0123456789ab-7' });
      assert.deepEqual(plan(input({ revisions: [install], stoppedCalls: stopped })), { kind: 'unlock', revision: install });
      const upgrade = rev(2, 'pending-upgrade', { ...fresh, call: '0123456789ab-7' });
      assert.deepEqual(plan(input({ revisions: [rev(1, 'deployed', { call: '0123456789ab-3' }), upgrade], stoppedCalls: stopped })), { kind: 'unlock', revision: upgrade });
    });

    it('waits when the call is not known stopped (a live operation, of this or another process)', () => {
      const pending = rev(1, 'pending-install', { ...fresh, call: '0123456789ab-8' });
      assert.equal(plan(input({ revisions: [pending], stoppedCalls: stopped })).kind, 'wait-pending');
      assert.equal(plan(input({ revisions: [rev(1, 'pending-install', fresh)], stoppedCalls: stopped })).kind, 'wait-pending', 'no call label');
    });

    it('waits when the label was copied: an older revision carries the same call (someone else’s later upgrade)', () => {
      const failed = rev(1, 'failed', { call: '0123456789ab-7' });
      const theirs = rev(2, 'pending-upgrade', { ...fresh, call: '0123456789ab-7' });
      assert.equal(plan(input({ revisions: [failed, theirs], stoppedCalls: stopped })).kind, 'wait-pending');
    });

    it('waits on statuses our install and upgrade never write: an uninstall or rollback of someone else marking it', () => {
      for (const status of ['uninstalling', 'pending-rollback']) {
        const pending = rev(1, status, { ...fresh, call: '0123456789ab-7' });
        assert.equal(plan(input({ revisions: [pending], stoppedCalls: stopped })).kind, 'wait-pending', status);
      }
    });
  });

  it('unlocks a pending revision of unknown age', () => {
    const pending = rev(1, 'pending-install', { createdAt: undefined });
    assert.equal(plan(input({ revisions: [pending] })).kind, 'unlock');
  });

  it('refuses a release that belongs to another kind', () => {
    const result = plan(input({ revisions: [rev(1, 'deployed', { ownerKind: 'Other.example.com' })] }));
    assert.ok(result.kind === 'conflict');
    assert.match(result.message, /belongs to Other\.example\.com/);
  });

  it('reports a problem before doing anything else', () => {
    assert.deepEqual(plan(input({ problem: 'bad spec', hasFinalizer: false })), { kind: 'irreconcilable', message: 'bad spec' });
  });

  it('does no Helm work while paused', () => {
    assert.deepEqual(plan(input({ paused: true, revisions: [rev(1, 'deployed', { fingerprint: 'x' })] })), { kind: 'paused' });
  });

  describe("a kind's ServiceAccount missing from the namespace", () => {
    it('runs nothing for the resource, whatever its release needs, while its problem, pause or conflict still come first', () => {
      for (const revisions of [[], [rev(1, 'deployed')], [rev(1, 'deployed', { fingerprint: 'old' })], [rev(1, 'pending-upgrade', { createdAt: undefined })]]) {
        assert.deepEqual(plan(input({ serviceAccountMissing: true, revisions })), { kind: 'no-service-account' });
      }
      assert.deepEqual(plan(input({ serviceAccountMissing: true, hasFinalizer: false })), { kind: 'no-service-account' }, 'not even the finalizer');
      assert.equal(plan(input({ serviceAccountMissing: true, problem: 'bad spec' })).kind, 'irreconcilable');
      assert.equal(plan(input({ serviceAccountMissing: true, paused: true })).kind, 'paused');
      assert.equal(plan(input({ serviceAccountMissing: true, revisions: [rev(1, 'deployed', { ownerKind: 'Other.x' })] })).kind, 'conflict');
    });

    it('lets a deleted resource go without uninstalling, since nothing may run as the missing identity', () => {
      assert.deepEqual(plan(input({ deleting: true, serviceAccountMissing: true, revisions: [rev(1, 'deployed')] })), { kind: 'skip-uninstall' });
      assert.deepEqual(plan(input({ deleting: true, serviceAccountMissing: true, revisions: [] })), { kind: 'remove-finalizer' });
      assert.deepEqual(plan(input({ deleting: true, serviceAccountMissing: true, hasFinalizer: false, revisions: [rev(1, 'deployed')] })), { kind: 'released' });
    });

    it('still reports a deploy that failed in this reconcile (the ServiceAccount went meanwhile)', () => {
      const progress: Progress = { ...NO_PROGRESS, failedDeploy: 'upgrade' };
      assert.deepEqual(plan(input({ serviceAccountMissing: true, progress, revisions: [rev(1, 'deployed')] })), { kind: 'fail', action: 'upgrade' });
    });
  });

  describe('deletion', () => {
    it('uninstalls a live release, then removes the finalizer', () => {
      assert.deepEqual(plan(input({ deleting: true, revisions: [rev(1, 'deployed')] })), { kind: 'uninstall' });
      assert.deepEqual(plan(input({ deleting: true, revisions: [] })), { kind: 'remove-finalizer' });
      assert.deepEqual(plan(input({ deleting: true, revisions: [rev(1, 'uninstalled')] })), { kind: 'remove-finalizer' });
    });

    it('never uninstalls another kind’s release', () => {
      assert.deepEqual(plan(input({ deleting: true, revisions: [rev(1, 'deployed', { ownerKind: 'Other.x' })] })), { kind: 'remove-finalizer' });
    });

    it('ignores a deleting object without our finalizer', () => {
      assert.deepEqual(plan(input({ deleting: true, hasFinalizer: false, revisions: [rev(1, 'deployed')] })), { kind: 'released' });
    });

    it('uninstalls even a paused or irreconcilable resource', () => {
      assert.deepEqual(plan(input({ deleting: true, paused: true, problem: 'x', revisions: [rev(1, 'failed')] })), { kind: 'uninstall' });
    });
  });

  describe('uninstall-wait', () => {
    const web = { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'ns1', name: 'web' };
    const deleting = (extra: Partial<PlanInput> = {}): PlanInput =>
      input({ deleting: true, uninstallWait: true, inventory: [web], revisions: [rev(1, 'uninstalled')], ...extra });

    it('looks up the release’s objects once the release is uninstalled', () => {
      assert.deepEqual(plan(deleting()), { kind: 'check-objects-gone' });
    });

    it('waits while some are left, and lets the CR go once none are', () => {
      const waiting = (remaining: Progress['remaining']): Progress => ({ ...NO_PROGRESS, taken: ['check-objects-gone'], remaining });
      assert.deepEqual(plan(deleting({ progress: waiting([web]) })), { kind: 'wait-objects-gone', remaining: [web] });
      assert.deepEqual(plan(deleting({ progress: waiting([]) })), { kind: 'remove-finalizer' });
    });

    it('uninstalls first, and does not wait without the annotation, an inventory or a way to look', () => {
      assert.deepEqual(plan(deleting({ revisions: [rev(1, 'deployed')] })), { kind: 'uninstall' });
      assert.deepEqual(plan(deleting({ uninstallWait: false })), { kind: 'remove-finalizer' });
      assert.deepEqual(plan(deleting({ inventory: [] })), { kind: 'remove-finalizer' });
      assert.deepEqual(plan(deleting({ canCheckObjects: false })), { kind: 'remove-finalizer' });
    });
  });

  describe('remediation after a failed deploy in this reconcile', () => {
    const failed = (failedDeploy: 'install' | 'upgrade', extra: Partial<Progress> = {}): Progress => ({ ...NO_PROGRESS, failedDeploy, ...extra });

    it('rolls a failed upgrade back to the newest good revision', () => {
      const revisions = [rev(1, 'superseded'), rev(2, 'superseded'), rev(3, 'failed'), rev(4, 'failed')];
      assert.deepEqual(plan(input({ revisions, progress: failed('upgrade') })), { kind: 'rollback', revision: 2 });
    });

    it('does not roll back when the upgrade failed before Helm recorded anything', () => {
      assert.deepEqual(plan(input({ revisions: [rev(1, 'deployed')], progress: failed('upgrade') })), { kind: 'fail', action: 'upgrade' });
    });

    it('does not roll back when there is no good revision to return to', () => {
      assert.deepEqual(plan(input({ revisions: [rev(1, 'failed'), rev(2, 'failed')], progress: failed('upgrade') })), { kind: 'fail', action: 'upgrade' });
    });

    it('removes a failed first install, but never a release that once deployed', () => {
      assert.deepEqual(plan(input({ revisions: [rev(1, 'failed')], progress: failed('install') })), { kind: 'remove-failed-install' });
      assert.deepEqual(plan(input({ revisions: [], progress: failed('install') })), { kind: 'fail', action: 'install' });
      assert.deepEqual(
        plan(input({ revisions: [rev(1, 'uninstalled'), rev(2, 'superseded'), rev(3, 'failed')], progress: failed('install') })),
        { kind: 'fail', action: 'install' },
      );
    });

    it('reports after remediating once, and after remediation itself failed', () => {
      const revisions = [rev(1, 'deployed'), rev(2, 'failed')];
      assert.deepEqual(plan(input({ revisions, progress: failed('upgrade', { taken: ['rollback'] }) })), { kind: 'fail', action: 'upgrade' });
      assert.deepEqual(plan(input({ revisions, progress: failed('upgrade', { remediationFailed: true }) })), { kind: 'fail', action: 'upgrade' });
      assert.deepEqual(plan(input({ revisions: [rev(1, 'failed')], progress: failed('install', { taken: ['remove-failed-install'] }) })), {
        kind: 'fail',
        action: 'install',
      });
    });

    it('remediates even when the resource is being deleted meanwhile', () => {
      assert.deepEqual(plan(input({ deleting: true, revisions: [rev(1, 'failed')], progress: failed('install') })), { kind: 'remove-failed-install' });
    });
  });

  describe('the end of the loop', () => {
    it('never plans a non-terminal action twice in one reconcile', () => {
      const again = (kind: Progress['taken'][number], extra: Partial<PlanInput>): void => {
        const result = plan(input({ ...extra, progress: { ...NO_PROGRESS, taken: [kind] } }));
        assert.equal(result.kind, 'stuck', `${kind} planned twice`);
        assert.match(result.message, new RegExp(kind));
      };
      again('add-finalizer', { hasFinalizer: false });
      again('uninstall', { deleting: true, revisions: [rev(1, 'deployed')] });
      again('clear-failed-release', { revisions: [rev(1, 'failed')] });
      again('unlock', { revisions: [rev(1, 'pending-install', { createdAt: undefined })] });
    });

    it('lets a healthy multi-step sequence through: finalizer, unlock, clear, install', () => {
      const taken: Progress['taken'] = ['add-finalizer', 'unlock', 'clear-failed-release'];
      assert.deepEqual(plan(input({ progress: { ...NO_PROGRESS, taken } })), { kind: 'install' });
    });
  });

  it('rollbackTarget picks the newest good revision below the failed one', () => {
    const revisions = [rev(1, 'superseded'), rev(2, 'deployed'), rev(3, 'failed'), rev(5, 'superseded')];
    assert.equal(rollbackTarget(revisions, 3), 2);
    assert.equal(rollbackTarget(revisions, 2), 1);
    assert.equal(rollbackTarget(revisions, 1), undefined);
  });

  it('says the chart is unavailable instead of installing or upgrading, but still uninstalls a deleted CR', () => {
    const deployed = [rev(1, 'deployed', { fingerprint: 'fp-old' })];
    assert.deepEqual(plan(input({ chartUnavailable: 'registry r is unreachable', hasFinalizer: false })), { kind: 'chart-unavailable', message: 'registry r is unreachable' });
    assert.deepEqual(plan(input({ chartUnavailable: 'no version matches', revisions: deployed })), { kind: 'chart-unavailable', message: 'no version matches' });
    assert.deepEqual(plan(input({ chartUnavailable: 'x', deleting: true, revisions: deployed })), { kind: 'uninstall' });
    assert.deepEqual(plan(input({ chartUnavailable: 'x', paused: true })), { kind: 'paused' });
  });
});

describe('plan: records chartpilot did not write for this CR', () => {
  const forged = rev(3, 'deployed', { secretName: 'sh.helm.release.v1.demo.v3' });
  const refuses = (i: Partial<PlanInput>): void => {
    const result = plan(input({ foreignRevisions: [forged], ...i }));
    assert.equal(result.kind, 'foreign-records', JSON.stringify(i));
  };
  const progressAfter = (failedDeploy: 'install' | 'upgrade'): Progress => ({ ...NO_PROGRESS, failedDeploy });

  it('refuses every path that would act on the release: upgrade, drift repair, unlock, clearing, remediation, uninstall, uninstall-wait', () => {
    // upgrade (a spec change) and repair (nothing to do: the keep pass repairs)
    refuses({ revisions: [rev(2, 'superseded'), forged], desiredFingerprint: 'fp-new' });
    refuses({ revisions: [rev(2, 'deployed'), forged] });
    // unlock of a stale pending lock
    refuses({ revisions: [rev(1, 'deployed'), rev(3, 'pending-upgrade', { createdAt: new Date(START - 3_600_000).toISOString() })] });
    // nor frees a predecessor's lock
    refuses({ revisions: [rev(1, 'deployed'), rev(3, 'pending-upgrade', { createdAt: new Date(START).toISOString(), resourceVersion: '7' })] });
    // clearing a release that never deployed
    refuses({ revisions: [rev(1, 'failed')] });
    // rollback after a failed upgrade, removal after a failed install
    refuses({ revisions: [rev(1, 'deployed'), rev(2, 'failed')], progress: progressAfter('upgrade') });
    refuses({ revisions: [rev(1, 'failed')], progress: progressAfter('install') });
    // uninstall on deletion (the finalizer stays), and uninstall-wait
    refuses({ deleting: true, revisions: [rev(1, 'deployed'), forged] });
    refuses({ deleting: true, uninstallWait: true, inventory: [{ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'kube-system', name: 'x' }] });
    // even while paused, with a bad spec or before the finalizer: it says why nothing happens
    refuses({ paused: true });
    refuses({ problem: 'bad spec' });
    refuses({ hasFinalizer: false });
    // a release of another kind by its (forgeable) label is refused the same way
    refuses({ revisions: [rev(1, 'deployed', { ownerKind: 'Other.x' })] });
  });

  it('lets a deleted CR without our finalizer go: nothing is done to the release', () => {
    assert.deepEqual(plan(input({ deleting: true, hasFinalizer: false, foreignRevisions: [forged] })), { kind: 'released' });
  });

  it('names the records and both ways out; while deleting, how to let the CR go', () => {
    const result = plan(input({ foreignRevisions: [rev(4, 'deployed', { secretName: 'sh.helm.release.v1.demo.v4' }), forged] }));
    assert.ok(result.kind === 'foreign-records');
    assert.match(result.message, /^Helm release records sh\.helm\.release\.v1\.demo\.v3, sh\.helm\.release\.v1\.demo\.v4 were not written by chartpilot for this resource/);
    assert.match(result.message, /delete them if they are forgeries, or run `chartpilot adopt`/);
    const deleting = plan(input({ deleting: true, foreignRevisions: [forged] }));
    assert.ok(deleting.kind === 'foreign-records');
    assert.match(deleting.message, /keeps its finalizer until then \(remove the finalizer by hand/);
  });

  it('says the same whatever the forged records hold: only their names reach the message', () => {
    const a = plan(input({ foreignRevisions: [rev(3, 'deployed', { fingerprint: 'guess-1', ownerKind: 'X' })] }));
    const b = plan(input({ foreignRevisions: [rev(3, 'failed', { fingerprint: 'guess-2', createdAt: undefined })] }));
    assert.deepEqual(a, b);
  });
});
