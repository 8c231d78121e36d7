import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { describe, it } from 'node:test';
import { stringify } from 'yaml';
import { decideAdoption, type ScopedObject } from '../../../src/helm/adoption.js';
import { resolveManifestObjects } from '../../../src/helm/postrender/resolve.js';
import { deriveRecordKey, recordBytesOf, recordMac, RecordKeys, RECORD_MAC_ANNOTATION, RELEASE_RECORD_TYPE } from '../../../src/helm/record-mac.js';
import { isOurRecord, recordObjects, type DecodedRecord, type RecordToJudge } from '../../../src/helm/record-origin.js';
import { decodeStoredRecord } from '../../../src/helm/storage.js';
import { RecordVerdicts } from '../../../src/helm/record-verdicts.js';
import { KubeApiError } from '../../../src/kube/errors.js';
import type { KubeClient } from '../../../src/kube/rest.js';
import { resourcePath } from '../../../src/kube/resource.js';
import type { Release, StoredRevision } from '../../../src/core/model.js';

const MASTER = Buffer.alloc(32, 9);
const KEY_A = deriveRecordKey(MASTER, 'uid-a');
const KEY_B = deriveRecordKey(MASTER, 'uid-b');
const EXPECT = { releaseName: 'web', namespace: 'team-a' } as const;

function configMap(name: string, data: Record<string, string>, namespace?: string): Record<string, unknown> {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, ...(namespace === undefined ? {} : { namespace }) }, data };
}

function manifest(objects: readonly Record<string, unknown>[]): string {
  return objects.map((o) => `---\n${stringify(o)}`).join('');
}

function release(extra: Partial<Release> = {}): Release {
  return {
    name: 'web',
    namespace: 'team-a',
    revision: 2,
    status: 'deployed',
    chartName: 'webapp',
    chartVersion: '0.1.0',
    appVersion: '1.0',
    notes: '',
    manifest: '',
    description: '',
    ...extra,
  };
}

function record(objects: readonly Record<string, unknown>[], hooks: readonly Record<string, unknown>[][] = [], extra: Partial<Release> = {}): DecodedRecord {
  return { release: release({ manifest: manifest(objects), ...extra }), hookManifests: hooks.map((h) => manifest(h)), labels: {} };
}

/** What Helm stores: base64(gzip(JSON)), then base64 again as Secret data. */
function secretData(r: DecodedRecord): string {
  const json = { name: r.release.name, namespace: r.release.namespace, version: r.release.revision, info: { status: 'deployed' }, chart: { metadata: { name: 'webapp' } }, manifest: r.release.manifest, hooks: r.hookManifests.map((m, i) => ({ name: `h${i}`, manifest: m })) };
  return Buffer.from(gzipSync(Buffer.from(JSON.stringify(json))).toString('base64')).toString('base64');
}

/** A record's Secret as helm's storage writes it, stamped with `key`'s MAC when given. */
function recordSecret(r: DecodedRecord, key: Buffer | undefined, over: { name?: string; namespace?: string; labels?: Record<string, string>; type?: string; data?: string } = {}): Record<string, unknown> {
  const name = over.name ?? `sh.helm.release.v1.${r.release.name}.v${String(r.release.revision)}`;
  const namespace = over.namespace ?? 'team-a';
  const secret: Record<string, unknown> = {
    apiVersion: 'v1',
    kind: 'Secret',
    type: over.type ?? RELEASE_RECORD_TYPE,
    metadata: { name, namespace, labels: over.labels ?? { owner: 'helm', name: r.release.name, version: String(r.release.revision), status: 'deployed' } },
    data: { release: over.data ?? secretData(r) },
  };
  if (key !== undefined) stamp(secret, key, namespace);
  return secret;
}

function stamp(secret: Record<string, unknown>, key: Buffer, namespace = 'team-a'): void {
  const bytes = recordBytesOf(secret, namespace);
  assert.ok(bytes !== undefined);
  (secret['metadata'] as Record<string, unknown>)['annotations'] = { [RECORD_MAC_ANNOTATION]: recordMac(key, bytes) };
}

