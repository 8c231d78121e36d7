/**
 * The generated bundle installed by the real Operator Lifecycle Manager: OLM's `olm` and `catalog`
 * operators run as local processes against the test control plane, the generated catalog is
 * served by `opm serve` on loopback, and a Subscription installs the operator (CSV Succeeded,
 * CRDs established, Deployment and RBAC as the CSV says). chartpilot itself then runs with a
 * token of the ServiceAccount OLM created and reconciles the CSV's own example to Ready: proof
 * that the bundle's permissions are enough. Finally an upgrade 0.1.0 → 0.2.0 through the channel
 * replaces the CSV and keeps the CR and its release.
 *
 * OLM acts only where an OperatorGroup is (an OwnNamespace one in the test's namespace; the olm
 * operator cannot be confined with --watchedNamespaces, it crashes without an all-namespaces
 * informer) and the kind's group is unique per run, so other test files sharing the cluster see
 * nothing of it.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { execa } from 'execa';
import { established } from './crd.js';
import { SAMPLE_CHART } from './fixtures.js';
import { applyYaml, getJson, newNamespace, testCluster, type TestCluster } from './harness.js';
import { serviceAccountToken, tokenKubeconfig } from './identity.js';
import { generate, HUB_FLAGS, ICON_SVG, olmToolsBeforeAll } from './olm-tools.js';
import { startOperator } from './operator.js';
import { explained, waitFor } from './wait.js';
import { freePort } from '../../devcluster/ports.js';

/** Starts a long-running tool, its output in dir/<name>.log, killed when the test ends. */
function background(t: TestContext, dir: string, name: string, file: string, args: string[], env: Record<string, string>): { log: () => string } {
  const logFile = join(dir, `${name}.log`);
  writeFileSync(logFile, '');
  const proc = execa(file, args, { env, extendEnv: false, reject: false, all: true, buffer: false, cleanup: true, stdin: 'ignore' });
  proc.all.on('data', (chunk: Buffer) => { appendFileSync(logFile, chunk); });
  t.after(async () => {
    proc.kill('SIGKILL');
    await proc;
  });
  // The last 4 KB: enough for a failure message.
  return { log: () => readFileSync(logFile, 'utf8').slice(-4000) };
}

interface Csv { metadata: { name: string; annotations?: Record<string, string> }; status?: { phase?: string; message?: string } }
interface InstallPlan { metadata: { name: string }; spec: { approved: boolean; clusterServiceVersionNames: string[] }; status?: { phase?: string } }

const olmTools = olmToolsBeforeAll();

