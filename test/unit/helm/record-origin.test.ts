import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { describe, it } from 'node:test';
import { stringify } from 'yaml';
import { decideAdoption, type ScopedObject } from '../../../src/helm/adoption.js';
import { resolveManifestObjects } from '../../../src/helm/postrender/resolve.js';
import { ADOPTED_LABEL, adoptionMark, isOurRecord, recordObjects, type DecodedRecord } from '../../../src/helm/record-origin.js';
import { deriveSealKey, SEAL_ANNOTATION, sealOf } from '../../../src/helm/seal.js';
import { decodeStoredRecord, withReleaseLabel } from '../../../src/helm/storage.js';
import { RecordVerdicts } from '../../../src/helm/record-verdicts.js';
import { KubeApiError } from '../../../src/kube/errors.js';
import type { KubeClient } from '../../../src/kube/rest.js';
import { resourcePath } from '../../../src/kube/resource.js';
import type { Release, StoredRevision } from '../../../src/reconcile/model.js';

const MASTER = Buffer.alloc(32, 9);
const KEY_A = deriveSealKey(MASTER, 'uid-a');
const KEY_B = deriveSealKey(MASTER, 'uid-b');
const EXPECT = { releaseName: 'web', namespace: 'team-a' } as const;

function configMap(name: string, data: Record<string, string>, namespace?: string): Record<string, unknown> {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, ...(namespace === undefined ? {} : { namespace }) }, data };
}

/** What the post-renderer emits: the object with its seal among its annotations. */
function sealed(key: Buffer, object: Record<string, unknown>): Record<string, unknown> {
  const metadata = object.metadata as Record<string, unknown>;
  const annotations = { ...((metadata.annotations as Record<string, string> | undefined) ?? {}), [SEAL_ANNOTATION]: sealOf(key, object) };
  return { ...object, metadata: { ...metadata, annotations } };
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

const judge = (key: Buffer, r: DecodedRecord, labels: Record<string, string> = {}): boolean => isOurRecord(key, { record: r, labels }, EXPECT, resolveManifestObjects);

describe('record origin: seals', () => {
  const cm = configMap('cfg', { mode: 'fast' });

  it('a record whose every object (hooks too) is sealed with this CR’s key is ours', () => {
    assert.equal(judge(KEY_A, record([sealed(KEY_A, cm)], [[sealed(KEY_A, configMap('hook', {}))]])), true);
  });

  it('a copy of another CR’s record is not: its seals are under that CR’s key', () => {
    assert.equal(judge(KEY_A, record([sealed(KEY_B, cm)])), false);
    assert.equal(judge(KEY_B, record([sealed(KEY_B, cm)])), true, 'the same record is the other CR’s');
  });

  it('an edited object is not, nor an object added beside sealed ones, nor an unsealed hook', () => {
    const s = sealed(KEY_A, cm);
    const edited = { ...s, data: { mode: 'slow' } };
    assert.equal(judge(KEY_A, record([edited])), false);
    const moved = { ...s, metadata: { ...(s.metadata as object), namespace: 'kube-system' } };
    assert.equal(judge(KEY_A, record([moved])), false, 'a sealed object sent to another namespace');
    assert.equal(judge(KEY_A, record([s, configMap('extra', {}, 'kube-system')])), false);
    assert.equal(judge(KEY_A, record([s], [[configMap('hook', {})]])), false);
  });

  it('copied labels and annotations prove nothing: a seal annotation of the wrong length or value is refused', () => {
    const s = sealed(KEY_A, cm);
    const meta = s.metadata as { annotations: Record<string, string> };
    for (const bad of ['', 'x', `${meta.annotations[SEAL_ANNOTATION]}x`, sealOf(KEY_A, configMap('other', {}))]) {
      assert.equal(judge(KEY_A, record([{ ...s, metadata: { ...meta, annotations: { [SEAL_ANNOTATION]: bad } } }])), false, bad);
    }
  });

  it('an annotations map left empty by removing the seal is the same object as none (helm may keep {} or drop it)', () => {
    const withEmpty = sealed(KEY_A, configMap('cfg', { a: '1' }));
    assert.equal(judge(KEY_A, record([withEmpty])), true);
    const objectWithEmptyMap = { ...cm, metadata: { name: 'cfg', annotations: {} } };
    assert.equal(sealOf(KEY_A, objectWithEmptyMap), sealOf(KEY_A, cm));
  });

  it('a record of another release or namespace is not ours even when sealed', () => {
    assert.equal(judge(KEY_A, record([sealed(KEY_A, cm)], [], { name: 'other' })), false);
    assert.equal(judge(KEY_A, record([sealed(KEY_A, cm)], [], { namespace: 'team-b' })), false);
  });

  it('an unreadable manifest is not ours', () => {
    assert.equal(judge(KEY_A, { release: release({ manifest: 'a: [unclosed' }), hookManifests: [], labels: {} }), false);
    assert.equal(judge(KEY_A, { release: release({ manifest: '- just\n- a list\n' }), hookManifests: [], labels: {} }), false);
  });

  it('objects in an items list are judged one by one, as the decoder flattens them', () => {
    const list = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'outer' }, items: [sealed(KEY_A, cm), configMap('smuggled', {}, 'kube-system')] };
    assert.equal(recordObjects(record([list]), resolveManifestObjects).length, 2);
    assert.equal(judge(KEY_A, record([list])), false);
  });
});

