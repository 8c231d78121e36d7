/**
 * status.chartpilot.summary of a chart kind: the state `kubectl get` prints, from the conditions
 * nextStatus writes — the cases first (a failed install, a foreign record, a failed upgrade
 * over a Ready release), each of which showed blank or `True AllResourcesReady` with columns on Ready.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CrStatus, KeepResult, Readiness, Release } from '../../../../src/core/model.js';
import { nextStatus, type Outcome } from '../../../../src/engines/helm/status.js';
import { summaryMessage, type StatusSummary } from '../../../../src/core/summary.js';
import { chartSummary } from '../../../../src/engines/helm/chart-summary.js';

const release: Release = { name: 'web', namespace: 'ns', revision: 1, status: 'deployed', chartName: 'webapp', chartVersion: '1.0.0', appVersion: '1', notes: 'NOTES', manifest: '', description: '' };
const NOW = '2026-01-01T00:00:00Z';
const READY: Readiness = { ready: true, failed: false, reason: 'AllResourcesReady', message: 'all 3 resources are ready' };
const kept = (readiness: Readiness | undefined, more: Partial<KeepResult> = {}): KeepResult => ({ inventory: [], repaired: [], readiness, ...more });

/** The summary after each outcome in turn, from no status at all. */
function after(...outcomes: Outcome[]): StatusSummary {
  let status: CrStatus | undefined;
  for (const o of outcomes) status = nextStatus(status, o, 1, NOW);
  return (status?.['chartpilot'] as { summary: StatusSummary }).summary;
}

const installed: Outcome = { kind: 'deployed', action: 'install', release, kept: kept(READY) };

