import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { handOverNote, parseHandOverNote, StoppedCalls } from '../../../src/helm/stopped-calls.js';
import type { Release } from '../../../src/core/model.js';
import { HelmCallInterrupted, HelmCallsStopped, type ReleaseActions, type UpgradeInstallRequest } from '../../../src/engines/helm/ports.js';

const REQ: UpgradeInstallRequest = {
  release: 'web',
  namespace: 'team-a',
  chart: '/charts/webapp',
  values: {},
  timeoutMs: 60_000,
  releaseLabels: { 'chartpilot.io/fingerprint': 'fp' },
};

/** Records each upgradeInstall's labels and answers with `next` (a rejection when it is an Error). */
function recording(next: () => Error | undefined): { actions: ReleaseActions; labels: Readonly<Record<string, string>>[] } {
  const labels: Readonly<Record<string, string>>[] = [];
  const actions: ReleaseActions = {
    upgradeInstall: (req) => {
      labels.push(req.releaseLabels ?? {});
      const err = next();
      return err === undefined ? Promise.resolve({ revision: 1 } as Release) : Promise.reject(err);
    },
    uninstall: () => Promise.resolve('uninstalled'),
    rollback: () => Promise.resolve(),
    status: () => Promise.resolve(undefined),
  };
  return { actions, labels };
}

describe('StoppedCalls', () => {
  it('labels every install and upgrade with a call id of its own, keeping the other labels', async () => {
    const calls = new StoppedCalls('0123456789ab');
    const { actions, labels } = recording(() => undefined);
    const tracked = calls.track(actions);
    await tracked.upgradeInstall(REQ);
    await tracked.upgradeInstall(REQ);
    assert.deepEqual(labels, [
      { 'chartpilot.io/fingerprint': 'fp', 'chartpilot.io/helm-call': '0123456789ab-1' },
      { 'chartpilot.io/fingerprint': 'fp', 'chartpilot.io/helm-call': '0123456789ab-2' },
    ]);
    assert.deepEqual(calls.list(), [], 'nothing stopped');
  });

  it('remembers a call its signal stopped, not one that failed or never started', async () => {
    const calls = new StoppedCalls('0123456789ab');
    const outcomes = [new HelmCallInterrupted('stopped'), new Error('helm failed'), new HelmCallsStopped('not started')];
    const { actions } = recording(() => outcomes.shift());
    const tracked = calls.track(actions);
    await assert.rejects(tracked.upgradeInstall(REQ), HelmCallInterrupted);
    await assert.rejects(tracked.upgradeInstall(REQ), /helm failed/);
    await assert.rejects(tracked.upgradeInstall(REQ), HelmCallsStopped);
    assert.deepEqual(calls.list(), ['0123456789ab-1']);
    assert.equal(calls.has('0123456789ab-1'), true);
    assert.equal(calls.has('0123456789ab-2'), false);
  });

  it('adopts the calls of a hand-over note, ignoring anything that is not a call id, and keeps the newest 200', () => {
    const calls = new StoppedCalls('0123456789ab');
    calls.adopt(parseHandOverNote(handOverNote(['aaaaaaaaaaaa-1', 'bbbbbbbbbbbb-2'])));
    calls.adopt(parseHandOverNote('cccccccccccc-3,not a call,../x,dddddddddddd-'));
    assert.deepEqual(calls.list(), ['aaaaaaaaaaaa-1', 'bbbbbbbbbbbb-2', 'cccccccccccc-3']);
    assert.deepEqual(parseHandOverNote(undefined), []);
    assert.deepEqual(parseHandOverNote(''), []);
    calls.adopt(Array.from({ length: 300 }, (_, i) => `eeeeeeeeeeee-${String(i)}`));
    assert.equal(calls.list().length, 200);
    assert.equal(calls.list().at(-1), 'eeeeeeeeeeee-299');
    assert.equal(calls.has('aaaaaaaaaaaa-1'), false, 'the oldest went first');
  });

  it('refuses an instance that would not make a valid label value', () => {
    assert.throws(() => new StoppedCalls('Not-Hex!'), RangeError);
    assert.match(new StoppedCalls().instance, /^[0-9a-f]{12}$/);
  });
});
