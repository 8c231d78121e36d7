/**
 * Confinement at the wire (issue #40): whatever helm reads, it cannot touch anything outside the
 * CR's namespace. As a namespace admin attacks it with default settings (no ServiceAccount) and
 * the operator holding exactly what `chartpilot generate rbac` grants — which lets it write
 * ConfigMaps in every namespace:
 *
 * - through the operator (both helm modes): records forged with a merge key after an object's own
 *   keys (the parser difference that made helm act in kube-system), re-assembled from two of the
 *   CR's own revisions, emptied, or carrying a post-delete hook elsewhere; and a hook rendered
 *   into another namespace from values. Nothing outside the namespace is created, changed or
 *   deleted, and each CR says why.
 * - the wire alone: the real helm binary run on the same forgeries through a proxy session that
 *   has no record check at all (and no post-renderer), so helm reads them as it likes: every write
 *   outside the namespace is refused at the proxy, named. A control run without the proxy shows
 *   that the same identity would have done the damage.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { execa } from 'execa';
import { pino } from 'pino';
import { createApiProxy, type ApiProxy } from '../../src/apiproxy/index.js';
import { createKubeClient, loadKubeConfig } from '../../src/kube/rest.js';
import { condition, crsOf, type Cr } from './crs.js';
import { fixtureChart } from './fixtures.js';
import { getJson, newNamespace, type TestCluster } from './harness.js';
import { grantGeneratedRbac, type Grant } from './rbac-grant.js';
import { decodeRecord, encodeRecord, forgeNext, records, snapshot, type ReleaseJson, type SecretJson } from './records-forgery.js';
import { setUp } from './scenario.js';

const CHART = fixtureChart('records');
const EXTRA_OBJECTS = fixtureChart('extra-objects');

/**
 * A copy of the record's first object that names itself `namespace`/`name` to go-yaml v2 (helm's
 * decoder, which applies `<<` in document order) and keeps its own name and namespace to a reader
 * that lets own keys win: the merge key comes after them and repeats only keys the object has.
 */
function lateMerge(objectNamespace: string, name: string, targetNamespace: string, target: string): string {
  return [
    '---',
    '# Source: records/templates/configmap.yaml',
    'apiVersion: v1',
    'kind: ConfigMap',
    'metadata:',
    `  name: ${name}`,
    `  namespace: ${objectNamespace}`,
    `  <<: {namespace: ${targetNamespace}, name: ${target}}`,
    'data:',
    '  message: "forged"',
    '',
  ].join('\n');
}

/** A post-delete hook of the record, rewritten the same way into `targetNamespace`. */
function postDeleteHook(release: ReleaseJson, objectNamespace: string, targetNamespace: string, target: string): void {
  const [hook] = release.hooks ?? [];
  assert.ok(hook, 'the records chart has a hook to copy');
  release.hooks = [{ ...hook, name: target, events: ['post-delete'], manifest: lateMerge(objectNamespace, `${String(hook['name'])}-2`, targetNamespace, target) }];
}

/** Another team's namespace, standing in for kube-system, with the ConfigMap a forgery names. */
async function victim(t: TestContext, c: TestCluster): Promise<string> {
  const ns = await newNamespace(t, 'wire-victim');
  await c.kubectl(['create', 'configmap', 'cluster-config', '-n', ns, '--from-literal=owner=platform']);
  return ns;
}

async function configMapNames(c: TestCluster, ns: string): Promise<string[]> {
  const list = await getJson<{ items: SecretJson[] }>(c, ['get', 'configmaps', '-n', ns, '-o', 'json']);
  return list.items.map((o) => o.metadata.name).filter((n) => n !== 'kube-root-ca.crt').sort();
}

const foreign = (cr: Cr): boolean => condition(cr, 'Irreconcilable')?.reason === 'ForeignReleaseRecord';

