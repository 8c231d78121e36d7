import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CrStatus, KeepResult, Release } from '../../../../src/core/model.js';
import { nextStatus } from '../../../../src/engines/helm/status.js';

const release: Release = { name: 'web', namespace: 'ns', revision: 1, status: 'deployed', chartName: 'webapp', chartVersion: '1.0.0', appVersion: '1', notes: '', manifest: '', description: '' };
const NOW = '2026-01-01T00:00:00Z';

describe('status: ChartUnavailable', () => {
  it('is set with the reason and message, and leaves Deployed and the release as they were', () => {
    const deployed = nextStatus(undefined, { kind: 'deployed', action: 'install', release, kept: undefined }, 1, NOW);
    const down = nextStatus(deployed, { kind: 'chart-unavailable', reason: 'RegistryUnreachable', message: 'registry r is unreachable' }, 1, NOW);
    const c = down.conditions?.find((x) => x.type === 'ChartUnavailable');
    assert.deepEqual([c?.status, c?.reason, c?.message], ['True', 'RegistryUnreachable', 'registry r is unreachable']);
    assert.equal(down.conditions?.find((x) => x.type === 'Deployed')?.status, 'True');
    assert.deepEqual(down.deployedRelease, deployed.deployedRelease);
  });

  it('goes once the release is deployed or found current again', () => {
    const down = nextStatus(undefined, { kind: 'chart-unavailable', reason: 'NoMatchingVersion', message: 'm' }, 1, NOW);
    for (const outcome of [{ kind: 'deployed', action: 'install', release, kept: undefined }, { kind: 'current', release: undefined, kept: undefined }] as const) {
      assert.equal(nextStatus(down, outcome, 1, NOW).conditions?.some((x) => x.type === 'ChartUnavailable'), false, outcome.kind);
    }
  });
});

describe('status: deployedRelease.deployedAt', () => {
  it('is the time of each successful install or upgrade, and a status repaired from the release keeps it', () => {
    const LATER = '2026-01-01T02:00:00Z';
    const installed = nextStatus(undefined, { kind: 'deployed', action: 'install', release, kept: undefined }, 1, NOW);
    assert.equal(installed.deployedRelease?.deployedAt, NOW);
    const upgraded = nextStatus(installed, { kind: 'deployed', action: 'upgrade', release: { ...release, revision: 2 }, kept: undefined }, 2, LATER);
    assert.equal(upgraded.deployedRelease?.deployedAt, LATER);
    // Deployed stayed True, so its lastTransitionTime still says the first install.
    assert.equal(upgraded.conditions?.find((c) => c.type === 'Deployed')?.lastTransitionTime, NOW);
    const repaired = nextStatus(upgraded, { kind: 'current', release: { ...release, revision: 2 }, kept: undefined }, 2, '2026-01-01T05:00:00Z');
    assert.equal(repaired.deployedRelease?.deployedAt, LATER);
  });
});

describe('status: outputs', () => {
  const inventory = [{ apiVersion: 'v1', kind: 'Service', namespace: 'ns', name: 'web' }];
  const kept = (status: KeepResult['status']): KeepResult => ({ inventory, repaired: [], readiness: undefined, ...(status === undefined ? {} : { status }) });
  const condition = (s: CrStatus): unknown => {
    const c = s.conditions?.find((x) => x.type === 'OutputsResolved');
    return c === undefined ? undefined : [c.status, c.reason, c.message];
  };

  it('writes them whole on each pass they are computed, with a condition saying what did not resolve', () => {
    const first = nextStatus(undefined, { kind: 'deployed', action: 'install', release, kept: kept({ outputs: { url: 'http://web:80', port: 80 }, unresolved: [] }) }, 1, NOW);
    assert.deepEqual(first.outputs, { url: 'http://web:80', port: 80 });
    assert.deepEqual(condition(first), ['True', 'OutputsResolved', '2 outputs resolved']);

    const partial = nextStatus(first, { kind: 'current', release: undefined, kept: kept({ outputs: { port: 80 }, unresolved: [{ name: 'url', problem: 'a field or item it reads is not there (yet)' }] }) }, 1, NOW);
    assert.deepEqual(partial.outputs, { port: 80 }, 'an output that no longer resolves is not left stale');
    assert.deepEqual(condition(partial), ['False', 'OutputNotResolved', 'url: a field or item it reads is not there (yet)']);
  });

  it('keeps the last ones when a pass computes none, and removes them with the release', () => {
    const first = nextStatus(undefined, { kind: 'deployed', action: 'install', release, kept: kept({ outputs: { url: 'u' }, unresolved: [] }) }, 1, NOW);
    const notComputed = nextStatus(first, { kind: 'current', release: undefined, kept: undefined }, 1, NOW);
    assert.deepEqual(notComputed.outputs, { url: 'u' });
    assert.deepEqual(condition(notComputed), ['True', 'OutputsResolved', '1 output resolved']);
    const gone = nextStatus(notComputed, { kind: 'uninstalled' }, 1, NOW);
    assert.equal(gone.outputs, undefined);
    assert.equal(condition(gone), undefined);
  });

  it('sets no OutputsResolved condition for an entry with only readyWhen', () => {
    const s = nextStatus(undefined, { kind: 'deployed', action: 'install', release, kept: kept({ outputs: {}, unresolved: [{ name: 'readyWhen', problem: 'p' }], readyWhen: { met: false, message: 'm' } }) }, 1, NOW);
    assert.equal(condition(s), undefined);
    assert.equal(s.outputs, undefined);
  });
});
