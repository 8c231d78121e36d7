/**
 * Dependent objects against the real control plane and real helm 4: discovery scopes, reading a
 * release back from its Secret, the label-filtered watcher, drift repair by server-side apply (and
 * that helm still upgrades afterwards), and readiness of a Deployment whose pods kwok runs.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { pino } from 'pino';
import { driftedFields } from '../../src/dependents/drift.js';
import { parseManifest, type DesiredObject } from '../../src/dependents/manifest.js';
import { readinessOf } from '../../src/dependents/readiness.js';
import { readReleaseManifest, readStoredRelease } from '../../src/helm/storage.js';
import { HELM_FIELD_MANAGER, repairObject } from '../../src/dependents/repair.js';
import { ScopeMap } from '../../src/dependents/scopes.js';
import { DependentWatcher, type DependentChange } from '../../src/dependents/watcher.js';
import { createKubeClient, loadKubeConfig, type KubeClient } from '../../src/kube/rest.js';
import type { KubeObject } from '../../src/kube/types.js';
import { OWNER_UID_LABEL } from '../../src/engines/helm/names.js';
import { repoRoot } from '../../devcluster/paths.js';
import { getJson, newNamespace, testCluster, type TestCluster } from './harness.js';
import { waitFor } from './wait.js';

const CHART = join(repoRoot(), 'charts', 'webapp');
const log = pino({ level: process.env.CHARTPILOT_TEST_LOG ?? 'silent' });

async function setup(): Promise<{ cluster: TestCluster; client: KubeClient }> {
  const cluster = await testCluster();
  const kc = loadKubeConfig({ files: [cluster.kubeconfig] });
  return { cluster, client: createKubeClient(kc, { userAgent: 'chartpilot-dependents-test' }) };
}

function startWatcher(t: TestContext, client: KubeClient, namespaces: string[]): { watcher: DependentWatcher; changes: [string, DependentChange][] } {
  const changes: [string, DependentChange][] = [];
  const watcher = new DependentWatcher({ client, namespaces, log, onChange: (uid, change) => changes.push([uid, change]) });
  t.after(() => watcher.stop());
  return { watcher, changes };
}

const seen = (changes: [string, DependentChange][], uid: string, type: DependentChange['type'], kind: string, name: string, specChanged?: boolean): boolean =>
  changes.some(
    ([u, c]) => u === uid && c.type === type && c.objectRef.kind === kind && c.objectRef.name === name && (specChanged === undefined || c.specChanged === specChanged),
  );

async function loadScopes(client: KubeClient): Promise<ScopeMap> {
  const scopes = new ScopeMap({ client, log });
  await scopes.refresh();
  return scopes;
}

function pick(objects: DesiredObject[], kind: string): DesiredObject {
  const o = objects.find((x) => x.kind === kind);
  assert.ok(o, `${kind} in the release manifest`);
  return o;
}

describe('dependent objects', () => {
  it('learns scopes from aggregated discovery v2 (Kubernetes 1.33)', async () => {
    const { client } = await setup();
    const scopes = await loadScopes(client);
    assert.equal(scopes.source, 'aggregated-v2');
    assert.equal(scopes.isNamespaced('apps/v1', 'Deployment'), true);
    assert.equal(scopes.isNamespaced('v1', 'Namespace'), false);
    assert.equal(scopes.isNamespaced('example.com/v1', 'Nope'), undefined);
    const cluster = scopes.clusterScopedKinds();
    for (const k of ['v1/Namespace', 'v1/PersistentVolume', 'rbac.authorization.k8s.io/v1/ClusterRole', 'apiextensions.k8s.io/v1/CustomResourceDefinition']) {
      assert.ok(cluster.includes(k), `${k} is cluster-scoped`);
    }
    assert.ok(!cluster.some((k) => k === 'v1/ConfigMap' || k === 'apps/v1/Deployment'));
  });

  it('watches only labelled objects and tells spec changes from status changes', async (t) => {
    const { cluster, client } = await setup();
    const ns = await newNamespace(t, 'dep-watch');
    const uid = randomUUID();
    // LoadBalancer: the only Service type whose status may be written (no controller here does).
    await cluster.helm(['install', 'web', CHART, '-n', ns, '--set', 'replicaCount=1', '--set', 'service.type=LoadBalancer']);
    await cluster.kubectl(['label', 'deployment/web', 'service/web', '-n', ns, `${OWNER_UID_LABEL}=${uid}`]);
    await cluster.kubectl(['create', 'configmap', 'plain', '-n', ns, '--from-literal=a=1']);
    const role = `dep-watch-${ns}`;
    await cluster.kubectl(['create', '-f', '-'], {
      input: JSON.stringify({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: role, labels: { [OWNER_UID_LABEL]: uid } }, rules: [] }),
    });
    t.after(async () => {
      await cluster.kubectl(['delete', 'clusterrole', role, '--ignore-not-found'], { allowFail: true });
    });

    const { watcher, changes } = startWatcher(t, client, [ns]);
    for (const [apiVersion, kind] of [['apps/v1', 'Deployment'], ['v1', 'Service'], ['v1', 'ConfigMap'], ['rbac.authorization.k8s.io/v1', 'ClusterRole']] as const) {
      await watcher.ensureWatching(apiVersion, kind);
    }
    await watcher.ensureWatching('example.com/v1', 'Nope'); // not served: skipped, no error
    assert.equal(watcher.isWatching('example.com/v1', 'Nope'), false);
    await watcher.waitForSync();

    const deployment = watcher.get('apps/v1', 'Deployment', ns, 'web');
    assert.ok(deployment?.spec !== undefined, 'the labelled Deployment is cached as a full object');
    assert.ok(watcher.get('v1', 'Service', ns, 'web'));
    assert.equal(watcher.get('v1', 'ConfigMap', ns, 'web-content'), undefined, 'the unlabelled chart ConfigMap is not cached');
    assert.equal(watcher.get('v1', 'ConfigMap', ns, 'plain'), undefined);
    assert.ok(watcher.get('rbac.authorization.k8s.io/v1', 'ClusterRole', undefined, role), 'cluster-scoped kinds are watched cluster-wide');

    await cluster.kubectl(['scale', 'deployment/web', '-n', ns, '--replicas=2']);
    await waitFor('spec change of Deployment web reported', () => Promise.resolve(seen(changes, uid, 'updated', 'Deployment', 'web', true)));

    const serviceReadiness = () => readinessOf([{ apiVersion: 'v1', kind: 'Service', namespace: ns, name: 'web', live: watcher.get('v1', 'Service', ns, 'web') }]);
    assert.equal(serviceReadiness().reason, 'LoadBalancerPending');
    const before = changes.length;
    await cluster.kubectl(['patch', 'service/web', '-n', ns, '--subresource=status', '--type=merge', '-p', '{"status":{"loadBalancer":{"ingress":[{"ip":"192.0.2.10"}]}}}']);
    await waitFor('status change of Service web reported', () => Promise.resolve(seen(changes.slice(before), uid, 'updated', 'Service', 'web', false)));
    assert.ok(!seen(changes.slice(before), uid, 'updated', 'Service', 'web', true), 'a status patch is not a spec change');
    assert.equal(serviceReadiness().ready, true, 'the cached Service carries the new status');

    // Labelling an object brings it into the watch; deleting it is reported.
    await cluster.kubectl(['label', 'configmap/plain', '-n', ns, `${OWNER_UID_LABEL}=${uid}`]);
    await waitFor('ConfigMap plain added', () => Promise.resolve(seen(changes, uid, 'added', 'ConfigMap', 'plain', true)));
    await cluster.kubectl(['delete', 'configmap/plain', '-n', ns]);
    await waitFor('ConfigMap plain deleted', () => Promise.resolve(seen(changes, uid, 'deleted', 'ConfigMap', 'plain')));
    assert.equal(watcher.get('v1', 'ConfigMap', ns, 'plain'), undefined);
    assert.ok(changes.every(([u]) => u === uid), 'every event names the owner from the label');
  });

  it('repairs drift as helm would: recreates a deleted Service, restores replicas, keeps others’ labels, and helm upgrades afterwards', async (t) => {
    const { cluster, client } = await setup();
    const ns = await newNamespace(t, 'dep-repair');
    await cluster.helm(['install', 'web', CHART, '-n', ns, '--set', 'replicaCount=1']);

    const record = await readStoredRelease(client, ns, 'web', 1);
    assert.equal(record?.applyMethod, 'ssa', 'helm 4 installs with server-side apply by default');
    const manifest = await readReleaseManifest(client, ns, 'web', 1);
    assert.ok(manifest);
    const scopes = await loadScopes(client);
    const desired = parseManifest(manifest, ns, (a, k) => scopes.isNamespaced(a, k));
    const deploy = pick(desired, 'Deployment');
    const service = pick(desired, 'Service');
    const configMap = pick(desired, 'ConfigMap');

    // Helm's own field manager, as it applied the objects.
    const managed = await getJson<KubeObject>(cluster, ['get', 'deployment/web', '-n', ns, '--show-managed-fields']);
    assert.ok((managed.metadata.managedFields as { manager: string; operation: string }[]).some((m) => m.manager === HELM_FIELD_MANAGER && m.operation === 'Apply'));

    const live = async (kind: string, name: string): Promise<KubeObject> => getJson<KubeObject>(cluster, ['get', kind, name, '-n', ns]);
    for (const d of desired) assert.deepEqual(driftedFields(d.object, await live(d.kind, d.name)), [], `${d.kind} as installed has no drift`);

    await cluster.kubectl(['delete', 'service/web', '-n', ns]);
    await cluster.kubectl(['scale', 'deployment/web', '-n', ns, '--replicas=3']);
    await cluster.kubectl(['label', 'deployment/web', '-n', ns, 'team=blue']);
    assert.deepEqual(driftedFields(deploy.object, await live('deployment', 'web')), ['spec.replicas']);

    const release = { name: 'web', namespace: ns };
    const repair = async (d: DesiredObject): Promise<string> =>
      repairObject(client, await client.resourceFor(d.apiVersion, d.kind), d, HELM_FIELD_MANAGER, { release });
    assert.equal(await repair(service), 'created');
    assert.equal(await repair(deploy), 'updated');
    assert.equal(await repair(deploy), 'unchanged');
    assert.equal(await repair(configMap), 'unchanged');

    const repaired = await live('deployment', 'web');
    assert.equal((repaired.spec as { replicas: number }).replicas, 1);
    assert.equal(repaired.metadata.labels?.team, 'blue', 'a label someone else added survives');
    assert.equal(repaired.metadata.annotations?.['meta.helm.sh/release-name'], 'web');
    assert.equal(repaired.metadata.annotations['meta.helm.sh/release-namespace'], ns);
    const svc = await live('service', 'web');
    assert.equal(svc.metadata.labels?.['app.kubernetes.io/managed-by'], 'Helm');
    assert.equal(svc.metadata.annotations?.['meta.helm.sh/release-name'], 'web');
    for (const d of desired) assert.deepEqual(driftedFields(d.object, await live(d.kind, d.name)), [], `${d.kind} has no drift after the repair`);

    // helm owns the same fields it did before: an upgrade that changes one has nothing to conflict with.
    const upgrade = await cluster.helm(['upgrade', 'web', CHART, '-n', ns, '--set', 'replicaCount=2'], { allowFail: true });
    assert.equal(upgrade.exitCode, 0, upgrade.stderr);
    const upgraded = await live('deployment', 'web');
    assert.equal((upgraded.spec as { replicas: number }).replicas, 2);
    assert.equal(upgraded.metadata.labels?.team, 'blue');
  });

  it('shows why repairs use helm’s field manager: under another manager the next helm upgrade conflicts', async (t) => {
    const { cluster, client } = await setup();
    const ns = await newNamespace(t, 'dep-manager');
    await cluster.helm(['install', 'web', CHART, '-n', ns, '--set', 'replicaCount=1']);
    const manifest = await readReleaseManifest(client, ns, 'web', 1);
    assert.ok(manifest);
    const deploy = pick(parseManifest(manifest, ns, () => true), 'Deployment');
    await cluster.kubectl(['scale', 'deployment/web', '-n', ns, '--replicas=3']);
    const resource = await client.resourceFor('apps/v1', 'Deployment');
    assert.equal(await repairObject(client, resource, deploy, 'someone-else', { release: { name: 'web', namespace: ns } }), 'updated');
    const upgrade = await cluster.helm(['upgrade', 'web', CHART, '-n', ns, '--set', 'replicaCount=2'], { allowFail: true });
    assert.notEqual(upgrade.exitCode, 0);
    assert.match(upgrade.stderr, /conflict with "someone-else".*\.spec\.replicas/);
  });

  it('reports a Deployment not ready while its pods cannot run, and ready once kwok runs them', async (t) => {
    const { cluster, client } = await setup();
    const ns = await newNamespace(t, 'dep-ready');
    const uid = randomUUID();
    const deployment = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'slow', namespace: ns, labels: { [OWNER_UID_LABEL]: uid } },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: 'slow' } },
        template: {
          metadata: { labels: { app: 'slow' } },
          // No node has this label: the pods stay Pending until the selector goes.
          spec: { nodeSelector: { 'chartpilot.test/nowhere': 'true' }, containers: [{ name: 'c', image: 'nginx:1.27' }] },
        },
      },
    };
    await cluster.kubectl(['create', '-f', '-'], { input: JSON.stringify(deployment) });

    const { watcher, changes } = startWatcher(t, client, [ns]);
    await watcher.ensureWatching('apps/v1', 'Deployment');
    await watcher.waitForSync();
    const readiness = () => readinessOf([{ apiVersion: 'apps/v1', kind: 'Deployment', namespace: ns, name: 'slow', live: watcher.get('apps/v1', 'Deployment', ns, 'slow') }]);

    const pending = await waitFor('Deployment slow observed with no available replicas', () => {
      const r = readiness();
      return Promise.resolve(r.message === 'Deployment slow: 0/2 replicas available' ? r : undefined);
    });
    assert.equal(pending.ready, false);
    assert.equal(pending.reason, 'DeploymentNotAvailable');
    assert.equal(readinessOf([{ apiVersion: 'v1', kind: 'Service', namespace: ns, name: 'absent', live: undefined }]).reason, 'ResourceMissing');

    await cluster.kubectl(['patch', 'deployment/slow', '-n', ns, '--type=json', '-p', '[{"op":"remove","path":"/spec/template/spec/nodeSelector"}]']);
    const ready = await waitFor('Deployment slow ready', () => {
      const r = readiness();
      return Promise.resolve(r.ready ? r : undefined);
    }, { timeoutMs: 90_000 });
    assert.equal(ready.reason, 'AllResourcesReady');
    assert.ok(seen(changes, uid, 'updated', 'Deployment', 'slow', true), 'the template change was a spec change');
    assert.ok(seen(changes, uid, 'updated', 'Deployment', 'slow', false), 'the rollout progress arrived as status-only changes');
  });
});
