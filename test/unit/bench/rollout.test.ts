import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isAvailable, isReadyFor, isRolledOut, releaseOf, tracksReadiness, type CrReadyView, type DeploymentView } from '../../../bench/rollout.js';

const available = [{ type: 'Available', status: 'True' }, { type: 'Progressing', status: 'True' }];

function deploy(over: { generation?: number; replicas?: number; status?: DeploymentView['status'] }): DeploymentView {
  return {
    metadata: { name: 'w1', generation: over.generation ?? 2 },
    spec: { replicas: over.replicas ?? 1 },
    ...(over.status === undefined ? {} : { status: over.status }),
  };
}

const done = { observedGeneration: 2, replicas: 1, updatedReplicas: 1, availableReplicas: 1, conditions: available };

describe('bench rollout predicates', () => {
  it('a Deployment is rolled out when every replica runs the current template and is available', () => {
    assert.equal(isRolledOut(deploy({ status: done })), true);
    assert.equal(isAvailable(deploy({ status: done })), true);
  });

  it('is not rolled out while the controller has not seen the new spec', () => {
    assert.equal(isRolledOut(deploy({ generation: 3, status: done })), false);
  });

  it('is not rolled out while an old pod remains, though Available stays True', () => {
    const rolling = { ...done, replicas: 2, updatedReplicas: 1, availableReplicas: 1 };
    assert.equal(isRolledOut(deploy({ status: rolling })), false);
    assert.equal(isAvailable(deploy({ status: rolling })), true);
  });

  it('is not rolled out while the new pod is not available, or without Available=True', () => {
    assert.equal(isRolledOut(deploy({ status: { ...done, availableReplicas: 0 } })), false);
    assert.equal(isRolledOut(deploy({ status: { ...done, conditions: [{ type: 'Available', status: 'False' }] } })), false);
    assert.equal(isRolledOut(deploy({ replicas: 2, status: done })), false, 'fewer updated replicas than wanted');
    assert.equal(isRolledOut(deploy({})), false, 'no status yet');
    assert.equal(isAvailable(deploy({})), false);
  });

  it('a CR is Ready only for its current generation, and only from minGeneration on', () => {
    const cr = (generation: number, observedGeneration: number | undefined, status = 'True'): CrReadyView => ({
      metadata: { name: 'w1', generation },
      status: { conditions: [{ type: 'Ready', status, ...(observedGeneration === undefined ? {} : { observedGeneration }) }] },
    });
    assert.equal(isReadyFor(cr(1, 1), 1), true);
    assert.equal(isReadyFor(cr(2, 1), 1), false, 'Ready of the previous spec');
    assert.equal(isReadyFor(cr(1, 1), 2), false, 'the upgrade patch has not landed yet');
    assert.equal(isReadyFor(cr(2, 2), 2), true);
    assert.equal(isReadyFor(cr(2, 2, 'False'), 2), false);
    assert.equal(isReadyFor(cr(1, undefined), 1), false, 'no observedGeneration: not provably current');
  });

  it('knows a Ready condition that does not track readiness', () => {
    const withReady = (status: string, reason: string): CrReadyView => ({ metadata: { name: 'w' }, status: { conditions: [{ type: 'Ready', status, reason }] } });
    assert.equal(tracksReadiness(withReady('Unknown', 'ReadinessNotTracked')), false);
    assert.equal(tracksReadiness(withReady('False', 'DeploymentNotAvailable')), true);
    assert.equal(tracksReadiness({ metadata: { name: 'w' }, status: { conditions: [{ type: 'Deployed', status: 'True' }] } }), false);
  });
});

describe('releaseOf', () => {
  it('names the release from helm’s annotation, whatever the chart calls its Deployment', () => {
    const podinfo: DeploymentView = { metadata: { name: 'web-0007-podinfo', annotations: { 'meta.helm.sh/release-name': 'web-0007' } } };
    assert.equal(releaseOf(podinfo), 'web-0007');
    assert.equal(releaseOf({ metadata: { name: 'web-0007' } }), 'web-0007');
  });
});
