/**
 * Switching an operator-sdk helm project to chartpilot by changing only the image: a project
 * shaped like operator-sdk's `memcached-operator` sample (its own chart, a watches file, the RBAC
 * operator-sdk generates for such a chart with the leader-election Role and the metrics-auth
 * ClusterRole), run with exactly the scaffolded Deployment's args and only its ServiceAccount's
 * token. Metrics are HTTPS and answer only to tokens the API server authorizes.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { stringify } from 'yaml';
import { installCrd, testKind, type TestKind } from './crd.js';
import { condition, crsOf } from './crs.js';
import { applyYaml, newNamespace, testCluster, type TestCluster } from './harness.js';
import { serviceAccountToken, tokenKubeconfig } from './identity.js';
import { startOperator, type RunningOperator } from './operator.js';
import { onScaffoldPorts, METRICS_PORT, operatorSdkRbac, SCAFFOLD_ARGS, writeChart } from './operator-sdk-project.js';
import { metric, scrapeHttps, type Scrape } from './scrape.js';
import { waitFor } from './wait.js';

interface Project {
  readonly cluster: TestCluster;
  readonly kind: TestKind;
  readonly ns: string;
  readonly dir: string;
  readonly prefix: string;
  /** KUBECONFIG acting as the controller-manager ServiceAccount. */
  readonly kubeconfig: string;
}

/** The project on disk, its CRD, namespace, ServiceAccount and RBAC in the cluster (minus `without`). */
async function scaffold(t: TestContext, suffix: string, without: (doc: Record<string, unknown>) => boolean = () => false): Promise<Project> {
  const cluster = await testCluster();
  const kind = testKind(suffix);
  await installCrd(cluster, kind);
  const ns = await newNamespace(t, 'memcached-operator');
  const prefix = `osdk-${randomBytes(4).toString('hex')}`;
  t.after(async () => {
    await cluster.kubectl(['delete', 'clusterrole,clusterrolebinding', '-l', `chartpilot-test=${prefix}`, '--ignore-not-found'], { allowFail: true });
  });
  const dir = mkdtempSync(join(tmpdir(), 'chartpilot-osdk-'));
  const chart = writeChart(dir);
  writeFileSync(join(dir, 'watches.yaml'), stringify([{ group: kind.group, version: kind.version, kind: kind.kind, chart }]));
  await cluster.kubectl(['create', 'serviceaccount', 'controller-manager', '-n', ns]);
  const docs = operatorSdkRbac(kind, ns, prefix).filter((d) => !without(d));
  await applyYaml(cluster, docs.map((d) => stringify(d)).join('---\n'));
  return { cluster, kind, ns, dir, prefix, kubeconfig: tokenKubeconfig(cluster, dir, await serviceAccountToken(cluster, ns, 'controller-manager')) };
}

/** The operator on the project, as the Deployment would run it: its args, its token, its namespace. */
function runAsScaffolded(t: TestContext, p: Project, opts: { noWait?: boolean } = {}): Promise<RunningOperator> {
  return onScaffoldPorts(t, () => startOperator(t, p.cluster, {
    dir: p.dir,
    watches: [],
    namespaces: [],
    args: SCAFFOLD_ARGS,
    // In a pod the namespace comes from the ServiceAccount mount; POD_NAMESPACE stands in for it here.
    env: { KUBECONFIG: p.kubeconfig, POD_NAMESPACE: p.ns },
    ...opts,
  }));
}

/** What Prometheus gets from the operator's metrics port. */
const scrape = (token?: string): Promise<Scrape> => scrapeHttps(METRICS_PORT, token);