/** Writes `json` as the record of `revision`, copying labels and annotations (the MAC too) of `from`. */
async function writeRecord(c: TestCluster, ns: string, release: string, revision: number, json: ReleaseJson, from: SecretJson, status = 'deployed'): Promise<string> {
  const name = `sh.helm.release.v1.${release}.v${String(revision)}`;
  const secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    type: from.type ?? 'helm.sh/release.v1',
    metadata: { name, namespace: ns, labels: { ...from.metadata.labels, name: release, version: String(revision), status }, annotations: { ...from.metadata.annotations } },
    stringData: { release: encodeRecord({ ...json, name: release, namespace: ns, version: revision, info: { ...json.info, status } }) },
  };
  await c.kubectl(['apply', '-f', '-'], { input: JSON.stringify(secret) });
  return name;
}

describe('confinement at the wire', () => {
  for (const mode of ['warm', 'engine', 'cli'] as const) {
    it(`--helm-mode=${mode}: forged records and a hook elsewhere change nothing outside the namespace, and each CR says why`, async (t) => {
      const s = await setUp(t, { kind: `Wire${mode.charAt(0).toUpperCase()}${mode.slice(1)}`, chart: CHART });
      const { cluster, ns } = s;
      const other = await victim(t, cluster);
      const grant = await grantGeneratedRbac(t, cluster, s.kind, ns, [], undefined, {}, CHART);
      const op = await s.start({ dir: grant.dir, env: { KUBECONFIG: grant.kubeconfig, POD_NAMESPACE: ns }, args: ['--helm-mode', mode, '--reconcile-period=5s'] });
      const cr = crsOf(cluster, s.kind, ns, op);
      const names = ['uninstalled', 'upgraded', 'hooked', 'reassembled', 'emptied'] as const;
      for (const n of names) await cr.apply(n, { message: 'one' });
      for (const n of names) await cr.deployed(n);
      // Two revisions of its own to re-assemble from.
      await cr.apply('reassembled', { message: 'two' });
      await cr.until('reassembled', 'revision 2', (c) => c.status?.deployedRelease?.revision === 2);
      const before = await snapshot(cluster, other);

      const forged: Record<string, string> = {};
      for (const n of ['uninstalled', 'upgraded'] as const) {
        forged[n] = await forgeNext(cluster, ns, n, (r) => {
          r.manifest = `${r.manifest ?? ''}\n${lateMerge(ns, `${n}-cfg`, other, 'cluster-config')}`;
        });
      }
      forged['hooked'] = await forgeNext(cluster, ns, 'hooked', (r) => {
        postDeleteHook(r, ns, other, 'forged-hook');
      });
      // Re-assembled from the CR's own revisions 1 and 2, its MAC copied from revision 2.
      const [r1, r2] = await records(cluster, ns, 'reassembled');
      assert.ok(r1 && r2);
      const both = decodeRecord(r2);
      both.manifest = `${decodeRecord(r1).manifest ?? ''}${lateMerge(ns, 'reassembled-cfg', other, 'cluster-config')}${both.manifest ?? ''}`;
      forged['reassembled'] = await writeRecord(cluster, ns, 'reassembled', 2, both, r2);
      // Emptied: no objects at all, the MAC of the real revision kept.
      const [e1] = await records(cluster, ns, 'emptied');
      assert.ok(e1);
      forged['emptied'] = await writeRecord(cluster, ns, 'emptied', 1, { ...decodeRecord(e1), manifest: '', hooks: [] }, e1);

      await cr.delete('uninstalled');
      await cr.delete('hooked');
      for (const n of ['upgraded', 'reassembled', 'emptied'] as const) await cr.apply(n, { message: 'three' });
      for (const n of names) {
        const got = await cr.until(n, 'Irreconcilable ForeignReleaseRecord', foreign);
        const record = forged[n] ?? '';
        assert.match(condition(got, 'Irreconcilable')?.message ?? '', new RegExp(`record ${record.replaceAll('.', '\\.')} was not written by chartpilot for this resource`), n);
      }
      assert.deepEqual(await snapshot(cluster, other), before, 'nothing in the other namespace was created, changed or deleted');
      assert.deepEqual(await configMapNames(cluster, other), ['cluster-config']);
      assert.ok((await cr.get('uninstalled')) !== undefined && (await cr.get('hooked')) !== undefined, 'the CRs being deleted keep their finalizer');

      // A hook the chart renders into another namespace from values: refused before anything is applied.
      const objects = setUp(t, { kind: `WireHook${mode.charAt(0).toUpperCase()}${mode.slice(1)}`, chart: EXTRA_OBJECTS, namespace: 'wire-hook' });
      const h = await objects;
      const hookGrant = await grantGeneratedRbac(t, cluster, h.kind, h.ns, [], undefined, {}, EXTRA_OBJECTS);
      const hop = await h.start({ dir: hookGrant.dir, env: { KUBECONFIG: hookGrant.kubeconfig, POD_NAMESPACE: h.ns }, args: ['--helm-mode', mode] });
      const hcr = crsOf(cluster, h.kind, h.ns, hop);
      const hook = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'forged-hook', namespace: other, annotations: { 'helm.sh/hook': 'post-install' } }, data: { by: 'tenant' } };
      await hcr.apply('hooker', { extraObjects: [hook] });
      const failed = await hcr.until('hooker', 'ReleaseFailed', (c) => condition(c, 'ReleaseFailed')?.status === 'True');
      assert.match(condition(failed, 'ReleaseFailed')?.message ?? '', new RegExp(`ConfigMap forged-hook in namespace ${other}`));
      assert.deepEqual(await configMapNames(cluster, other), ['cluster-config']);
    });
  }
});