describe('record origin: adoption marks', () => {
  const objects = [configMap('cfg', { mode: 'fast' })];
  const r = record(objects, [[configMap('hook', {})]]);
  const all = recordObjects(r, resolveManifestObjects);

  it('a record without seals is ours once marked for this CR, release, revision and content: on its Secret or in the record', () => {
    assert.equal(judge(KEY_A, r), false);
    const mark = adoptionMark(KEY_A, 'web', 2, all);
    assert.match(mark, /^[0-9a-f]{62}$/, 'fits a label value');
    assert.equal(judge(KEY_A, r, { [ADOPTED_LABEL]: mark }), true);
    assert.equal(judge(KEY_A, { ...r, labels: { [ADOPTED_LABEL]: mark } }), true, 'helm copies the record’s labels to the Secret it rewrites');
  });

  it('a mark made for another CR, revision, release or content does not count', () => {
    assert.equal(judge(KEY_A, r, { [ADOPTED_LABEL]: adoptionMark(KEY_B, 'web', 2, all) }), false);
    assert.equal(judge(KEY_A, r, { [ADOPTED_LABEL]: adoptionMark(KEY_A, 'web', 3, all) }), false);
    assert.equal(judge(KEY_A, r, { [ADOPTED_LABEL]: adoptionMark(KEY_A, 'web2', 2, all) }), false);
    const edited = record([configMap('cfg', { mode: 'slow' })], [[configMap('hook', {})]]);
    assert.equal(judge(KEY_A, edited, { [ADOPTED_LABEL]: adoptionMark(KEY_A, 'web', 2, all) }), false);
  });
});

