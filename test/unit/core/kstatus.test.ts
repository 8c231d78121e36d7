/**
 * kstatus's Reconciling and Stalled as chartpilot derives them (src/core/kstatus.ts), and as a
 * chart kind's status carries them through a life: announced before helm runs, counted failures
 * that turn Stalled, cleared by a success; and the merge patch that takes them off the CR.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { statusMergePatch } from '../../../src/core/merge-patch.js';
import { countFailure, durationText, kstatusVerdict, readFailures, runningMessage } from '../../../src/core/kstatus.js';
import type { Condition, CrStatus, Readiness, Release } from '../../../src/core/model.js';
import { nextStatus, type Outcome } from '../../../src/engines/helm/status.js';
import type { StatusVerdict } from '../../../src/core/summary.js';

const NOW = '2026-12-02T10:00:00Z';
const release: Release = { name: 'web', namespace: 'team-a', revision: 1, status: 'deployed', chartName: 'webapp', chartVersion: '0.1.0', appVersion: '1.0', manifest: '', notes: '', description: 'Install complete' };
const ready: Readiness = { ready: true, failed: false, reason: 'AllResourcesReady', message: 'all 1 resource is ready' };
const rolling: Readiness = { ready: false, failed: false, reason: 'DeploymentNotAvailable', message: 'Deployment web: 0/2 replicas available' };
const deadline: Readiness = { ready: false, failed: true, reason: 'ProgressDeadlineExceeded', message: 'Deployment web: progress deadline exceeded' };
const deployed = (readiness: Readiness): Outcome => ({ kind: 'deployed', action: 'install', release, kept: { inventory: [], repaired: [], readiness } });
const failed = (inputs: string): Outcome => ({ kind: 'failed', reason: 'InstallError', message: 'helm install failed: boom', inputs });

function kstatus(status: CrStatus | undefined): Record<string, string> {
  const pick = (type: string): string => {
    const c: Condition | undefined = status?.conditions?.find((x) => x.type === type);
    return c === undefined ? '-' : `${c.status} ${c.reason}`;
  };
  return { reconciling: pick('Reconciling'), stalled: pick('Stalled') };
}

function run(outcomes: readonly Outcome[], stallAfter = 3): CrStatus | undefined {
  let status: CrStatus | undefined;
  for (const o of outcomes) status = nextStatus(status, o, 2, NOW, { stallAfter });
  return status;
}

describe('kstatus conditions of a chart kind', () => {
  it('says Reconciling before helm runs, keeping what the status observed', () => {
    const installed = run([deployed(ready)]);
    const acting = nextStatus(installed, { kind: 'acting', reason: 'Upgrading', message: runningMessage('upgrade', 'release team-a/web', 300_000) }, 3, NOW);
    assert.deepEqual(kstatus(acting), { reconciling: 'True Upgrading', stalled: '-' });
    assert.equal(acting.conditions?.find((c) => c.type === 'Reconciling')?.message, "Running 'upgrade' of release team-a/web (timeout 5m)");
    assert.equal(acting.observedGeneration, 2, 'generation 3 is not observed until the upgrade tells how it went');
    assert.equal(acting.conditions.find((c) => c.type === 'Reconciling')?.observedGeneration, 3);
    assert.deepEqual(acting.deployedRelease, installed?.deployedRelease);
    assert.deepEqual(kstatus(nextStatus(acting, deployed(ready), 3, NOW)), { reconciling: '-', stalled: '-' }, 'done: Ready speaks alone');
  });

  it('keeps Reconciling while objects become ready, and Stalled for one that failed', () => {
    assert.deepEqual(kstatus(run([deployed(rolling)])), { reconciling: 'True DeploymentNotAvailable', stalled: '-' });
    assert.deepEqual(kstatus(run([deployed(deadline)])), { reconciling: '-', stalled: 'True ProgressDeadlineExceeded' });
  });

  it('counts failures with the same inputs, Stalled once the budget is spent, and a success clears both', () => {
    const twice = run([failed('fp1'), failed('fp1')]);
    assert.deepEqual(kstatus(twice), { reconciling: 'True RetryingAfterFailure', stalled: '-' });
    assert.match(twice?.conditions?.find((c) => c.type === 'Reconciling')?.message ?? '', /^attempt 2 of 3 failed, retrying with backoff \(InstallError\): helm install failed: boom$/u);
    const spent = run([failed('fp1'), failed('fp1'), failed('fp1')]);
    assert.deepEqual(kstatus(spent), { reconciling: '-', stalled: 'True RetriesExhausted' });
    assert.match(spent?.conditions?.find((c) => c.type === 'Stalled')?.message ?? '', /^3 attempts in a row failed .*helm install failed: boom — .*correct what the message names/u);
    assert.deepEqual(readFailures(spent?.['chartpilot']), { inputs: 'fp1', count: 3 });
    // A new spec (other inputs) starts counting again.
    assert.deepEqual(kstatus(run([failed('fp1'), failed('fp1'), failed('fp1'), failed('fp2')])), { reconciling: 'True RetryingAfterFailure', stalled: '-' });
    const back = run([failed('fp1'), failed('fp1'), failed('fp1'), deployed(ready)]);
    assert.deepEqual(kstatus(back), { reconciling: '-', stalled: '-' });
    assert.equal(readFailures(back?.['chartpilot']), undefined);
    assert.deepEqual(Object.keys(back?.['chartpilot'] as object), ['summary']);
  });

  it('never stalls on failures with a budget of 0', () => {
    assert.deepEqual(kstatus(run(Array.from({ length: 8 }, () => failed('fp1')), 0)), { reconciling: 'True RetryingAfterFailure', stalled: '-' });
  });

  it('is Stalled for what no retry fixes, and neither for a pause', () => {
    assert.deepEqual(kstatus(run([{ kind: 'irreconcilable', message: 'spec.x: bad' }])), { reconciling: '-', stalled: 'True ReconcileError' });
    assert.deepEqual(kstatus(run([{ kind: 'chart-unavailable', reason: 'RegistryUnreachable', message: 'r' }])), { reconciling: '-', stalled: 'True RegistryUnreachable' });
    assert.deepEqual(kstatus(run([failed('fp1'), { kind: 'paused' }])), { reconciling: '-', stalled: '-' });
  });

  it('takes the conditions and the count off the CR in the merge patch', () => {
    const spent = run([failed('fp1'), failed('fp1'), failed('fp1')]);
    const back = run([failed('fp1'), failed('fp1'), failed('fp1'), deployed(ready)]);
    const patch = statusMergePatch(spent, back ?? {}) as { chartpilot: Record<string, unknown>; conditions: Condition[] };
    assert.equal(patch.chartpilot['failures'], null, 'a nested key the new status lacks is deleted');
    assert.equal(patch.conditions.some((c) => c.type === 'Stalled'), false);
  });
});

describe('kstatus verdicts', () => {
  const v = (state: StatusVerdict['state']): StatusVerdict => ({ state, reason: 'R', message: 'm' });
  it('maps each summary state', () => {
    const table = Object.fromEntries(
      (['Uninstalling', 'Paused', 'Foreign', 'Stalled', 'Failed', 'Held', 'Running', 'Progressing', 'Drifted', 'Ready', 'Deployed', 'Succeeded', 'Unknown'] as const).map((s) => {
        const k = kstatusVerdict(v(s), { inputs: 'x', count: 1 }, 5);
        return [s, `${k.reconciling?.reason ?? '-'}/${k.stalled?.reason ?? '-'}`];
      }),
    );
    assert.deepEqual(table, {
      Uninstalling: 'R/-',
      Paused: '-/-',
      Foreign: '-/R',
      Stalled: '-/R',
      Failed: 'RetryingAfterFailure/-',
      Held: '-/-',
      Running: 'R/-',
      Progressing: 'R/-',
      Drifted: '-/-',
      Ready: '-/-',
      Deployed: '-/-',
      Succeeded: '-/-',
      Unknown: '-/-',
    });
  });

  it('counts on only for the same inputs', () => {
    assert.deepEqual(countFailure(undefined, 'a'), { inputs: 'a', count: 1 });
    assert.deepEqual(countFailure({ inputs: 'a', count: 4 }, 'a'), { inputs: 'a', count: 5 });
    assert.deepEqual(countFailure({ inputs: 'a', count: 4 }, 'b'), { inputs: 'b', count: 1 });
    assert.equal(readFailures({ failures: { inputs: 'a', count: -1 } }), undefined, 'a count a tenant forged is not read');
    assert.equal(readFailures({ failures: 'x' }), undefined);
  });

  it('words durations as helm does', () => {
    assert.deepEqual([300_000, 90_000, 1_500, 3_600_000, 3_661_000].map(durationText), ['5m', '1m30s', '1.5s', '1h', '1h1m1s']);
  });
});
