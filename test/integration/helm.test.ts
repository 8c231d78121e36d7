// The helm client against the real helm binary (v4) and the local control plane: what a caller
// sees (releases, typed errors, objects in the cluster), not how the client builds argv.
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';

import { HelmKilledError } from '../../src/helm/exec.js';
import { createHelmClient, type CliHelmClient, type CliHelmClientOptions, type HelmCallEvent } from '../../src/helm/cli-client.js';
import { HelmError, type PostRenderSpec, type UpgradeInstallRequest } from '../../src/helm/types.js';
import { repoRoot } from '../../devcluster/paths.js';
import { getJson, newNamespace, testCluster } from './harness.js';
import { waitFor } from './wait.js';

const c = await testCluster();
const CHARTS = join(repoRoot(), 'test', 'fixtures', 'charts');
const WEBAPP = join(CHARTS, 'webapp');

interface Meta { labels?: Record<string, string>; annotations?: Record<string, string> }
interface Obj { metadata: Meta; data?: Record<string, string> }
interface Secret { metadata: Meta }
interface List<T> { items: T[] }

const OWNER = {
  labels: { 'chartpilot.io/owner-uid': 'uid-1234' },
  annotations: { 'operator-sdk/primary-resource': 'ns/web', 'operator-sdk/primary-resource-type': 'WebApp.apps.example.com' },
};

/** A client with its own temp dir (checked for leftovers) and its call log. */
async function client(t: TestContext, extra: Partial<CliHelmClientOptions> = {}): Promise<{ helm: CliHelmClient; tempDir: string; events: HelmCallEvent[] }> {
  const tempDir = await mkdtemp(join(tmpdir(), 'chartpilot-helm-it-'));
  const events: HelmCallEvent[] = [];
  const helm = createHelmClient({ helmBin: c.helmBin, env: c.env, kubeconfig: c.kubeconfig, tempDir, log: (e) => events.push(e), ...extra });
  t.after(async () => {
    await helm.close();
    await rm(tempDir, { recursive: true, force: true });
  });
  return { helm, tempDir, events };
}

/** Names in tempDir other than the post-render plugin directory (values files must be gone). */
async function leftovers(tempDir: string): Promise<string[]> {
  return (await readdir(tempDir)).filter((n) => !n.startsWith('chartpilot-helm-plugins-'));
}

function request(namespace: string, extra: Partial<UpgradeInstallRequest> = {}): UpgradeInstallRequest {
  return { release: 'web', namespace, chart: WEBAPP, values: {}, timeoutMs: 120_000, postRender: OWNER, ...extra };
}

async function rejectsWith(p: Promise<unknown>, kind: HelmError['kind']): Promise<HelmError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof HelmError, `expected a HelmError, got ${String(err)}`);
    assert.equal(err.kind, kind, `kind of: ${err.message}`);
    return err;
  }
  assert.fail(`expected a HelmError of kind ${kind}`);
}

