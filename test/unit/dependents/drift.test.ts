import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { driftedFields, formatPath } from '../../../src/dependents/drift.js';
import { parseManifest, type DesiredObject } from '../../../src/dependents/manifest.js';
import { quantityNanos, sameQuantity } from '../../../src/dependents/quantity.js';
import { decodeStoredRelease } from '../../../src/helm/storage.js';
import type { KubeObject } from '../../../src/kube/types.js';
import { fixtureJson } from './fixtures.js';

/** The chart-rendered objects of release web2 (from its real release Secret). */
async function rendered(): Promise<Map<string, DesiredObject>> {
  const secret = fixtureJson('release-secret-web2-v1.json');
  const record = await decodeStoredRelease((secret.data as { release: string }).release);
  const objects = parseManifest(record.manifest, 'exp', () => true);
  return new Map(objects.map((o) => [o.kind, o]));
}

function desiredOf(objects: Map<string, DesiredObject>, kind: string): KubeObject {
  const o = objects.get(kind);
  assert.ok(o, `${kind} in the manifest`);
  return o.object;
}

describe('driftedFields against real objects (Kubernetes 1.33, Helm 4.1.4)', () => {
  const live = {
    Deployment: fixtureJson('live-deployment-web2.json'),
    Service: fixtureJson('live-service-web2.json'),
    ConfigMap: fixtureJson('live-configmap-web2.json'),
  };

  it('finds no drift in untouched objects as the API server returns them', async () => {
    const objects = await rendered();
    for (const kind of ['Deployment', 'Service', 'ConfigMap'] as const) {
      assert.deepEqual(driftedFields(desiredOf(objects, kind), live[kind]), [], kind);
    }
  });

  it('reports a changed replica count as spec.replicas', async () => {
    const changed = structuredClone(live.Deployment);
    (changed.spec as { replicas: number }).replicas = 5;
    assert.deepEqual(driftedFields(desiredOf(await rendered(), 'Deployment'), changed), ['spec.replicas']);
  });

  it('ignores labels and annotations others added, but not a chart label someone removed or changed', async () => {
    const desired = desiredOf(await rendered(), 'Deployment');
    const changed = structuredClone(live.Deployment);
    const labels = changed.metadata.labels ?? {};
    labels.team = 'blue';
    changed.metadata.annotations = { ...changed.metadata.annotations, 'example.com/note': 'x' };
    assert.deepEqual(driftedFields(desired, changed), []);
    delete labels['app.kubernetes.io/name'];
    labels['app.kubernetes.io/instance'] = 'other';
    assert.deepEqual(driftedFields(desired, changed), ['metadata.labels["app.kubernetes.io/name"]', 'metadata.labels["app.kubernetes.io/instance"]']);
  });

  it('reports a changed container field with its list index, and a changed list length at the list', async () => {
    const desired = desiredOf(await rendered(), 'Deployment');
    const changed = structuredClone(live.Deployment) as KubeObject & { spec: { template: { spec: { containers: Record<string, unknown>[] } } } };
    const containers = changed.spec.template.spec.containers;
    (containers[0] as { image: string }).image = 'nginx:1.28';
    (containers[0] as { resources: { requests: { cpu: string } } }).resources.requests.cpu = '200m';
    assert.deepEqual(driftedFields(desired, changed), [
      'spec.template.spec.containers[0].image',
      'spec.template.spec.containers[0].resources.requests.cpu',
    ]);
    containers.push({ name: 'sidecar', image: 'envoy' });
    assert.deepEqual(driftedFields(desired, changed), ['spec.template.spec.containers']);
  });

  it('ignores status and server-owned metadata', async () => {
    const desired = structuredClone(desiredOf(await rendered(), 'Service'));
    desired.status = { loadBalancer: { ingress: [{ ip: '1.2.3.4' }] } };
    desired.metadata.resourceVersion = '1';
    desired.metadata.uid = 'other';
    desired.metadata.ownerReferences = [{ apiVersion: 'example.com/v1', kind: 'App', name: 'x', uid: 'u', controller: true }];
    assert.deepEqual(driftedFields(desired, live.Service), []);
    const role = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'r', namespace: 'chart-wrote-one' }, rules: [] };
    assert.deepEqual(driftedFields(role, { ...role, metadata: { name: 'r' } }), [], 'the server drops the namespace of cluster-scoped objects');
  });
});