async function judged(secret: Record<string, unknown>): Promise<RecordToJudge> {
  const meta = secret['metadata'] as { namespace: string; labels: Record<string, string>; annotations?: Record<string, string> };
  const bytes = recordBytesOf(secret, meta.namespace);
  assert.ok(bytes !== undefined);
  const record = await decodeStoredRecord((secret['data'] as { release: string }).release);
  return { record, labels: meta.labels, bytes, mac: meta.annotations?.[RECORD_MAC_ANNOTATION] };
}

const judge = async (key: Buffer, secret: Record<string, unknown>): Promise<boolean> => isOurRecord(key, await judged(secret), EXPECT);

describe('record origin: record MACs over the exact bytes', () => {
  const r = record([configMap('cfg', { mode: 'fast' })], [[configMap('hook', {})]]);

  it('a record stamped for this CR is ours; the same record is another CR’s only under its key', async () => {
    assert.equal(await judge(KEY_A, recordSecret(r, KEY_A)), true);
    assert.equal(await judge(KEY_B, recordSecret(r, KEY_A)), false);
    assert.equal(await judge(KEY_B, recordSecret(r, KEY_B)), true);
  });

  it('no MAC, or a MAC of the wrong length or value, is foreign: an empty record too', async () => {
    assert.equal(await judge(KEY_A, recordSecret(r, undefined)), false);
    assert.equal(await judge(KEY_A, recordSecret(record([]), undefined)), false, 'an empty record proves nothing');
    assert.equal(await judge(KEY_A, recordSecret(record([]), KEY_A)), true, 'unless stamped: helm wrote it for a chart that renders nothing');
    const good = recordSecret(r, KEY_A);
    const mac = ((good['metadata'] as { annotations: Record<string, string> }).annotations)[RECORD_MAC_ANNOTATION] ?? '';
    for (const bad of ['', 'x', `${mac}x`, mac.slice(1), recordMac(KEY_A, { namespace: 'team-a', name: 'other', type: RELEASE_RECORD_TYPE, labels: {}, release: Buffer.alloc(0) })]) {
      const forged = recordSecret(r, undefined);
      (forged['metadata'] as Record<string, unknown>)['annotations'] = { [RECORD_MAC_ANNOTATION]: bad };
      assert.equal(await judge(KEY_A, forged), false, bad);
    }
  });

  it('any change of what helm stored breaks it: the release blob, a label, the type, the namespace', async () => {
    const good = recordSecret(r, KEY_A);
    const annotations = (good['metadata'] as { annotations: Record<string, string> }).annotations;
    const withMac = (s: Record<string, unknown>): Record<string, unknown> => {
      (s['metadata'] as Record<string, unknown>)['annotations'] = annotations;
      return s;
    };
    // A merge key appended after the object's own keys: sealed objects re-read elsewhere (the Step 20 escape).
    const merged = record([], [], { manifest: `${r.release.manifest.trimEnd()}\n  <<: {namespace: kube-system, name: cluster-config}\n` });
    assert.equal(await judge(KEY_A, withMac(recordSecret(merged, undefined))), false);
    assert.equal(await judge(KEY_A, withMac(recordSecret(r, undefined, { labels: { owner: 'helm', name: 'web', version: '2', status: 'superseded' } }))), false);
    assert.equal(await judge(KEY_A, withMac(recordSecret(r, undefined, { type: 'Opaque' }))), false);
    assert.equal(await judge(KEY_A, withMac(recordSecret(r, undefined, { namespace: 'team-b' }))), false);
  });

  it('a record re-assembled from two stamped revisions, or one renamed to another revision, is foreign', async () => {
    const v1 = record([configMap('a', {})], [], { revision: 1 });
    const v2 = record([configMap('b', {})], [], { revision: 2 });
    const both = record([configMap('a', {}), configMap('b', {})], [], { revision: 2 });
    const s2 = recordSecret(v2, KEY_A);
    const reassembled = recordSecret(both, undefined);
    (reassembled['metadata'] as Record<string, unknown>)['annotations'] = (s2['metadata'] as Record<string, unknown>)['annotations'];
    assert.equal(await judge(KEY_A, reassembled), false);
    // v1's Secret, stamp and all, under v3's name and labels.
    const s1 = recordSecret(v1, KEY_A);
    const renamed = recordSecret(v1, undefined, { name: 'sh.helm.release.v1.web.v3', labels: { owner: 'helm', name: 'web', version: '3', status: 'deployed' } });
    (renamed['metadata'] as Record<string, unknown>)['annotations'] = (s1['metadata'] as Record<string, unknown>)['annotations'];
    assert.equal(await judge(KEY_A, renamed), false);
  });

  it('a stamped record is still foreign when it is not the record it says it is', async () => {
    // The blob holds revision 2 of release web, but the Secret is named for revision 5 or another release.
    assert.equal(await judge(KEY_A, recordSecret(r, KEY_A, { name: 'sh.helm.release.v1.web.v5' })), false);
    assert.equal(await judge(KEY_A, recordSecret(r, KEY_A, { name: 'sh.helm.release.v1.shop.v2' })), false);
    assert.equal(await judge(KEY_A, recordSecret(record([], [], { name: 'shop' }), KEY_A, { name: 'sh.helm.release.v1.web.v2' })), false);
    assert.equal(await judge(KEY_A, recordSecret(r, KEY_A, { name: 'web-v2' })), false);
  });

  it('the record keys are per CR and derived once each', () => {
    const keys = new RecordKeys(MASTER, 2);
    assert.deepEqual(keys.keyOf('uid-a'), KEY_A);
    assert.equal(keys.keyOf('uid-a'), keys.keyOf('uid-a'));
    assert.notDeepEqual(keys.keyOf('uid-b'), KEY_A);
    assert.throws(() => new RecordKeys(Buffer.alloc(8)), /at least 16 bytes/);
  });
});