describe('adopt: the decision', () => {
  const confinement = { namespace: 'team-a', allowClusterScoped: false, allowCrossNamespace: false };
  const scoped = (object: Record<string, unknown>, scope: ScopedObject['scope'] = 'namespaced'): ScopedObject => ({ object, scope });
  const base = { key: KEY_A, releaseName: 'web', namespace: 'team-a', chartName: 'webapp', confinement };

  it('adopts a record of this release, from the entry’s chart, with every object in the namespace; the mark then verifies', () => {
    const objects = [configMap('cfg', {}), configMap('named', {}, 'team-a')];
    const r = record(objects);
    const d = decideAdoption({ ...base, record: r, objects: recordObjects(r, resolveManifestObjects).map((o) => scoped(o)) });
    assert.ok(d.adopt);
    assert.equal(judge(KEY_A, r, { [ADOPTED_LABEL]: d.mark }), true);
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

/** What Helm stores: base64(gzip(JSON)), then base64 again as Secret data. */
function secretData(r: DecodedRecord): string {
  const json = { name: r.release.name, namespace: r.release.namespace, version: r.release.revision, info: { status: 'deployed' }, chart: { metadata: { name: 'webapp' } }, manifest: r.release.manifest, hooks: r.hookManifests.map((m, i) => ({ name: `h${i}`, manifest: m })) };
  return Buffer.from(gzipSync(Buffer.from(JSON.stringify(json))).toString('base64')).toString('base64');
}

describe('storage: records with hooks, and the verdict cache', () => {
  it('adds a release label in the record, where helm keeps it', async () => {
    const r = record([configMap('cfg', {})]);
    const decoded = await decodeStoredRecord(withReleaseLabel(secretData(r), ADOPTED_LABEL, 'abc'));
    assert.deepEqual(decoded.labels, { [ADOPTED_LABEL]: 'abc' });
    assert.equal(decoded.release.manifest, r.release.manifest, 'nothing else changes');
  });

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
  function recordsClient(secrets: Map<string, { data: string; rv: string; annotations?: Record<string, string> }>): { client: KubeClient; gets: string[] } {
    const gets: string[] = [];
    const client: KubeClient = {
      request: <T>(method: string, path: string): Promise<T> => {
        const name = path.split('/').at(-1) ?? '';
        gets.push(name);
        const s = secrets.get(name);
        if (method !== 'GET' || s === undefined) return Promise.reject(new KubeApiError('not found', { status: 404 }));
        return Promise.resolve({ metadata: { name, uid: `uid-of-${name}`, resourceVersion: s.rv, annotations: s.annotations }, data: { release: s.data } } as T);
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
    const ours = record([sealed(KEY_A, configMap('cfg', {}))], [], { revision: 1 });
    const secrets = new Map([['sh.helm.release.v1.web.v1', { data: secretData(ours), rv: '10' }]]);
    const { client, gets } = recordsClient(secrets);
    const store = new RecordVerdicts(client, { masterKey: MASTER });
    assert.deepEqual(await store.foreignRevisions('team-a', 'web', 'uid-a', [rev(1, '10')]), []);
    assert.deepEqual(await store.foreignRevisions('team-a', 'web', 'uid-a', [rev(1, '10')]), []);
    assert.equal(gets.length, 1, 'the second look is answered from the cache');
    // Replaced by a forgery (same name, new resourceVersion): read and judged again.
    const forged = record([configMap('cfg', {}, 'kube-system')], [], { revision: 1 });
    secrets.set('sh.helm.release.v1.web.v1', { data: secretData(forged), rv: '11' });
    const foreign = await store.foreignRevisions('team-a', 'web', 'uid-a', [rev(1, '11')]);
    assert.deepEqual(foreign.map((r) => r.secretName), ['sh.helm.release.v1.web.v1']);
    assert.equal(gets.length, 2);
    // Another CR asking about the same record version gets its own verdict.
    assert.equal((await store.foreignRevisions('team-a', 'web', 'uid-b', [rev(1, '10')])).length, 1);
  });

  it('a record gone since the LIST is nothing to act on; one that is not a Helm record is foreign', async () => {
    const secrets = new Map([['sh.helm.release.v1.web.v2', { data: Buffer.from('not helm').toString('base64'), rv: '5' }]]);
    const { client, gets } = recordsClient(secrets);
    const store = new RecordVerdicts(client, { masterKey: MASTER });
    const foreign = await store.foreignRevisions('team-a', 'web', 'uid-a', [rev(1, '4'), rev(2, '5')]);
    assert.deepEqual(foreign.map((r) => r.revision), [2]);
    const read = gets.length;
    assert.deepEqual((await store.foreignRevisions('team-a', 'web', 'uid-a', [rev(2, '5')])).map((r) => r.revision), [2]);
    assert.equal(gets.length, read, 'an unreadable record is not read again at the same version');
  });

  it('hands the keeper the newest record it judged ours without a second GET, only for the very version the LIST showed', async () => {
    const v1 = record([sealed(KEY_A, configMap('cfg', { v: '1' }))], [], { revision: 1 });
    const v2 = record([sealed(KEY_A, configMap('cfg', { v: '2' }))], [], { revision: 2 });
    const secrets = new Map([
      ['sh.helm.release.v1.web.v1', { data: secretData(v1), rv: '10' }],
      ['sh.helm.release.v1.web.v2', { data: secretData(v2), rv: '20' }],
    ]);
    const { client, gets } = recordsClient(secrets);
    const store = new RecordVerdicts(client, { masterKey: MASTER });
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
    secrets.set('sh.helm.release.v1.web.v2', { data: secretData(record([configMap('cfg', {}, 'kube-system')], [], { revision: 2 })), rv: '21' });
    await assert.rejects(store.ownManifest({ ...at, version: { uid: 'uid-of-sh.helm.release.v1.web.v2', resourceVersion: '20' } }), /was not written by chartpilot/, 'replaced since: judged anew');
  });

  it('the seal key the post-renderer gets is the derived per-CR key', () => {
    const store = new RecordVerdicts(recordsClient(new Map()).client, { masterKey: MASTER });
    assert.equal(store.sealKey('uid-a'), KEY_A.toString('base64'));
    assert.notEqual(store.sealKey('uid-b'), store.sealKey('uid-a'));
  });
});