describe('helm client (real helm 4, real API server)', { concurrency: true }, () => {
  it('install, upgrade, status, history, rollback, uninstall of a chart', async (t) => {
    const ns = await newNamespace(t, 'helm-life');
    const { helm, tempDir, events } = await client(t);
    assert.match(await helm.version(), /^v4\./);

    const r1 = await helm.upgradeInstall(request(ns, {
      values: { message: 'first' },
      description: 'installed by the test',
      historyMax: 5,
      releaseLabels: { 'chartpilot.io/fingerprint': 'fp1' },
    }));
    assert.equal(r1.name, 'web');
    assert.equal(r1.namespace, ns);
    assert.equal(r1.revision, 1);
    assert.equal(r1.status, 'deployed');
    assert.equal(r1.chartName, 'webapp');
    assert.equal(r1.chartVersion, '0.1.0');
    assert.equal(r1.appVersion, '1.2.3');
    assert.equal(r1.description, 'installed by the test');
    assert.equal(r1.notes, `webapp web is running in ${ns} (revision 1).\n`);
    assert.match(r1.manifest, /"kind": "ConfigMap"[\s\S]*"kind": "Service"[\s\S]*"kind": "Deployment"/);
    assert.match(r1.manifest, /"chartpilot\.io\/owner-uid": "uid-1234"/, 'the stored manifest is the post-rendered one');

    // Post-render labels and annotations are on every live object.
    for (const obj of ['configmap/web-config', 'deployment/web-web', 'service/web-web']) {
      const { labels = {}, annotations = {} } = (await getJson<Obj>(c, ['get', obj, '-n', ns])).metadata;
      assert.equal(labels['chartpilot.io/owner-uid'], 'uid-1234', obj);
      assert.equal(labels['app.kubernetes.io/name'], 'webapp', `${obj} keeps the chart's labels`);
      assert.equal(annotations['operator-sdk/primary-resource'], 'ns/web', obj);
      assert.equal(annotations['operator-sdk/primary-resource-type'], 'WebApp.apps.example.com', obj);
    }
    assert.equal((await getJson<Obj>(c, ['get', 'configmap/web-config', '-n', ns])).data?.['message'], 'first');
    // Release labels land on helm's release Secret.
    const secrets = await getJson<List<Secret>>(c, ['get', 'secrets', '-n', ns, '-l', 'owner=helm,name=web']);
    assert.equal(secrets.items[0]?.metadata.labels?.['chartpilot.io/fingerprint'], 'fp1');

    const r2 = await helm.upgradeInstall(request(ns, { values: { message: 'second', replicaCount: 2 } }));
    assert.equal(r2.revision, 2);
    assert.equal(r2.status, 'deployed');
    assert.equal(r2.notes, `webapp web is running in ${ns} (revision 2).\n`);
    assert.equal((await getJson<Obj>(c, ['get', 'configmap/web-config', '-n', ns])).data?.['message'], 'second');

    const s = await helm.status({ release: 'web', namespace: ns, timeoutMs: 30_000 });
    assert.deepEqual(s, r2, 'status() gives the same release the upgrade returned');

    const h = await helm.history({ release: 'web', namespace: ns, timeoutMs: 30_000 });
    assert.deepEqual(h.map((x) => [x.revision, x.status, x.chartName, x.chartVersion, x.appVersion]), [
      [1, 'superseded', 'webapp', '0.1.0', '1.2.3'],
      [2, 'deployed', 'webapp', '0.1.0', '1.2.3'],
    ]);

    await helm.rollback({ release: 'web', namespace: ns, timeoutMs: 60_000, revision: 1 });
    const r3 = await helm.status({ release: 'web', namespace: ns, timeoutMs: 30_000 });
    assert.ok(r3);
    assert.equal(r3.revision, 3);
    assert.equal(r3.description, 'Rollback to 1');
    assert.equal((await getJson<Obj>(c, ['get', 'configmap/web-config', '-n', ns])).data?.['message'], 'first');

    assert.equal(await helm.uninstall({ release: 'web', namespace: ns, timeoutMs: 60_000, wait: true }), 'uninstalled');
    assert.equal((await c.kubectl(['get', 'configmap/web-config', '-n', ns], { allowFail: true })).exitCode, 1);
    assert.equal(await helm.uninstall({ release: 'web', namespace: ns, timeoutMs: 60_000 }), 'not-found');
    assert.equal(await helm.status({ release: 'web', namespace: ns, timeoutMs: 30_000 }), undefined);
    assert.deepEqual(await helm.history({ release: 'web', namespace: ns, timeoutMs: 30_000 }), []);

    assert.deepEqual(await leftovers(tempDir), []);
    assert.deepEqual(
      events.map((e) => `${e.action}:${e.outcome}`),
      ['upgrade:success', 'upgrade:success', 'status:success', 'history:success', 'rollback:success', 'status:success',
        'uninstall:success', 'uninstall:success', 'status:success', 'history:success'],
    );
  });

  for (const transport of ['socket (curl to the operator)', 'script (a node process)'] as const) {
    it(`post-render over the ${transport} transport: labels objects, refuses a cluster-scoped one`, async (t) => {
      const ns = await newNamespace(t, 'helm-pr');
      const { helm, tempDir } = await client(t, transport.startsWith('script') ? { curlBin: null } : {});
      const release = await helm.upgradeInstall(request(ns));
      assert.match(release.manifest, /"chartpilot\.io\/owner-uid": "uid-1234"/);
      const { labels = {} } = (await getJson<Obj>(c, ['get', 'configmap/web-config', '-n', ns])).metadata;
      assert.equal(labels['chartpilot.io/owner-uid'], 'uid-1234');

      // The refusal's own words reach the caller (helm itself drops a plugin's stderr).
      const confined: PostRenderSpec = {
        ...OWNER,
        owner: {
          reference: { apiVersion: 'apps.example.com/v1', kind: 'WebApp', name: 'crb', uid: 'uid-1234' },
          namespace: ns,
          clusterScopedKinds: ['rbac.authorization.k8s.io/v1/ClusterRole'],
          namespacedKinds: ['v1/ConfigMap'],
          nonOwnedAnnotations: {},
          allowClusterScoped: false,
          allowCrossNamespace: false,
        },
      };
      const refused = await rejectsWith(helm.upgradeInstall(request(ns, { release: 'crb', chart: join(CHARTS, 'cluster-scoped'), postRender: confined })), 'render');
      assert.match(refused.message, /ClusterRole/);
      assert.deepEqual(await leftovers(tempDir), []);
    });
  }

  it('a chart that renders no objects installs as an empty release, post-render and all', async (t) => {
    const ns = await newNamespace(t, 'helm-empty');
    const { helm } = await client(t);
    // helm's plugin post-renderer refuses an empty output ("produced empty output"); a chart
    // whose objects are all behind a value is common, and plain helm installs it.
    const empty = await helm.upgradeInstall(request(ns, { chart: join(CHARTS, 'optional') }));
    assert.equal(empty.status, 'deployed');
    assert.equal(empty.manifest.trim(), '');
    const enabled = await helm.upgradeInstall(request(ns, { chart: join(CHARTS, 'optional'), values: { enabled: true } }));
    assert.equal(enabled.revision, 2);
    assert.equal((await getJson<Obj>(c, ['get', 'configmap/web-optional', '-n', ns])).data?.['enabled'], 'yes');
    const disabled = await helm.upgradeInstall(request(ns, { chart: join(CHARTS, 'optional'), values: { enabled: false } }));
    assert.equal(disabled.status, 'deployed');
    assert.equal((await c.kubectl(['get', 'configmap/web-optional', '-n', ns], { allowFail: true })).exitCode, 1, 'the object the chart no longer renders is gone');
  });

  it('a chart that does not render fails with kind render and installs nothing', async (t) => {
    const ns = await newNamespace(t, 'helm-broken');
    const { helm, tempDir } = await client(t);
    const err = await rejectsWith(helm.upgradeInstall(request(ns, { chart: join(CHARTS, 'broken'), values: { greeting: 'not-in-message-please' } })), 'render');
    assert.match(err.message, /nil pointer evaluating interface \{\}\.deeper/);
    assert.doesNotMatch(err.message, /^Error:|not-in-message-please/);
    assert.equal(await helm.status({ release: 'web', namespace: ns, timeoutMs: 30_000 }), undefined);

    const schema = await rejectsWith(helm.upgradeInstall(request(ns, { values: { replicaCount: 'three' } })), 'render');
    assert.match(schema.message, /values don't meet the specifications of the schema/);
    assert.deepEqual(await leftovers(tempDir), []);
  });

  it('objects owned by someone else: conflict; force takes changed fields back', async (t) => {
    const ns = await newNamespace(t, 'helm-conflict');
    const { helm } = await client(t);
    // Not created by helm: helm refuses to adopt it.
    await c.kubectl(['create', 'configmap', 'other-config', '-n', ns, '--from-literal=a=b']);
    const own = await rejectsWith(helm.upgradeInstall(request(ns, { release: 'other' })), 'conflict');
    assert.match(own.message, /exists and cannot be imported into the current release/);

    // A field another manager changed: helm 4's server-side apply refuses without force.
    await helm.upgradeInstall(request(ns, { values: { message: 'mine' } }));
    await c.kubectl(['patch', 'configmap', 'web-config', '-n', ns, '--type=merge', '-p', '{"data":{"message":"theirs"}}', '--field-manager=intruder']);
    const ssa = await rejectsWith(helm.upgradeInstall(request(ns, { values: { message: 'mine-again' } })), 'conflict');
    assert.match(ssa.message, /conflict with "intruder"/);
    const forced = await helm.upgradeInstall(request(ns, { values: { message: 'mine-again' }, force: true }));
    assert.equal(forced.status, 'deployed');
    assert.equal((await getJson<Obj>(c, ['get', 'configmap/web-config', '-n', ns])).data?.['message'], 'mine-again');
    // A forced rollback works too (helm 4 refuses --force-replace with server-side apply).
    await helm.rollback({ release: 'web', namespace: ns, timeoutMs: 60_000, force: true });
    assert.equal((await helm.status({ release: 'web', namespace: ns, timeoutMs: 30_000 }))?.description, `Rollback to ${String(forced.revision - 1)}`);
  });

  it('a hook that never completes: timeout, the release recorded as failed, no temp files left', async (t) => {
    const ns = await newNamespace(t, 'helm-timeout');
    const { helm, tempDir, events } = await client(t);
    const err = await rejectsWith(helm.upgradeInstall(request(ns, { chart: join(CHARTS, 'slow-hook'), timeoutMs: 40_000, values: { x: 'y' } })), 'timeout');
    // helm's own --timeout (32 s of the 40 s budget) ended it, not our kill: said by the error's
    // class, not by a clock. helm's clock starts only when it waits on the hook, after loading,
    // rendering and creating; on a loaded CI machine that took over 4 s (a 20 s budget overran).
    assert.ok(!(err instanceof HelmKilledError), err.message);
    // So helm recorded the failure itself instead of leaving a pending-install lock behind.
    assert.equal((await helm.status({ release: 'web', namespace: ns, timeoutMs: 30_000 }))?.status, 'failed');
    assert.deepEqual(await leftovers(tempDir), []);
    assert.deepEqual(events.map((e) => [e.action, e.outcome, e.errorKind]), [['upgrade', 'error', 'timeout'], ['status', 'success', undefined]]);
  });

  it('a release with an operation in progress is locked', async (t) => {
    const ns = await newNamespace(t, 'helm-locked');
    const { helm } = await client(t);
    const slow = helm.upgradeInstall(request(ns, { chart: join(CHARTS, 'slow-hook'), timeoutMs: 40_000 }));
    const slowDone = slow.then(() => 'deployed', (err: unknown) => (err instanceof HelmError ? err.kind : 'other'));
    await waitFor('the release to be pending-install', async () => (await helm.status({ release: 'web', namespace: ns, timeoutMs: 10_000 }))?.status === 'pending-install', { timeoutMs: 35_000 });
    const err = await rejectsWith(helm.upgradeInstall(request(ns)), 'locked');
    assert.match(err.message, /another operation \(install\/upgrade\/rollback\) is in progress/);
    assert.equal(await slowDone, 'timeout');
  });

  it('template renders without touching the cluster', async (t) => {
    const ns = await newNamespace(t, 'helm-template');
    const { helm } = await client(t);
    const out = await helm.template({ release: 'web', namespace: ns, chart: WEBAPP, values: { message: 'rendered' }, timeoutMs: 30_000 });
    assert.match(out, /message: "rendered"/);
    assert.equal((out.match(/^kind: /gm) ?? []).length, 3);
    assert.equal(await helm.status({ release: 'web', namespace: ns, timeoutMs: 30_000 }), undefined);
    await rejectsWith(helm.template({ release: 'web', namespace: ns, chart: join(CHARTS, 'broken'), values: {}, timeoutMs: 30_000 }), 'render');
  });
});