describe('an operator-sdk scaffolded project, switched to chartpilot', () => {
  it('runs with the scaffold args and its ServiceAccount only; metrics answer 401, 403 or 200 by token', async (t) => {
    const p = await scaffold(t, 'Memcached');
    const { cluster, ns, kind } = p;
    // Prometheus' identity, bound to metrics-reader as the scaffold's ServiceMonitor setup expects,
    // and one with no binding at all.
    await cluster.kubectl(['create', 'serviceaccount', 'prometheus', '-n', ns]);
    await cluster.kubectl(['create', 'serviceaccount', 'stranger', '-n', ns]);
    await cluster.kubectl(['create', 'clusterrolebinding', `${p.prefix}-prometheus`, `--clusterrole=${p.prefix}-metrics-reader`, `--serviceaccount=${ns}:prometheus`]);
    await cluster.kubectl(['label', 'clusterrolebinding', `${p.prefix}-prometheus`, `chartpilot-test=${p.prefix}`]);
    // The operator's identity really is only what operator-sdk generates: it cannot read, say, nodes.
    const canListNodes = await cluster.kubectl(['auth', 'can-i', 'list', 'nodes', '--as', `system:serviceaccount:${ns}:controller-manager`], { allowFail: true });
    assert.equal(canListNodes.stdout.trim(), 'no');

    const op = await runAsScaffolded(t, p);
    const cr = crsOf(cluster, kind, ns, op);
    await cr.apply('memcached-sample', { replicaCount: 2 });
    const deployed = await cr.deployed('memcached-sample');
    assert.equal(condition(deployed, 'Deployed')?.reason, 'InstallSuccessful');
    await cr.until('memcached-sample', 'Ready', (c) => condition(c, 'Ready')?.status === 'True');
    const lease = await cluster.kubectl(['get', 'lease', 'memcached-operator', '-n', ns, '-o', 'jsonpath={.spec.holderIdentity}']);
    assert.notEqual(lease.stdout.trim(), '', 'leader election ran on the scaffold id, in its namespace');

    const none = await scrape();
    assert.equal(none.status, 401);
    assert.doesNotMatch(none.body, /controller_runtime/);
    assert.equal((await scrape('not-a-token')).status, 401);
    const forbidden = await scrape(await serviceAccountToken(cluster, ns, 'stranger'));
    assert.equal(forbidden.status, 403);
    assert.match(forbidden.body, new RegExp(`system:serviceaccount:${ns}:stranger may not get /metrics`));

    const reader = await serviceAccountToken(cluster, ns, 'prometheus');
    const series = { group: kind.group, version: kind.version, kind: kind.kind, namespace: ns, name: 'memcached-sample' };
    const ok = await scrape(reader);
    assert.equal(ok.status, 200, ok.body);
    assert.ok((metric(ok.body, 'controller_runtime_reconcile_total', { controller: kind.kind.toLowerCase() }) ?? 0) > 0, 'reconciles counted');
    const createdAt = metric(ok.body, 'resource_created_at_seconds', series);
    const created = await cluster.kubectl(['get', kind.plural, 'memcached-sample', '-n', ns, '-o', 'jsonpath={.metadata.creationTimestamp}']);
    assert.equal(createdAt, Date.parse(created.stdout) / 1000, "the CR's creation time");

    await cr.delete('memcached-sample');
    await cr.gone('memcached-sample');
    await waitFor('the CR series to go', async () => {
      const after = await scrape(reader);
      return after.status === 200 && metric(after.body, 'resource_created_at_seconds', series) === undefined;
    });
    assert.doesNotMatch(op.logs(), /forbidden|cannot list/i, 'nothing was refused to the scaffolded identity');
  });

  it('without the metrics-auth role binding it stops at start, naming the missing permissions', async (t) => {
    const p = await scaffold(t, 'MemcachedNoAuth', (d) => d['kind'] === 'ClusterRoleBinding' && (d['metadata'] as { name: string }).name.endsWith('-metrics-auth-rolebinding'));
    const op = await runAsScaffolded(t, p, { noWait: true });
    assert.equal(await op.exitCode(40_000), 3, op.logs());
    assert.match(
      op.logs(),
      /missing permissions it needs: create subjectaccessreviews\.authorization\.k8s\.io \(cluster-scoped\); create tokenreviews\.authentication\.k8s\.io \(cluster-scoped\)\./,
    );
  });
});
