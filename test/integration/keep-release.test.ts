/**
 * The operator keeps what it deployed the way the chart says (drift repair without a new
 * revision), owns what it may, tells readiness from the workloads, and refuses objects outside
 * the CR's namespace unless the watches entry allows them.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { condition, eventsFor, helmList } from './crs.js';
import { SAMPLE_CHART, fixtureChart } from './fixtures.js';
import { operatorScenario } from './scenario.js';
import { waitFor } from './wait.js';

interface Obj {
  metadata: { labels?: Record<string, string>; annotations?: Record<string, string>; ownerReferences?: { kind: string; name: string; controller?: boolean }[] };
  spec?: { replicas?: number };
}

describe('keeping the release true', () => {
  it('recreates a deleted object and restores a changed field without a new revision, keeping others’ labels', async (t) => {
    const { cluster, ns, kind: k, op, cr } = await operatorScenario(t, { kind: 'Drift', chart: SAMPLE_CHART });
    await cr.apply('web', { replicaCount: 2 });
    const deployed = await cr.deployed('web');
    const inventory = (deployed.status?.deployedRelease as { inventory?: { kind: string; name: string }[] } | undefined)?.inventory ?? [];
    assert.deepEqual(inventory.map((i) => `${i.kind}/${i.name}`).sort(), ['ConfigMap/web-content', 'Deployment/web', 'Service/web']);

    const svc = JSON.parse((await cluster.kubectl(['get', 'service', 'web', '-n', ns, '-o', 'json'])).stdout) as Obj;
    assert.deepEqual(
      svc.metadata.ownerReferences?.map((r) => `${r.kind}/${r.name}/${String(r.controller)}`),
      [`${k.kind}/web/true`],
      'same-namespace objects are owned by the CR',
    );

    await cluster.kubectl(['label', 'deployment', 'web', '-n', ns, 'team=payments']);
    await cluster.kubectl(['scale', 'deployment', 'web', '-n', ns, '--replicas=5']);
    await waitFor('replicas restored to 2', async () => {
      const d = JSON.parse((await cluster.kubectl(['get', 'deployment', 'web', '-n', ns, '-o', 'json'])).stdout) as Obj;
      return d.spec?.replicas === 2 ? d : undefined;
    }, { timeoutMs: 30_000 });
    const d = JSON.parse((await cluster.kubectl(['get', 'deployment', 'web', '-n', ns, '-o', 'json'])).stdout) as Obj;
    assert.equal(d.metadata.labels?.['team'], 'payments', 'a label someone else added survives');

    await cluster.kubectl(['delete', 'service', 'web', '-n', ns, '--wait=true']);
    await waitFor('service recreated', async () => (await cluster.kubectl(['get', 'service', 'web', '-n', ns], { allowFail: true })).exitCode === 0, {
      timeoutMs: 30_000,
    });

    const releases = await helmList(cluster, ns);
    assert.equal(String(releases[0]?.revision), '1', 'drift repair creates no Helm revision');
    const events = (await eventsFor(cluster, ns, 'web')).filter((e) => e.reason === 'DriftRepaired');
    assert.ok(events.some((e) => e.message.startsWith('Deployment web had drifted (spec.replicas)')), JSON.stringify(events));
    assert.ok(events.some((e) => e.message.startsWith('Service web was missing; recreated it')), JSON.stringify(events));
    assert.equal(op.helmCalls().filter((c) => c.startsWith('upgrade')).length, 1, 'no helm run for a repair');

    // A helm upgrade after repairs still applies cleanly (repairs use Helm's field manager).
    await cr.apply('web', { replicaCount: 3 });
    await cr.until('web', 'revision 2', (c) => c.status?.deployedRelease?.revision === 2 && condition(c, 'ReleaseFailed') === undefined);
  });

  it('keeps Ready=False with a reason while pods cannot run, then turns it True', async (t) => {
    const { cluster, cr } = await operatorScenario(t, { kind: 'Ready', chart: SAMPLE_CHART });
    const pool = `pool-${randomBytes(3).toString('hex')}`;
    await cr.apply('app', { replicaCount: 2, nodeSelector: { pool } });
    // The rollout's progress is retold at most every few seconds (status pacing): wait for the
    // message that names the replicas.
    const waiting = await cr.until(
      'app',
      'Ready=False naming the replicas',
      (c) => condition(c, 'Deployed')?.status === 'True' && condition(c, 'Ready')?.status === 'False' && /0\/2/.test(condition(c, 'Ready')?.message ?? ''),
    );
    assert.equal(condition(waiting, 'Ready')?.reason, 'DeploymentNotAvailable');
    assert.match(condition(waiting, 'Ready')?.message ?? '', /^Deployment app: 0\/2 replicas (updated|available)$/);

    // A node the pods may run on appears: kwok runs them, the Deployment becomes available.
    const node = `kwok-${pool}`;
    t.after(async () => {
      await cluster.kubectl(['delete', 'node', node, '--wait=false'], { allowFail: true });
    });
    await cluster.kubectl(['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name: node, annotations: { 'kwok.x-k8s.io/node': 'fake' }, labels: { type: 'kwok', pool, 'kubernetes.io/hostname': node } },
        status: { allocatable: { cpu: '8', memory: '16Gi', pods: '100' }, capacity: { cpu: '8', memory: '16Gi', pods: '100' } },
      }),
    });
    const ready = await cr.until('app', 'Ready=True', (c) => condition(c, 'Ready')?.status === 'True', 120_000);
    assert.equal(condition(ready, 'Ready')?.reason, 'AllResourcesReady');
    assert.equal(ready.status?.deployedRelease?.revision, 1);
  });

  it('refuses cluster-scoped objects unless the entry allows them, then annotates instead of owning', async (t) => {
    const { cluster, ns, crs: [refused, allowed] } = await operatorScenario(t, {
      namespace: 'confine',
      watches: [
        { kind: 'Confined', chart: fixtureChart('cluster-scoped') },
        { kind: 'Allowed', chart: fixtureChart('cluster-scoped'), extra: { allowClusterScoped: true } },
      ],
    });
    const suffix = randomBytes(3).toString('hex');
    await refused.apply(`no-${suffix}`, {});
    const failed = await refused.until(`no-${suffix}`, 'ReleaseFailed', (c) => condition(c, 'ReleaseFailed')?.status === 'True');
    const message = condition(failed, 'ReleaseFailed')?.message ?? '';
    assert.match(message, new RegExp(`cluster-scoped ClusterRole no-${suffix}-reader`));
    assert.match(message, /allowClusterScoped: true/);
    assert.equal((await cluster.kubectl(['get', 'clusterrole', `no-${suffix}-reader`], { allowFail: true })).exitCode, 1, 'nothing applied');

    await allowed.apply(`yes-${suffix}`, {});
    await allowed.deployed(`yes-${suffix}`);
    t.after(async () => {
      await cluster.kubectl(['delete', 'clusterrole', `yes-${suffix}-reader`, '--wait=false'], { allowFail: true });
    });
    const role = JSON.parse((await cluster.kubectl(['get', 'clusterrole', `yes-${suffix}-reader`, '-o', 'json'])).stdout) as Obj;
    assert.equal(role.metadata.ownerReferences, undefined, 'no ownerReference on a cluster-scoped object');
    assert.equal(role.metadata.annotations?.['operator-sdk/primary-resource'], `${ns}/yes-${suffix}`);
    assert.equal(role.metadata.annotations['operator-sdk/primary-resource-type'], `${allowed.kind.kind}.${allowed.kind.group}`);
  });
});
