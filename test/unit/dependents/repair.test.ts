import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HELM_FIELD_MANAGER, RepairError, applyBody, repairObject } from '../../../src/dependents/repair.js';
import type { DesiredObject } from '../../../src/dependents/types.js';
import { KubeApiError } from '../../../src/kube/errors.js';
import type { KubeClient, RequestOptions } from '../../../src/kube/rest.js';
import { resourcePath } from '../../../src/kube/resource.js';
import type { ApiResource, KubeObject } from '../../../src/kube/types.js';

const services: ApiResource = { group: '', version: 'v1', apiVersion: 'v1', kind: 'Service', plural: 'services', namespaced: true };
const clusterRoles: ApiResource = {
  group: 'rbac.authorization.k8s.io',
  version: 'v1',
  apiVersion: 'rbac.authorization.k8s.io/v1',
  kind: 'ClusterRole',
  plural: 'clusterroles',
  namespaced: false,
};

const desiredService: DesiredObject = {
  apiVersion: 'v1',
  kind: 'Service',
  namespace: 'ns',
  name: 'web',
  object: {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'web', labels: { 'chartpilot.io/owner-uid': 'u1' } },
    spec: { ports: [{ port: 80 }] },
  },
};

interface Call {
  method: string;
  path: string;
  opts: RequestOptions;
}

/**
 * GET answers `current` (404 when null); PATCH answers with what was applied merged over
 * `current`, with `resourceVersion` set to `afterRv`.
 */
function fakeClient(current: KubeObject | null, afterRv: string, calls: Call[], patchError?: Error): KubeClient {
  return {
    request: <T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> => {
      calls.push({ method, path, opts });
      if (method === 'GET') {
        return current === null ? Promise.reject(new KubeApiError('not found', { status: 404 })) : Promise.resolve(current as T);
      }
      if (patchError) return Promise.reject(patchError);
      const body = opts.body as KubeObject;
      const merged = { ...current, ...body, metadata: { ...current?.metadata, ...body.metadata, resourceVersion: afterRv } };
      return Promise.resolve(merged as T);
    },
    watch: () => Promise.reject(new Error('not used')),
    resourceFor: () => Promise.reject(new Error('not used')),
    forward: () => Promise.reject(new Error('not used')),
    pathFor: resourcePath,
  };
}

describe('applyBody', () => {
  it('applies the rendered object in its namespace with Helm’s ownership metadata', () => {
    const body = applyBody(desiredService, 'ns', { name: 'web', namespace: 'ns' });
    assert.deepEqual(body, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {
        name: 'web',
        namespace: 'ns',
        labels: { 'chartpilot.io/owner-uid': 'u1', 'app.kubernetes.io/managed-by': 'Helm' },
        annotations: { 'meta.helm.sh/release-name': 'web', 'meta.helm.sh/release-namespace': 'ns' },
      },
      spec: { ports: [{ port: 80 }] },
    });
    assert.equal(desiredService.object.metadata.namespace, undefined, 'the desired object is not modified');
  });

  it('drops what would make the apply conditional or touch status, and the namespace of cluster-scoped objects', () => {
    const desired: DesiredObject = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      namespace: undefined,
      name: 'r',
      object: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: 'r', namespace: 'x', resourceVersion: '5', uid: 'u', creationTimestamp: '2020-01-01T00:00:00Z', generation: 3, managedFields: [] },
        rules: [],
        status: { x: 1 },
      },
    };
    assert.deepEqual(applyBody(desired, undefined, undefined), {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'r' },
      rules: [],
    });
  });
});

