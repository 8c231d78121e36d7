import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Release } from '../../../../src/core/model.js';
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