describe('driftedFields normalization', () => {
  const dep = (container: Record<string, unknown>, extra: Record<string, unknown> = {}): KubeObject => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'd' },
    spec: { template: { spec: { containers: [{ name: 'c', ...container }] } }, ...extra },
  });

  it('compares resource quantities by value', () => {
    const desired = dep({ resources: { requests: { cpu: 0.1, memory: '1Gi', storage: 1e9 }, limits: { cpu: 1, memory: '1.5Gi', 'nvidia.com/gpu': '1' } } });
    const live = dep({ resources: { requests: { cpu: '100m', memory: '1073741824', storage: '1G' }, limits: { cpu: '1', memory: '1536Mi', 'nvidia.com/gpu': 1 } } });
    assert.deepEqual(driftedFields(desired, live), []);
    const other = dep({ resources: { requests: { cpu: '101m', memory: '1Gi', storage: '1G' }, limits: { cpu: '1', memory: '1536Mi', 'nvidia.com/gpu': 1 } } });
    assert.deepEqual(driftedFields(desired, other), ['spec.template.spec.containers[0].resources.requests.cpu']);
  });

  it('compares quantities only where quantities live', () => {
    assert.deepEqual(driftedFields(dep({ image: 'app:1.0' }), dep({ image: 'app:1' })), ['spec.template.spec.containers[0].image']);
    const desired = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { version: '1.0' } };
    assert.deepEqual(driftedFields(desired, { ...desired, data: { version: '1' } }), ['data.version']);
    const quota = { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'q' }, spec: { hard: { 'requests.memory': '2Gi', pods: 10 } } };
    assert.deepEqual(driftedFields(quota, { ...quota, spec: { hard: { 'requests.memory': '2048Mi', pods: '10' } } }), []);
    const lr = { apiVersion: 'v1', kind: 'LimitRange', metadata: { name: 'l' }, spec: { limits: [{ type: 'Container', default: { cpu: 0.5 } }] } };
    assert.deepEqual(driftedFields(lr, { ...lr, spec: { limits: [{ type: 'Container', default: { cpu: '500m' } }] } }), []);
    const vol = dep({}, { volumes: [{ name: 'v', emptyDir: { sizeLimit: '0.5Gi' } }] });
    assert.deepEqual(driftedFields(vol, dep({}, { volumes: [{ name: 'v', emptyDir: { sizeLimit: '512Mi' } }] })), []);
  });

  it('treats int-or-string values as equal when they print the same', () => {
    const svc = (targetPort: unknown, port: unknown): KubeObject => ({ apiVersion: 'v1', kind: 'Service', metadata: { name: 's' }, spec: { ports: [{ port, targetPort }] } });
    assert.deepEqual(driftedFields(svc(8080, '80'), svc('8080', 80)), []);
    assert.deepEqual(driftedFields(svc(8080, 80), svc(8081, 80)), ['spec.ports[0].targetPort']);
  });

  it('treats null, empty and zero values the server drops as absent', () => {
    const desired = dep({ env: [], securityContext: {}, args: null, workingDir: '', stdin: false, hostPort: 0 }, { paused: false });
    assert.deepEqual(driftedFields(desired, dep({})), []);
    const labelsNull = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', labels: null, annotations: {} } };
    assert.deepEqual(driftedFields(labelsNull, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } }), []);
    // …but a value the chart sets is drift when it is gone.
    assert.deepEqual(driftedFields(dep({ workingDir: '/app' }), dep({})), ['spec.template.spec.containers[0].workingDir']);
    // An empty list asks for nothing, even if others filled it.
    assert.deepEqual(driftedFields(dep({ env: [] }), dep({ env: [{ name: 'A', value: '1' }] })), []);
  });

  it('reports a changed type at the field', () => {
    assert.deepEqual(driftedFields(dep({ args: ['a'] }), dep({ args: 'a' })), ['spec.template.spec.containers[0].args']);
    assert.deepEqual(driftedFields(dep({ resources: { limits: { cpu: 1 } } }), dep({ resources: 'x' })), ['spec.template.spec.containers[0].resources']);
    assert.deepEqual(driftedFields(dep({ stdin: true }), dep({ stdin: 'true' })), ['spec.template.spec.containers[0].stdin']);
  });

  it('compares a Secret’s stringData with the data the server stores', () => {
    const desired = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, stringData: { password: 'hunter2' }, data: { user: 'YWRtaW4=' } };
    const live = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, type: 'Opaque', data: { user: 'YWRtaW4=', password: 'aHVudGVyMg==' } };
    assert.deepEqual(driftedFields(desired, live), []);
    assert.deepEqual(driftedFields(desired, { ...live, data: { user: 'YWRtaW4=', password: 'b3RoZXI=' } }), ['data.password']);
  });

  it('does not report the IPs the server allocates for clusterIP: ""', () => {
    const desired = { apiVersion: 'v1', kind: 'Service', metadata: { name: 's' }, spec: { clusterIP: '', clusterIPs: [''] } };
    const live = { ...desired, spec: { clusterIP: '10.96.0.12', clusterIPs: ['10.96.0.12'] } };
    assert.deepEqual(driftedFields(desired, live), []);
    const fixed = { ...desired, spec: { clusterIP: '10.96.0.10' } };
    assert.deepEqual(driftedFields(fixed, live), ['spec.clusterIP']);
  });

  it('reports a deleted map the chart sets at its own path', () => {
    const desired = dep({}, { strategy: { type: 'Recreate' } });
    assert.deepEqual(driftedFields(desired, dep({})), ['spec.strategy']);
  });
});

