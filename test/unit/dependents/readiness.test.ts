import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ReadinessReasons, objectReadiness, readinessOf, type LiveOrMissing } from '../../../src/dependents/readiness.js';
import type { KubeObject } from '../../../src/kube/types.js';
import { STALLED_READY_REASONS } from '../../../src/core/summary.js';
import { fixtureJson } from './fixtures.js';

function obj(apiVersion: string, kind: string, name: string, spec: unknown, status: unknown, generation?: number): LiveOrMissing {
  const live: KubeObject = { apiVersion, kind, metadata: { name, namespace: 'ns', ...(generation === undefined ? {} : { generation }) }, spec, status };
  return { apiVersion, kind, namespace: 'ns', name, live };
}

const deploy = (name: string, replicas: number | undefined, status: Record<string, unknown>, generation = 2): LiveOrMissing =>
  obj('apps/v1', 'Deployment', name, replicas === undefined ? {} : { replicas }, status, generation);

const readyDeploy = (name: string, n = 3): LiveOrMissing =>
  deploy(name, n, { observedGeneration: 2, replicas: n, updatedReplicas: n, availableReplicas: n, readyReplicas: n });

const missing = (kind: string, name: string, apiVersion = 'v1'): LiveOrMissing => ({ apiVersion, kind, namespace: 'ns', name, live: undefined });