describe('status summary of a chart kind', () => {
  it('a failed first install is Failed, not blank', () => {
    assert.deepEqual(after({ kind: 'failed', reason: 'InstallError', message: 'helm install failed: template: x: boom; the partial release was uninstalled', inputs: 'fp' }), {
      state: 'Failed',
      reason: 'InstallError',
      message: 'helm install failed: template: x: boom; the partial release was uninstalled',
    });
  });

  it('a failed upgrade over a Ready release is Failed, though Ready stays True for the revision rolled back to', () => {
    const failed: Outcome = { kind: 'failed', reason: 'UpgradeError', message: 'helm upgrade failed: boom; rolled back to revision 1', inputs: 'fp' };
    let status = nextStatus(undefined, installed, 1, NOW);
    status = nextStatus(status, failed, 2, NOW);
    assert.equal(status.conditions?.find((c) => c.type === 'Ready')?.status, 'True', 'operator-sdk\'s conditions are as they were');
    assert.deepEqual(after(installed, failed), { state: 'Failed', reason: 'UpgradeError', message: 'helm upgrade failed: boom; rolled back to revision 1' });
  });

  it('release records chartpilot did not write are Foreign, over an earlier Ready', () => {
    assert.deepEqual(after(installed, { kind: 'irreconcilable', reason: 'ForeignReleaseRecord', message: 'Helm release record sh.helm.release.v1.web.v2 was not written by chartpilot' }), {
      state: 'Foreign',
      reason: 'ForeignReleaseRecord',
      message: 'Helm release record sh.helm.release.v1.web.v2 was not written by chartpilot',
    });
  });

  it('what no retry fixes is Stalled: a bad spec, an unavailable chart, an object that failed', () => {
    assert.equal(after({ kind: 'irreconcilable', message: 'the resource name is too long' }).state, 'Stalled');
    assert.deepEqual(after(installed, { kind: 'chart-unavailable', reason: 'RegistryUnreachable', message: 'oci://r/c: unreachable' }), { state: 'Stalled', reason: 'RegistryUnreachable', message: 'oci://r/c: unreachable' });
    const deadline: Readiness = { ready: false, failed: true, reason: 'ProgressDeadlineExceeded', message: 'Deployment web: progress deadline exceeded' };
    assert.deepEqual(after({ kind: 'current', release: undefined, kept: kept(deadline) }), { state: 'Stalled', reason: 'ProgressDeadlineExceeded', message: 'Deployment web: progress deadline exceeded' });
  });

  it('objects still coming up are Progressing; a healthy release is Ready; untracked readiness is Deployed', () => {
    const rolling: Readiness = { ready: false, failed: false, reason: 'DeploymentNotAvailable', message: 'Deployment web: 0/2 replicas available' };
    assert.deepEqual(after({ kind: 'deployed', action: 'install', release, kept: kept(rolling) }), { state: 'Progressing', reason: 'DeploymentNotAvailable', message: 'Deployment web: 0/2 replicas available' });
    assert.deepEqual(after(installed), { state: 'Ready', reason: 'AllResourcesReady', message: 'all 3 resources are ready' });
    assert.equal(after({ kind: 'deployed', action: 'install', release, kept: kept(undefined) }).state, 'Deployed');
    assert.equal(after({ kind: 'deployed', action: 'install', release, kept: undefined }).state, 'Deployed', 'no keeper: Deployed alone');
  });

  it('the way back: a failure, then a successful upgrade, is Ready again', () => {
    assert.equal(after(installed, { kind: 'failed', reason: 'UpgradeError', message: 'x', inputs: 'fp' }, { ...installed, action: 'upgrade' }).state, 'Ready');
  });

  it('paused, uninstalling and drift left in place say so', () => {
    assert.equal(after(installed, { kind: 'paused' }).state, 'Paused');
    assert.equal(after(installed, { kind: 'uninstalling', message: 'release uninstalled; waiting for Deployment web to be deleted (uninstall-wait)' }).state, 'Uninstalling');
    const drift = kept(READY, { unrepaired: [{ object: 'Deployment web', fields: ['spec.replicas'] }] });
    assert.deepEqual(after({ kind: 'current', release: undefined, kept: drift }).state, 'Drifted');
  });

  it('a held chart change is Held below this CR\'s own failures, and goes when nothing is held', () => {
    const held = { message: 'chart /charts/webapp changed, and the change is held: it failed on ns/a' };
    let status = nextStatus(undefined, installed, 1, NOW, { held });
    const c = status.conditions?.find((x) => x.type === 'ChartChangeHeld');
    assert.deepEqual([c?.status, c?.reason, c?.message], ['True', 'CanaryFailed', held.message]);
    assert.deepEqual((status['chartpilot'] as { summary: StatusSummary }).summary, { state: 'Held', reason: 'CanaryFailed', message: held.message });
    status = nextStatus(status, { kind: 'failed', reason: 'UpgradeError', message: 'x', inputs: 'fp' }, 1, NOW, { held });
    assert.equal((status['chartpilot'] as { summary: StatusSummary }).summary.state, 'Failed');
    status = nextStatus(status, installed, 1, NOW);
    assert.equal(status.conditions?.some((x) => x.type === 'ChartChangeHeld'), false);
  });

  it('is Unknown without a condition that says more than Initialized', () => {
    assert.deepEqual(chartSummary([{ type: 'Initialized', status: 'True', reason: 'Initialized', message: '' }]), { state: 'Unknown', reason: '', message: '' });
  });

  it('keeps whatever else chartpilot holds under status.chartpilot', () => {
    const status = nextStatus({ chartpilot: { other: 1 } }, installed, 1, NOW);
    assert.equal((status['chartpilot'] as { other?: number }).other, 1);
  });
});

describe('summaryMessage', () => {
  it('is the first line, clipped for a table cell', () => {
    assert.equal(summaryMessage('one\ntwo'), 'one');
    assert.equal(summaryMessage('  spaced  '), 'spaced');
    const long = 'x'.repeat(500);
    assert.equal(summaryMessage(long).length, 200);
    assert.ok(summaryMessage(long).endsWith('…'));
    assert.equal(summaryMessage('y'.repeat(200)), 'y'.repeat(200));
  });
});