describe('adopt: the decision', () => {
  const confinement = { namespace: 'team-a', allowClusterScoped: false, allowCrossNamespace: false };
  const scoped = (object: Record<string, unknown>, scope: ScopedObject['scope'] = 'namespaced'): ScopedObject => ({ object, scope });
  const base = { releaseName: 'web', namespace: 'team-a', chartName: 'webapp', confinement };

  it('adopts a record of this release, from the entry’s chart, with every object in the namespace', () => {
    const objects = [configMap('cfg', {}), configMap('named', {}, 'team-a')];
    const r = record(objects);
    const d = decideAdoption({ ...base, record: r, objects: recordObjects(r, resolveManifestObjects).map((o) => scoped(o)) });
    assert.ok(d.adopt);
  });

  it('refuses another chart, another release, objects elsewhere, and kinds the cluster does not serve, saying why', () => {
    const r = record([configMap('cfg', {})]);
    const ok = [scoped(configMap('cfg', {}))];
    const why = (d: ReturnType<typeof decideAdoption>): string => (d.adopt ? 'adopted' : d.why);
    assert.match(why(decideAdoption({ ...base, record: r, chartName: 'other', objects: ok })), /made from chart "webapp", not "other"/);
    assert.match(why(decideAdoption({ ...base, record: r, releaseName: 'shop', objects: ok })), /holds release team-a\/web, not team-a\/shop/);
    assert.match(
      why(decideAdoption({ ...base, record: r, objects: [scoped(configMap('x', {}, 'kube-system'))] })),
      /lists ConfigMap kube-system\/x outside what the watches entry allows/,
    );
    assert.match(
      why(decideAdoption({ ...base, record: r, objects: [scoped({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'admin2' } }, 'cluster')] })),
      /ClusterRole admin2 outside/,
    );
    assert.match(why(decideAdoption({ ...base, record: r, objects: [scoped(configMap('w', {}), 'unknown')] })), /a kind the cluster does not serve/);
    assert.match(why(decideAdoption({ ...base, record: r, objects: { unreadable: 'bad YAML' } })), /cannot be read: bad YAML/);
  });

  it('allows what the entry allows', () => {
    const r = record([configMap('cfg', {})]);
    const clusterRole = scoped({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'reader' } }, 'cluster');
    assert.ok(decideAdoption({ ...base, record: r, confinement: { ...confinement, allowClusterScoped: true }, objects: [clusterRole] }).adopt);
    assert.ok(decideAdoption({ ...base, record: r, confinement: { ...confinement, allowCrossNamespace: true }, objects: [scoped(configMap('x', {}, 'team-b'))] }).adopt);
  });
});