describe('repairObject', () => {
  it('recreates a missing object with a forced server-side apply as the given field manager', async () => {
    const calls: Call[] = [];
    const outcome = await repairObject(fakeClient(null, '10', calls), services, desiredService, HELM_FIELD_MANAGER, { release: { name: 'web', namespace: 'ns' } });
    assert.equal(outcome, 'created');
    assert.deepEqual(
      calls.map((c) => `${c.method} ${c.path}`),
      ['GET /api/v1/namespaces/ns/services/web', 'PATCH /api/v1/namespaces/ns/services/web'],
    );
    const patch = calls[1]?.opts;
    assert.equal(patch?.contentType, 'application/apply-patch+yaml');
    assert.deepEqual(patch.query, { fieldManager: 'helm', force: true });
    assert.equal((patch.body as KubeObject).metadata.annotations?.['meta.helm.sh/release-name'], 'web');
  });

  it('tells an apply that changed the object from one that did not, whatever happened to its status', async () => {
    const asApplied = applyBody(desiredService, 'ns', undefined);
    const live: KubeObject = { ...asApplied, metadata: { ...asApplied.metadata, resourceVersion: '7' }, status: { a: 1 } };
    assert.equal(await repairObject(fakeClient(live, '7', []), services, desiredService, 'helm'), 'unchanged');
    // A status write by a controller between our GET and PATCH bumps the resourceVersion only.
    assert.equal(await repairObject(fakeClient(live, '9', []), services, desiredService, 'helm'), 'unchanged');
    const drifted: KubeObject = { ...live, spec: { ports: [{ port: 81 }] } };
    assert.equal(await repairObject(fakeClient(drifted, '8', []), services, desiredService, 'helm'), 'updated');
  });

  it('uses the caller’s view of the object instead of a GET', async () => {
    const calls: Call[] = [];
    assert.equal(await repairObject(fakeClient(null, '1', calls), services, desiredService, 'helm', { current: null }), 'created');
    assert.deepEqual(calls.map((c) => c.method), ['PATCH']);
  });

  it('keeps the live object’s Helm ownership when the release is not given', async () => {
    const calls: Call[] = [];
    const live: KubeObject = {
      ...desiredService.object,
      metadata: { name: 'web', namespace: 'ns', resourceVersion: '7', annotations: { 'meta.helm.sh/release-name': 'rel', 'meta.helm.sh/release-namespace': 'ns' } },
    };
    await repairObject(fakeClient(live, '8', calls), services, desiredService, 'helm');
    const body = calls.find((c) => c.method === 'PATCH')?.opts.body as KubeObject;
    assert.equal(body.metadata.annotations?.['meta.helm.sh/release-name'], 'rel');
    assert.equal(body.metadata.labels?.['app.kubernetes.io/managed-by'], 'Helm');
  });

  it('applies cluster-scoped objects at their cluster path', async () => {
    const calls: Call[] = [];
    const desired: DesiredObject = { apiVersion: clusterRoles.apiVersion, kind: 'ClusterRole', namespace: undefined, name: 'r', object: { metadata: { name: 'r' }, rules: [] } };
    await repairObject(fakeClient(null, '1', calls), clusterRoles, desired, 'helm');
    assert.deepEqual(calls.map((c) => c.path), ['/apis/rbac.authorization.k8s.io/v1/clusterroles/r', '/apis/rbac.authorization.k8s.io/v1/clusterroles/r']);
  });

  it('wraps what the server refused in a RepairError carrying its reason', async () => {
    const invalid = new KubeApiError('Service "web" is invalid: spec.clusterIPs[0]: Invalid value: field is immutable', { status: 422, reason: 'Invalid' });
    await assert.rejects(repairObject(fakeClient(null, '1', [], invalid), services, desiredService, 'helm'), (e: unknown) => {
      assert.ok(e instanceof RepairError);
      assert.equal(e.reason, 'Invalid');
      assert.match(e.message, /^cannot repair Service ns\/web: Service "web" is invalid/);
      return true;
    });
  });

  it('refuses arguments that cannot be right', async () => {
    const client = fakeClient(null, '1', []);
    await assert.rejects(repairObject(client, services, desiredService, ''), RangeError);
    await assert.rejects(repairObject(client, clusterRoles, desiredService, 'helm'), /does not serve Service/);
    await assert.rejects(repairObject(client, services, { ...desiredService, namespace: undefined }, 'helm'), /namespaced but has no namespace/);
  });
});