/** A proxy in this process forwarding as `grant`'s identity, with sessions that check no record at all. */
async function bareProxy(t: TestContext, grant: Grant): Promise<ApiProxy> {
  const client = createKubeClient(loadKubeConfig({ files: [grant.kubeconfig] }), { userAgent: 'wire-test' });
  const proxy = createApiProxy({ client, log: pino({ level: 'silent' }), port: 0 });
  await proxy.start();
  t.after(() => proxy.stop());
  return proxy;
}

/** Runs the real helm with `kubeconfig` (a session's, or the operator identity's own). */
async function helmAs(c: TestCluster, kubeconfig: string, args: readonly string[]): Promise<{ exitCode: number; stderr: string }> {
  const r = await execa(c.helmBin, args, { env: { ...c.env, KUBECONFIG: kubeconfig }, reject: false, timeout: 120_000 });
  return { exitCode: r.exitCode ?? -1, stderr: r.stderr };
}

describe('confinement at the wire: the proxy alone', () => {
  it('real helm acting on forged records with no record check is refused every write outside the namespace; without the proxy the same identity does the damage', async (t) => {
    const s = await setUp(t, { kind: 'WireBare', chart: CHART });
    const { cluster, ns } = s;
    const other = await victim(t, cluster);
    const grant = await grantGeneratedRbac(t, cluster, s.kind, ns, [], undefined, {}, CHART);
    const proxy = await bareProxy(t, grant);
    const dir = await mkdtemp(join(tmpdir(), 'chartpilot-wire-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    /** helm through a fresh session of the bare proxy: confinement by URL only. */
    const throughProxy = async (args: readonly string[]): Promise<{ exitCode: number; stderr: string; refusals: readonly string[] }> => {
      const session = proxy.openSession({
        owner: { apiVersion: '', kind: '', name: 'x', namespace: ns, uid: 'none' },
        confinement: { namespace: ns, allowClusterScoped: false, allowCrossNamespace: false },
        injectOwnerRef: false,
        log: pino({ level: 'silent' }),
      });
      const file = join(dir, `session-${String(Date.now())}-${Math.random().toString(36).slice(2)}`);
      await writeFile(file, session.kubeconfig, { mode: 0o600 });
      try {
        return { ...(await helmAs(cluster, file, args)), refusals: session.refusals() };
      } finally {
        session.close();
      }
    };
    const install = async (release: string): Promise<void> => {
      const r = await throughProxy(['install', release, CHART, '-n', ns, '--set', 'message=one']);
      assert.equal(r.exitCode, 0, r.stderr);
    };

    // uninstall: the forged current revision names the victim's ConfigMap through a late merge key.
    await install('gone');
    await forgeNext(cluster, ns, 'gone', (r) => {
      r.manifest = `${r.manifest ?? ''}\n${lateMerge(ns, 'gone-cfg', other, 'cluster-config')}`;
    });
    const uninstall = await throughProxy(['uninstall', 'gone', '-n', ns]);
    assert.notEqual(uninstall.exitCode, 0);
    assert.ok(uninstall.refusals.some((m) => m.includes(`refused to delete ConfigMap "cluster-config" in namespace ${other}`)), uninstall.refusals.join('\n'));

    // upgrade: what the forged current revision lists and the new one does not is deleted.
    await install('up');
    await forgeNext(cluster, ns, 'up', (r) => {
      r.manifest = `${r.manifest ?? ''}\n${lateMerge(ns, 'up-cfg', other, 'cluster-config')}`;
    });
    const upgrade = await throughProxy(['upgrade', 'up', CHART, '-n', ns, '--set', 'message=two']);
    assert.notEqual(upgrade.exitCode, 0);
    assert.ok(upgrade.refusals.some((m) => m.includes(`refused to delete ConfigMap "cluster-config" in namespace ${other}`)), upgrade.refusals.join('\n'));

    // rollback: to a forged revision whose manifest makes a ConfigMap there.
    await install('back');
    const [b1] = await records(cluster, ns, 'back');
    assert.ok(b1);
    const planted = decodeRecord(b1);
    planted.manifest = `${planted.manifest ?? ''}\n${lateMerge(ns, 'back-extra', other, 'planted')}`;
    await writeRecord(cluster, ns, 'back', 2, planted, b1, 'superseded');
    const rollback = await throughProxy(['rollback', 'back', '2', '-n', ns]);
    assert.notEqual(rollback.exitCode, 0);
    assert.ok(rollback.refusals.some((m) => /refused to (create|patch) ConfigMap "planted" in namespace/.test(m) && m.includes(other)), rollback.refusals.join('\n'));

    // a post-delete hook rewritten the same way would create an object there with the tenant's data.
    await install('hook');
    await forgeNext(cluster, ns, 'hook', (r) => {
      postDeleteHook(r, ns, other, 'forged-hook');
    });
    const hooked = await throughProxy(['uninstall', 'hook', '-n', ns]);
    assert.notEqual(hooked.exitCode, 0);
    assert.ok(hooked.refusals.some((m) => /ConfigMap "forged-hook" in namespace/.test(m) && m.includes(other)), hooked.refusals.join('\n'));

    // a hook a chart renders there (no post-renderer here to refuse it first).
    const hookValues = join(dir, 'hook-values.json');
    await writeFile(hookValues, JSON.stringify({ extraObjects: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'rendered-hook', namespace: other, annotations: { 'helm.sh/hook': 'post-install' } }, data: { by: 'tenant' } }] }));
    const rendered = await throughProxy(['install', 'rendered', EXTRA_OBJECTS, '-n', ns, '-f', hookValues]);
    assert.notEqual(rendered.exitCode, 0);
    assert.ok(rendered.refusals.some((m) => /ConfigMap "rendered-hook" in namespace/.test(m) && m.includes(other)), rendered.refusals.join('\n'));

    assert.deepEqual(await configMapNames(cluster, other), ['cluster-config'], 'nothing was created or deleted in the other namespace');
    const cfg = await getJson<SecretJson & { data: Record<string, string> }>(cluster, ['get', 'configmap', 'cluster-config', '-n', other, '-o', 'json']);
    assert.deepEqual(cfg.data, { owner: 'platform' }, 'nor changed');

    // The control: the same forgery and identity without the proxy deletes the victim's object.
    await install('control');
    await forgeNext(cluster, ns, 'control', (r) => {
      r.manifest = `${r.manifest ?? ''}\n${lateMerge(ns, 'control-cfg', other, 'cluster-config')}`;
    });
    const direct = await helmAs(cluster, grant.kubeconfig, ['uninstall', 'control', '-n', ns]);
    assert.equal(direct.exitCode, 0, direct.stderr);
    assert.deepEqual(await configMapNames(cluster, other), [], 'helm read the forgery as naming the other namespace, and deleted there');
  });
});