describe('storage: records with hooks, and the verdict cache', () => {
  it('decodes the hooks’ manifests apart from the release’s', async () => {
    const r = record([configMap('cfg', {})], [[configMap('pre', {})], [configMap('post', {})]]);
    const decoded = await decodeStoredRecord(secretData(r));
    assert.equal(decoded.release.manifest, r.release.manifest);
    assert.deepEqual(decoded.hookManifests, r.hookManifests);
  });

  it('refuses hooks that are not a list of manifests', async () => {
    const bad = Buffer.from(gzipSync(Buffer.from(JSON.stringify({ name: 'web', hooks: [{ name: 'x' }] }))).toString('base64')).toString('base64');
    await assert.rejects(decodeStoredRecord(bad), /hook without a manifest/);
  });

  /** Serves record Secrets by name from a map; counts GETs. */
  function recordsClient(secrets: Map<string, { secret: Record<string, unknown>; rv: string }>): { client: KubeClient; gets: string[] } {
    const gets: string[] = [];
    const client: KubeClient = {
      request: <T>(method: string, path: string): Promise<T> => {
        const name = path.split('/').at(-1) ?? '';
        gets.push(name);
        const s = secrets.get(name);
        if (method !== 'GET' || s === undefined) return Promise.reject(new KubeApiError('not found', { status: 404 }));
        const meta = s.secret['metadata'] as Record<string, unknown>;
        return Promise.resolve({ ...s.secret, metadata: { ...meta, uid: `uid-of-${name}`, resourceVersion: s.rv } } as T);
      },
      watch: () => Promise.reject(new Error('not used')),
      resourceFor: () => Promise.reject(new Error('not used')),
      forward: () => Promise.reject(new Error('not used')),
      pathFor: resourcePath,
    };
    return { client, gets };
  }

  const rev = (n: number, rv: string): StoredRevision => ({
    revision: n,
    status: 'deployed',
    fingerprint: 'f',
    ownerKind: 'WebApp.example.com',
    createdAt: undefined,
    secretName: `sh.helm.release.v1.web.v${n}`,
    uid: `uid-of-sh.helm.release.v1.web.v${n}`,
    resourceVersion: rv,
  });

  it('reads each record once per version: a converged CR costs no GET; a changed record is judged again', async () => {
    const ours = record([configMap('cfg', {})], [], { revision: 1 });
    const secrets = new Map([['sh.helm.release.v1.web.v1', { secret: recordSecret(ours, KEY_A), rv: '10' }]]);
    const { client, gets } = recordsClient(secrets);
    const store = new RecordVerdicts(client, { keys: new RecordKeys(MASTER) });
    assert.deepEqual(await store.foreignRevisions('team-a', 'web', 'uid-a', [rev(1, '10')]), []);
    assert.deepEqual(await store.foreignRevisions('team-a', 'web', 'uid-a', [rev(1, '10')]), []);
    assert.equal(gets.length, 1, 'the second look is answered from the cache');
    // Replaced by a forgery (same name, new resourceVersion): read and judged again.
    const forged = record([configMap('cfg', {}, 'kube-system')], [], { revision: 1 });
    secrets.set('sh.helm.release.v1.web.v1', { secret: recordSecret(forged, undefined), rv: '11' });
    const foreign = await store.foreignRevisions('team-a', 'web', 'uid-a', [rev(1, '11')]);
    assert.deepEqual(foreign.map((r) => r.secretName), ['sh.helm.release.v1.web.v1']);
    assert.equal(gets.length, 2);
    // Another CR asking about the same record version gets its own verdict.
    assert.equal((await store.foreignRevisions('team-a', 'web', 'uid-b', [rev(1, '10')])).length, 1);
  });

  it('a record gone since the LIST is nothing to act on; one that is not a Helm record is foreign', async () => {
    const secrets = new Map([['sh.helm.release.v1.web.v2', { secret: recordSecret(record([]), KEY_A, { data: Buffer.from('not helm').toString('base64') }), rv: '5' }]]);
    const { client, gets } = recordsClient(secrets);
    const store = new RecordVerdicts(client, { keys: new RecordKeys(MASTER) });
    const foreign = await store.foreignRevisions('team-a', 'web', 'uid-a', [rev(1, '4'), rev(2, '5')]);
    assert.deepEqual(foreign.map((r) => r.revision), [2]);
    const read = gets.length;
    assert.deepEqual((await store.foreignRevisions('team-a', 'web', 'uid-a', [rev(2, '5')])).map((r) => r.revision), [2]);
    assert.equal(gets.length, read, 'an unreadable record is not read again at the same version');
  });

  it('hands the keeper the newest record it judged ours without a second GET, only for the very version the LIST showed', async () => {
    const v1 = record([configMap('cfg', { v: '1' })], [], { revision: 1 });
    const v2 = record([configMap('cfg', { v: '2' })], [], { revision: 2 });
    const secrets = new Map([
      ['sh.helm.release.v1.web.v1', { secret: recordSecret(v1, KEY_A), rv: '10' }],
      ['sh.helm.release.v1.web.v2', { secret: recordSecret(v2, KEY_A), rv: '20' }],
    ]);
    const { client, gets } = recordsClient(secrets);
    const store = new RecordVerdicts(client, { keys: new RecordKeys(MASTER) });
    assert.deepEqual(await store.foreignRevisions('team-a', 'web', 'uid-a', [rev(1, '10'), rev(2, '20')]), []);
    assert.equal(gets.length, 2);
    const at = { namespace: 'team-a', release: 'web', revision: 2, ownerUid: 'uid-a' };
    const manifest = await store.ownManifest({ ...at, version: { uid: 'uid-of-sh.helm.release.v1.web.v2', resourceVersion: '20' } });
    assert.match(manifest ?? '', /"v": "2"|v: "2"/);
    assert.equal(gets.length, 2, 'no second GET of the record just judged');
    // Taken once; another CR, another version or no version named: read (and judged) again.
    await store.ownManifest({ ...at, version: { uid: 'uid-of-sh.helm.release.v1.web.v2', resourceVersion: '20' } });
    assert.equal(gets.length, 3);
    await store.foreignRevisions('team-a', 'web', 'uid-b', [rev(2, '20')]);
    await assert.rejects(store.ownManifest({ ...at, ownerUid: 'uid-b', version: { uid: 'uid-of-sh.helm.release.v1.web.v2', resourceVersion: '20' } }), /was not written by chartpilot/);
    secrets.set('sh.helm.release.v1.web.v2', { secret: recordSecret(record([configMap('cfg', {}, 'kube-system')], [], { revision: 2 }), undefined), rv: '21' });
    await assert.rejects(store.ownManifest({ ...at, version: { uid: 'uid-of-sh.helm.release.v1.web.v2', resourceVersion: '20' } }), /was not written by chartpilot/, 'replaced since: judged anew');
  });
});