describe('repairObject leaving fields to others: what the API server receives', () => {
  const deployments: ApiResource = { group: 'apps', version: 'v1', apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments', namespaced: true };
  const rendered: DesiredObject = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    namespace: 'ns',
    name: 'web',
    object: {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web' },
      spec: { replicas: 1, template: { spec: { containers: [{ name: 'app', image: 'a:1' }] } } },
    },
  };
  const liveWith = (replicasOwner: { manager: string; operation: string; subresource?: string }): KubeObject => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: 'web',
      namespace: 'ns',
      resourceVersion: '41',
      managedFields: [
        { manager: 'helm', operation: 'Apply', fieldsV1: { 'f:spec': { 'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"app"}': { 'f:image': {} } } } } } } },
        { ...replicasOwner, fieldsV1: { 'f:spec': { 'f:replicas': {} } } },
      ],
    },
    spec: { replicas: 3, template: { spec: { containers: [{ name: 'app', image: 'a:2' }] } } },
  });
  const sent = async (live: KubeObject, leaveAlone: string[][]): Promise<KubeObject> => {
    const calls: Call[] = [];
    await repairObject(fakeClient(live, '42', calls), deployments, rendered, HELM_FIELD_MANAGER, { current: live, leaveAlone });
    const patch = calls.find((c) => c.method === 'PATCH');
    assert.ok(patch);
    assert.equal(patch.opts.query?.['force'], true);
    return patch.opts.body as KubeObject;
  };

  it('leaves a field another manager owns out of the apply, so it is neither set back nor taken over', async () => {
    const body = await sent(liveWith({ manager: 'kube-controller-manager', operation: 'Update', subresource: 'scale' }), [['spec', 'replicas']]);
    assert.deepEqual(body.spec, { template: { spec: { containers: [{ name: 'app', image: 'a:1' }] } } }, 'no replicas; the drifted image is set back');
    assert.equal(body.metadata.resourceVersion, undefined, 'nothing copied from the live object: no precondition needed');
  });

  it('sends the live value of a field our manager still owns (leaving it out would delete it), on the live resourceVersion', async () => {
    const body = await sent(liveWith({ manager: 'helm', operation: 'Apply' }), [['spec', 'replicas']]);
    assert.equal((body.spec as { replicas: number }).replicas, 3, 'the live value, not the chart’s 1');
    assert.equal(body.metadata.resourceVersion, '41', 'a change since the read makes the apply fail instead of setting it back');
  });

  it('does not count an Update under our manager’s name, or our manager on a subresource, as our apply', async () => {
    for (const owner of [{ manager: 'helm', operation: 'Update' }, { manager: 'helm', operation: 'Apply', subresource: 'scale' }]) {
      const body = await sent(liveWith(owner), [['spec', 'replicas']]);
      assert.equal((body.spec as { replicas?: number }).replicas, undefined, JSON.stringify(owner));
    }
  });

  it('removes list items and nested fields by pointer, and ignores pointers the body does not have', async () => {
    const live = liveWith({ manager: 'x', operation: 'Update' });
    live.metadata.managedFields = live.metadata.managedFields?.slice(1); // helm owns none of them
    const body = await sent(live, [['spec', 'template', 'spec', 'containers', '0', 'image'], ['spec', 'paused'], ['metadata', 'annotations', 'a']]);
    assert.deepEqual(body.spec, { replicas: 1, template: { spec: { containers: [{ name: 'app' }] } } });
  });

  it('recreates a missing object as the chart renders it, ignored fields included (nobody else has set them)', async () => {
    const calls: Call[] = [];
    await repairObject(fakeClient(null, '1', calls), deployments, rendered, HELM_FIELD_MANAGER, { current: null, leaveAlone: [['spec', 'replicas']] });
    assert.equal(((calls.find((c) => c.method === 'PATCH')?.opts.body as KubeObject).spec as { replicas: number }).replicas, 1);
  });
});