describe('readinessOf', () => {
  it('is ready when every object is (a real available Deployment, plain kinds that exist)', () => {
    const live = fixtureJson('live-deployment-web2.json');
    const r = readinessOf([
      { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'exp', name: 'web2', live },
      { apiVersion: 'v1', kind: 'Service', namespace: 'exp', name: 'web2', live: fixtureJson('live-service-web2.json') },
      { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'exp', name: 'web2-content', live: fixtureJson('live-configmap-web2.json') },
    ]);
    assert.deepEqual(r, { ready: true, failed: false, reason: 'AllResourcesReady', message: 'all 3 resources are ready' });
    assert.equal(readinessOf([]).ready, true);
  });

  it('names what is not ready, up to three, then counts the rest', () => {
    const r = readinessOf([
      readyDeploy('ok'),
      deploy('web', 3, { observedGeneration: 2, replicas: 3, updatedReplicas: 3, availableReplicas: 1 }),
      missing('Service', 'gone'),
      missing('ConfigMap', 'a'),
      missing('ConfigMap', 'b'),
      missing('ConfigMap', 'c'),
    ]);
    assert.equal(r.ready, false);
    assert.equal(r.failed, false);
    assert.equal(r.reason, 'DeploymentNotAvailable');
    assert.equal(r.message, 'Deployment web: 1/3 replicas available; Service gone: does not exist; ConfigMap a: does not exist; and 2 more not ready');
  });

  it('puts failures first and reports them as failed', () => {
    const r = readinessOf([
      missing('ConfigMap', 'a'),
      deploy('web', 3, {
        observedGeneration: 2,
        replicas: 3,
        updatedReplicas: 1,
        availableReplicas: 2,
        conditions: [{ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded', message: 'ReplicaSet "web-1" has timed out progressing.' }],
      }),
    ]);
    assert.equal(r.failed, true);
    assert.equal(r.reason, 'ProgressDeadlineExceeded');
    assert.equal(r.message, 'Deployment web: progress deadline exceeded (ReplicaSet "web-1" has timed out progressing.); ConfigMap a: does not exist');
  });

  it('gives a failure only reasons the status summary calls Stalled, and no other reason is one', () => {
    const failures = [
      deploy('web', 1, { observedGeneration: 2, conditions: [{ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded' }] }),
      obj('batch/v1', 'Job', 'j', {}, { conditions: [{ type: 'Failed', status: 'True', reason: 'BackoffLimitExceeded' }] }),
      obj('v1', 'Pod', 'p', {}, { phase: 'Failed' }),
    ].map((o) => readinessOf([o]));
    assert.ok(failures.every((r) => r.failed));
    assert.deepEqual(new Set(failures.map((r) => r.reason)), STALLED_READY_REASONS);
    for (const reason of Object.values(ReadinessReasons)) assert.equal(STALLED_READY_REASONS.has(reason), failures.some((r) => r.reason === reason), reason);
  });

  it('reports a missing object', () => {
    assert.deepEqual(readinessOf([missing('Service', 'web')]), {
      ready: false,
      failed: false,
      reason: 'ResourceMissing',
      message: 'Service web: does not exist',
    });
  });
});

describe('objectReadiness by kind', () => {
  const check = (o: LiveOrMissing): string => {
    const r = objectReadiness(o, o.live);
    return r.ready ? 'ready' : `${r.failed ? 'FAILED ' : ''}${r.reason}: ${r.detail}`;
  };

  it('Deployment: generation observed, all replicas updated, old ones gone, all available', () => {
    assert.equal(check(deploy('d', 3, {})), 'DeploymentNotAvailable: waiting for the controller to observe generation 2');
    assert.equal(check(deploy('d', 3, { observedGeneration: 1, replicas: 3, updatedReplicas: 3, availableReplicas: 3 })), 'DeploymentNotAvailable: waiting for the controller to observe generation 2');
    assert.equal(check(deploy('d', 3, { observedGeneration: 2, replicas: 4, updatedReplicas: 2, availableReplicas: 3 })), 'DeploymentNotAvailable: 2/3 replicas updated');
    assert.equal(check(deploy('d', 3, { observedGeneration: 2, replicas: 4, updatedReplicas: 3, availableReplicas: 3 })), 'DeploymentNotAvailable: 1 old replica pending termination');
    assert.equal(check(deploy('d', 3, { observedGeneration: 2, replicas: 3, updatedReplicas: 3, availableReplicas: 2 })), 'DeploymentNotAvailable: 2/3 replicas available');
    assert.equal(check(readyDeploy('d')), 'ready');
    // replicas defaults to 1; 0 replicas is ready once observed.
    assert.equal(check(deploy('d', undefined, { observedGeneration: 2 })), 'DeploymentNotAvailable: 0/1 replicas updated');
    assert.equal(check(deploy('d', 0, { observedGeneration: 2 })), 'ready');
  });

  it('StatefulSet: ready replicas, updated replicas, and the rollout finished', () => {
    const sts = (spec: Record<string, unknown>, status: Record<string, unknown>): LiveOrMissing => obj('apps/v1', 'StatefulSet', 's', spec, { observedGeneration: 1, ...status }, 1);
    const done = { replicas: 3, readyReplicas: 3, updatedReplicas: 3, currentRevision: 's-1', updateRevision: 's-1' };
    assert.equal(check(sts({ replicas: 3 }, done)), 'ready');
    assert.equal(check(sts({ replicas: 3 }, { ...done, readyReplicas: 2 })), 'StatefulSetNotReady: 2/3 replicas ready');
    assert.equal(check(sts({ replicas: 3 }, { ...done, updatedReplicas: 1 })), 'StatefulSetNotReady: 1/3 replicas updated');
    assert.equal(check(sts({ replicas: 3 }, { ...done, updateRevision: 's-2' })), 'StatefulSetNotReady: rolling update to revision s-2 in progress');
    const partitioned = { replicas: 3, updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 2 } } };
    assert.equal(check(sts(partitioned, { ...done, updatedReplicas: 1, updateRevision: 's-2' })), 'ready');
    assert.equal(check(sts(partitioned, { ...done, updatedReplicas: 0, updateRevision: 's-2' })), 'StatefulSetNotReady: 0/1 replicas updated');
    const onDelete = { replicas: 3, updateStrategy: { type: 'OnDelete' } };
    assert.equal(check(sts(onDelete, { ...done, updatedReplicas: 0, updateRevision: 's-2' })), 'ready');
    assert.equal(check(obj('apps/v1', 'StatefulSet', 's', { replicas: 1 }, {}, 1)), 'StatefulSetNotReady: waiting for the controller to observe generation 1');
  });

  it('DaemonSet: every scheduled pod updated and ready', () => {
    const ds = (status: Record<string, unknown>): LiveOrMissing => obj('apps/v1', 'DaemonSet', 'ds', {}, { observedGeneration: 1, ...status }, 1);
    assert.equal(check(ds({ desiredNumberScheduled: 2, updatedNumberScheduled: 2, numberReady: 2 })), 'ready');
    assert.equal(check(ds({ desiredNumberScheduled: 2, updatedNumberScheduled: 1, numberReady: 2 })), 'DaemonSetNotReady: 1/2 pods updated');
    assert.equal(check(ds({ desiredNumberScheduled: 2, updatedNumberScheduled: 2, numberReady: 0 })), 'DaemonSetNotReady: 0/2 pods ready');
  });

  it('Job: complete is ready, failed is a failure', () => {
    const job = (status: Record<string, unknown>, spec: Record<string, unknown> = {}): LiveOrMissing => obj('batch/v1', 'Job', 'j', spec, status);
    assert.equal(check(job({ conditions: [{ type: 'Complete', status: 'True' }] })), 'ready');
    assert.equal(check(job({ succeeded: 1 }, { completions: 3 })), 'JobNotComplete: 1/3 completions');
    assert.equal(
      check(job({ conditions: [{ type: 'Failed', status: 'True', reason: 'BackoffLimitExceeded', message: 'Job has reached the specified backoff limit' }] })),
      'FAILED JobFailed: failed (BackoffLimitExceeded): Job has reached the specified backoff limit',
    );
  });

  it('PVC, LoadBalancer Service, Pod', () => {
    assert.equal(check(obj('v1', 'PersistentVolumeClaim', 'p', {}, { phase: 'Bound' })), 'ready');
    assert.equal(check(obj('v1', 'PersistentVolumeClaim', 'p', {}, { phase: 'Pending' })), 'PersistentVolumeClaimNotBound: phase Pending');
    assert.equal(check(obj('v1', 'Service', 's', { type: 'ClusterIP' }, {})), 'ready');
    assert.equal(check(obj('v1', 'Service', 's', { type: 'LoadBalancer' }, { loadBalancer: {} })), 'LoadBalancerPending: no load balancer address yet');
    assert.equal(check(obj('v1', 'Service', 's', { type: 'LoadBalancer' }, { loadBalancer: { ingress: [{ ip: '1.2.3.4' }] } })), 'ready');
    assert.equal(check(obj('v1', 'Pod', 'p', {}, { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] })), 'ready');
    assert.equal(check(obj('v1', 'Pod', 'p', {}, { phase: 'Pending' })), 'PodNotReady: not ready (phase Pending)');
    assert.equal(check(obj('v1', 'Pod', 'p', {}, { phase: 'Succeeded' })), 'ready');
    assert.equal(check(obj('v1', 'Pod', 'p', {}, { phase: 'Failed', reason: 'Evicted' })), 'FAILED PodFailed: failed (Evicted)');
  });

  it('any other kind is ready once it exists; a terminating object is not', () => {
    assert.equal(check(obj('example.com/v1', 'Widget', 'w', {}, { conditions: [{ type: 'Ready', status: 'False' }] })), 'ready');
    assert.equal(check(obj('extensions/v1beta1', 'Deployment', 'old', { replicas: 3 }, {})), 'ready', 'only apps/Deployment is judged as a Deployment');
    const terminating = obj('v1', 'ConfigMap', 'c', undefined, undefined);
    assert.ok(terminating.live);
    terminating.live.metadata.deletionTimestamp = '2026-01-01T00:00:00Z';
    assert.equal(check(terminating), `${ReadinessReasons.terminating}: is being deleted`);
  });
});