describe('formatPath', () => {
  it('uses dots for plain keys, brackets for indices and odd keys', () => {
    assert.equal(formatPath(['spec', 'template', 'spec', 'containers', 0, 'image']), 'spec.template.spec.containers[0].image');
    assert.equal(formatPath(['metadata', 'annotations', 'checksum/config']), 'metadata.annotations["checksum/config"]');
    assert.equal(formatPath(['data', 'a.b']), 'data["a.b"]');
  });
});

describe('quantities', () => {
  it('parses every suffix to nano-units', () => {
    const cases: [string | number, bigint][] = [
      ['1', 1_000_000_000n],
      [1, 1_000_000_000n],
      ['100m', 100_000_000n],
      [0.1, 100_000_000n],
      ['.5', 500_000_000n],
      ['1.', 1_000_000_000n],
      ['1Ki', 1024n * 1_000_000_000n],
      ['1Gi', 1073741824n * 1_000_000_000n],
      ['1k', 1_000n * 1_000_000_000n],
      ['1M', 1_000_000n * 1_000_000_000n],
      ['1E', 10n ** 18n * 1_000_000_000n],
      ['1e3', 1_000n * 1_000_000_000n],
      ['1E-3', 1_000_000n],
      ['5u', 5_000n],
      ['7n', 7n],
      ['-2', -2_000_000_000n],
      ['+2', 2_000_000_000n],
      // Below one nano-unit the API server rounds up.
      ['0.1n', 1n],
    ];
    for (const [input, nanos] of cases) assert.equal(quantityNanos(input), nanos, String(input));
  });

  it('refuses what is not a quantity', () => {
    for (const input of ['', 'abc', '1.2.3', '1Kb', 'Gi', '1 Gi', '1e999', Number.NaN, Number.POSITIVE_INFINITY]) {
      assert.equal(quantityNanos(input), undefined, String(input));
    }
    assert.equal(sameQuantity('x', 'x'), false);
    assert.equal(sameQuantity('1Gi', '1024Mi'), true);
    assert.equal(sameQuantity('1G', '1Gi'), false);
  });
});
