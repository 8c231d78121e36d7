// The local control plane is a real cluster: a schedulable simulated node, Deployments that get
// Running/Ready pods, Helm installs and uninstalls, garbage collection of dependents, and a
// properly stamped /version.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { NODE_NAME } from '../../devcluster/control-plane.js';
import { repoRoot } from '../../devcluster/paths.js';
import { applyYaml, getJson, newNamespace, testCluster } from './harness.js';
import { waitFor } from './wait.js';

interface Condition { type: string; status: string }
interface List<T> { items: T[] }
interface Node { metadata: { name: string }; status?: { conditions?: Condition[] } }
interface Pod { metadata: { name: string }; spec?: { nodeName?: string }; status?: { phase?: string; podIP?: string; conditions?: Condition[] } }
interface Deployment { status?: { readyReplicas?: number } }
interface ConfigMap { metadata: { uid: string }; data?: Record<string, string> }
interface Release { name: string; status: string; chart: string }

const c = await testCluster();

const isTrue = (conditions: Condition[] | undefined, type: string): boolean =>
  conditions?.some((x) => x.type === type && x.status === 'True') ?? false;

/** true once `kubectl get <args>` says NotFound (any other failure keeps waiting and is reported). */
async function gone(args: string[]): Promise<boolean> {
  const r = await c.kubectl(['get', ...args], { allowFail: true });
  if (r.exitCode === 0) return false;
  if (/NotFound|not found/.test(r.stderr)) return true;
  throw new Error(r.stderr);
}

// The tests are independent (own namespaces), so they run concurrently to keep the file short.
describe('local control plane', { concurrency: true }, () => {
  it('the simulated node is Ready', async () => {
    const nodes = await getJson<List<Node>>(c, ['get', 'nodes', '-l', 'type=kwok']);
    assert.deepEqual(nodes.items.map((n) => n.metadata.name), [NODE_NAME]);
    assert.ok(isTrue(nodes.items[0]?.status?.conditions, 'Ready'), `node conditions: ${JSON.stringify(nodes.items[0]?.status?.conditions)}`);
  });

  it('a Deployment applied with kubectl gets Running, Ready pods', async (t) => {
    const ns = await newNamespace(t, 'deploy');
    await applyYaml(c, `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector: { matchLabels: { app: web } }
  template:
    metadata: { labels: { app: web } }
    spec:
      containers: [{ name: web, image: registry.k8s.io/pause:3.10 }]
`, ns);
    const pods = await waitFor('2 Running and Ready pods of deployment web', async () => {
      const list = await getJson<List<Pod>>(c, ['get', 'pods', '-n', ns, '-l', 'app=web']);
      const ready = list.items.filter((p) => p.status?.phase === 'Running' && isTrue(p.status.conditions, 'Ready'));
      return ready.length === 2 ? ready : undefined;
    });
    // Scheduled by kube-scheduler onto the kwok node, which gave them IPs from its CIDR.
    for (const p of pods) {
      assert.equal(p.spec?.nodeName, NODE_NAME);
      assert.match(p.status?.podIP ?? '', /^10\.244\./);
    }
    await waitFor('deployment web to report 2 ready replicas', async () =>
      (await getJson<Deployment>(c, ['get', 'deployment', 'web', '-n', ns])).status?.readyReplicas === 2);
  });

  it('helm installs, lists and uninstalls a chart', async (t) => {
    const ns = await newNamespace(t, 'helm');
    const chart = join(repoRoot(), 'test', 'fixtures', 'charts', 'tiny');
    // The chart declares kubeVersion >=1.33, so this also fails on an unstamped API server.
    await c.helm(['upgrade', '--install', 'tiny', chart, '-n', ns, '--set', 'message=from-test', '--wait', '--timeout', '2m']);

    const releases = JSON.parse((await c.helm(['list', '-n', ns, '-o', 'json'])).stdout) as Release[];
    assert.deepEqual(releases.map((r) => [r.name, r.status, r.chart]), [['tiny', 'deployed', 'tiny-0.1.0']]);
    const cm = await getJson<ConfigMap>(c, ['get', 'configmap', 'tiny-tiny', '-n', ns]);
    assert.equal(cm.data?.message, 'from-test');
    const deploy = await getJson<Deployment>(c, ['get', 'deployment', 'tiny-tiny', '-n', ns]);
    assert.equal(deploy.status?.readyReplicas, 1, '--wait returned before the Deployment was ready');

    await c.helm(['uninstall', 'tiny', '-n', ns, '--wait', '--timeout', '2m']);
    await waitFor('the release objects to be deleted', async () =>
      await gone(['configmap', 'tiny-tiny', '-n', ns]) && await gone(['deployment', 'tiny-tiny', '-n', ns]));
    const after = JSON.parse((await c.helm(['list', '-n', ns, '-o', 'json'])).stdout) as Release[];
    assert.deepEqual(after, []);
    // No release history kept either (helm 4's list has no --all; status reads the storage).
    const status = await c.helm(['status', 'tiny', '-n', ns], { allowFail: true });
    assert.notEqual(status.exitCode, 0);
    assert.match(status.stderr, /not found/);
  });

  it('deleting an owner garbage-collects its dependents', async (t) => {
    const ns = await newNamespace(t, 'gc');
    await c.kubectl(['create', 'configmap', 'owner', '-n', ns, '--from-literal=role=owner']);
    await c.kubectl(['create', 'configmap', 'bystander', '-n', ns, '--from-literal=role=bystander']);
    const owner = await getJson<ConfigMap>(c, ['get', 'configmap', 'owner', '-n', ns]);
    await applyYaml(c, JSON.stringify({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'dependent', ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata.uid }] },
      data: { role: 'dependent' },
    }), ns);

    await c.kubectl(['delete', 'configmap', 'owner', '-n', ns]);
    await waitFor('the garbage collector to delete configmap dependent', () => gone(['configmap', 'dependent', '-n', ns]));
    // Only the dependent went: the collector followed the ownerReference, nothing swept the namespace.
    assert.equal((await getJson<ConfigMap>(c, ['get', 'configmap', 'bystander', '-n', ns])).data?.role, 'bystander');
  });

  it('/version reports a stamped v1.33.x', async () => {
    const v = JSON.parse((await c.kubectl(['get', '--raw', '/version'])).stdout) as { gitVersion: string; major: string; minor: string };
    assert.match(v.gitVersion, /^v1\.33\.\d+$/);
    assert.equal(v.major, '1');
    assert.equal(v.minor, '33');
  });
});