describe('OLM installs the generated bundle', () => {
  it('Subscription → CSV Succeeded; chartpilot as the ServiceAccount OLM made reconciles the example; 0.1.0 → 0.2.0 keeps CR and release', async (t) => {
    const cluster = await testCluster();
    const tools = olmTools();
    const ns = await newNamespace(t, 'olm');
    const dir = mkdtempSync(join(tmpdir(), 'chartpilot-olm-install-'));
    const group = `olm${randomBytes(3).toString('hex')}.test.chartpilot.io`;
    const crdName = `webapps.${group}`;
    const pkg = 'webapp-operator';
    const sa = 'webapp-operator';
    const env = { ...cluster.env };
    await cleanupAfter(t, cluster, ns, crdName, pkg);

    // OLM's CRDs (cluster-wide; applying them again is a no-op).
    const crdDir = (await execa(join(tools.bin, 'olm-crds-dir'))).stdout.trim();
    for (const f of readdirSync(crdDir).sort()) {
      await cluster.kubectl(['apply', '--server-side', '--force-conflicts', '-f', join(crdDir, f)]);
    }
    for (const plural of ['catalogsources', 'clusterserviceversions', 'installplans', 'operatorgroups', 'subscriptions', 'operatorconditions', 'olmconfigs', 'operators']) {
      await established(cluster, `${plural}.operators.coreos.com`);
    }

    // Two bundles and a catalog over both, as a user makes them.
    writeFileSync(join(dir, 'watches.yaml'), `- {group: ${group}, version: v1alpha1, kind: WebApp, chart: ${SAMPLE_CHART}}\n`);
    writeFileSync(join(dir, 'icon.svg'), ICON_SVG);
    const common = ['--offline', '--package', pkg, '--name', pkg, '--service-account', sa, '--icon', 'icon.svg', ...HUB_FLAGS, '--channels', 'alpha'];
    await generate(dir, ['bundle', '--version', '0.1.0', '--output-dir', 'v0.1.0', ...common]);
    await generate(dir, ['bundle', '--version', '0.2.0', '--output-dir', 'v0.2.0', '--replaces', '0.1.0', ...common]);
    await generate(dir, ['catalog', 'v0.1.0', 'v0.2.0', '--output-dir', 'catalog']);

    const port = await freePort();
    const opm = background(t, dir, 'opm', tools.opm, ['serve', join(dir, 'catalog'), '-p', String(port), '--pprof-addr', '127.0.0.1:0', '-t', join(dir, 'opm-termination.log')], env);
    const olmEnv = { ...env, KUBECONFIG: cluster.kubeconfig };
    const olm = background(t, dir, 'olm', join(tools.bin, 'olm'), ['--namespace', ns, '--writeStatusName', '', '--writePackageServerStatusName', ''], olmEnv);
    const catalog = background(t, dir, 'catalog', join(tools.bin, 'olm-catalog'), ['--namespace', ns, '--writeStatusName', '', '--kubeconfig', cluster.kubeconfig], olmEnv);
    let lastPlans = '';
    const logs = (): string => `--- install plans\n${lastPlans}\n--- opm\n${opm.log()}\n--- olm\n${olm.log()}\n--- catalog\n${catalog.log()}`;

    await applyYaml(
      cluster,
      [
        `{"apiVersion":"operators.coreos.com/v1alpha1","kind":"CatalogSource","metadata":{"name":"chartpilot"},"spec":{"sourceType":"grpc","address":"127.0.0.1:${String(port)}","displayName":"chartpilot test catalog"}}`,
        `---\n{"apiVersion":"operators.coreos.com/v1","kind":"OperatorGroup","metadata":{"name":"own"},"spec":{"targetNamespaces":["${ns}"]}}`,
        `---\n{"apiVersion":"operators.coreos.com/v1alpha1","kind":"Subscription","metadata":{"name":"${pkg}"},"spec":{"channel":"alpha","name":"${pkg}","source":"chartpilot","sourceNamespace":"${ns}","installPlanApproval":"Manual","startingCSV":"${pkg}.v0.1.0"}}`,
      ].join('\n'),
      ns,
    );

    // The plan the Subscription points at, once OLM has resolved it and waits for approval (OLM may
    // create and drop plans before that).
    const approve = async (csvName: string): Promise<void> => {
      const plan = await explained(
        waitFor(`the Subscription's InstallPlan for ${csvName}, awaiting approval`, async () => {
          const sub = await getJson<{ status?: { installPlanRef?: { name: string } } }>(cluster, ['get', 'subscription', pkg, '-n', ns]);
          const ref = sub.status?.installPlanRef?.name;
          if (ref === undefined) return undefined;
          const p = await getJson<InstallPlan>(cluster, ['get', 'installplan', ref, '-n', ns]);
          return p.spec.clusterServiceVersionNames.includes(csvName) && p.status?.phase === 'RequiresApproval' ? p : undefined;
        }, { timeoutMs: 120_000 }),
        logs,
      );
      await cluster.kubectl(['patch', 'installplan', plan.metadata.name, '-n', ns, '--type', 'merge', '-p', '{"spec":{"approved":true}}']);
    };
    const succeeded = (csvName: string): Promise<Csv> =>
      explained(
        waitFor(`CSV ${csvName} Succeeded`, async () => {
          lastPlans = (await cluster.kubectl(['get', 'installplans', '-n', ns, '-o', 'jsonpath={range .items[*]}{.metadata.name} {.spec.clusterServiceVersionNames} {.status.phase} {.status.conditions}{"\\n"}{end}'], { allowFail: true })).stdout;
          const csv = await getJson<Csv>(cluster, ['get', 'csv', csvName, '-n', ns]);
          return csv.status?.phase === 'Succeeded' ? csv : undefined;
        }, { timeoutMs: 180_000, intervalMs: 1000 }),
        logs,
      );

    await approve(`${pkg}.v0.1.0`);
    const csv = await succeeded(`${pkg}.v0.1.0`);
    await established(cluster, crdName);

    // The Deployment and RBAC as the CSV says: WATCH_NAMESPACE from the OperatorGroup, the Role of
    // `permissions` in the namespace, the ClusterRole of `clusterPermissions`, bound to the SA.
    interface Deployment { spec: { template: { spec: { serviceAccountName: string; containers: { env?: { name: string; valueFrom?: unknown }[] }[] } } } }
    const deployment = await getJson<Deployment>(cluster, ['get', 'deployment', pkg, '-n', ns]);
    assert.equal(deployment.spec.template.spec.serviceAccountName, sa);
    assert.deepEqual(deployment.spec.template.spec.containers[0]?.env?.find((e) => e.name === 'WATCH_NAMESPACE')?.valueFrom, {
      fieldRef: { apiVersion: 'v1', fieldPath: "metadata.annotations['olm.targetNamespaces']" },
    });
    const can = async (verb: string, resource: string, where: string[]): Promise<boolean> =>
      (await cluster.kubectl(['auth', 'can-i', verb, resource, `--as=system:serviceaccount:${ns}:${sa}`, ...where], { allowFail: true })).stdout.trim() === 'yes';
    assert.ok(await can('patch', `webapps.${group}/status`, ['-n', ns]), 'permissions: the kind\'s status, in the target namespace');
    assert.ok(await can('create', 'deployments.apps', ['-n', ns]), 'permissions: what the chart creates');
    assert.ok(!(await can('create', 'deployments.apps', ['-n', 'default'])), 'permissions stay in the OperatorGroup\'s namespaces');
    assert.ok(await can('create', 'tokenreviews.authentication.k8s.io', []), 'clusterPermissions: the metrics authentication');

    // chartpilot with the identity OLM gave the operator: the CSV's own example becomes Ready.
    const token = await serviceAccountToken(cluster, ns, sa);
    const kubeconfig = tokenKubeconfig(cluster, dir, token);
    const kind = { group, version: 'v1alpha1', kind: 'WebApp', plural: 'webapps' };
    // In a pod the namespace (where the seal key is) comes from the ServiceAccount mount; POD_NAMESPACE stands in for it here.
    const op = await startOperator(t, cluster, { namespaces: [ns], watches: [{ kind, chart: SAMPLE_CHART }], env: { KUBECONFIG: kubeconfig, POD_NAMESPACE: ns } });
    const examples = JSON.parse(csv.metadata.annotations?.['alm-examples'] ?? '[]') as { metadata: { name: string } }[];
    assert.equal(examples.length, 1);
    await applyYaml(cluster, JSON.stringify(examples[0]), ns);
    const name = examples[0]?.metadata.name ?? '';
    interface Cr { metadata: { uid: string }; status?: { conditions?: { type: string; status: string; message?: string }[] } }
    const ready = async (): Promise<Cr | undefined> => {
      const cr = await getJson<Cr>(cluster, ['get', crdName, name, '-n', ns]);
      return cr.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true ? cr : undefined;
    };
    const cr = await explained(waitFor(`${name} Ready`, ready, { timeoutMs: 120_000 }), () => op.logs().slice(-4000));
    const releases = async (): Promise<string> => (await cluster.helm(['list', '-n', ns, '-o', 'json'])).stdout;
    assert.match(await releases(), new RegExp(`"name":"${name}"`, 'u'));

    // The upgrade through the channel: 0.2.0 replaces 0.1.0; the CR and its release stay.
    await approve(`${pkg}.v0.2.0`);
    await succeeded(`${pkg}.v0.2.0`);
    await explained(
      waitFor('CSV v0.1.0 replaced', async () => (await cluster.kubectl(['get', 'csv', `${pkg}.v0.1.0`, '-n', ns], { allowFail: true })).exitCode !== 0, { timeoutMs: 120_000 }),
      logs,
    );
    const after = await waitFor(`${name} still Ready`, ready);
    assert.equal(after.metadata.uid, cr.metadata.uid, 'the same CR');
    assert.match(await releases(), new RegExp(`"name":"${name}"[^}]*"status":"deployed"`, 'u'));

    // Deleting the CR uninstalls its release with the same permissions (and leaves nothing behind).
    await cluster.kubectl(['delete', crdName, name, '-n', ns, '--wait=true', '--timeout=90s']);
    assert.doesNotMatch(await releases(), new RegExp(`"name":"${name}"`, 'u'));
    await op.stop();

    // Uninstalled as a user would, while OLM still runs to remove its finalizers.
    await cluster.kubectl(['delete', 'subscription', pkg, '-n', ns, '--wait=true', '--timeout=60s']);
    await cluster.kubectl(['delete', 'csv', '--all', '-n', ns, '--wait=true', '--timeout=90s']);
    await cluster.kubectl(['delete', 'operatorgroup', '--all', '-n', ns, '--wait=true', '--timeout=60s']);
  });
});

/** Cluster-scoped leftovers: the kind's CRD and the ClusterRoles OLM made for the OperatorGroup, the CSV and the CRD. */
async function cleanupAfter(t: TestContext, cluster: TestCluster, ns: string, crdName: string, pkg: string): Promise<void> {
  t.after(async () => {
    // After a failure OLM may be gone before its finalizers ran: release the namespace anyway.
    const csvs = await cluster.kubectl(['get', 'csv', '-n', ns, '-o', 'name'], { allowFail: true });
    for (const csv of csvs.stdout.split('\n').filter((l) => l !== '')) {
      await cluster.kubectl(['patch', csv, '-n', ns, '--type', 'merge', '-p', '{"metadata":{"finalizers":null}}'], { allowFail: true });
    }
    await cluster.kubectl(['delete', 'crd', crdName, '--ignore-not-found', '--wait=false'], { allowFail: true });
    await cluster.kubectl(['delete', 'clusterroles,clusterrolebindings', '-l', `olm.owner.namespace=${ns}`, '--ignore-not-found', '--wait=false'], { allowFail: true });
    // The CSV's own ClusterRoles (metrics-reader) and the aggregated roles OLM makes per CRD.
    await cluster.kubectl(['delete', 'clusterroles', '-l', `olm.owner in (${pkg}.v0.1.0,${pkg}.v0.2.0)`, '--ignore-not-found', '--wait=false'], { allowFail: true });
    const aggregated = ['admin', 'edit', 'view', 'crdview'].map((r) => `${crdName}-v1alpha1-${r}`);
    await cluster.kubectl(['delete', 'clusterroles', ...aggregated, '--ignore-not-found', '--wait=false'], { allowFail: true });
  });
  return Promise.resolve();
}
