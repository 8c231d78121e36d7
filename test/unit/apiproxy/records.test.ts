/**
 * The release-record rules of a helm call's session (src/apiproxy/records.ts), on records built as
 * helm's storage driver builds them: what is served, what may be written, and that a stamped
 * record verifies as the operator's record check reads it.
 */
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { describe, it } from 'node:test';
import { SessionRecords } from '../../../src/apiproxy/records.js';
import { claimedMacOf, deriveRecordKey, hasValidRecordMac, recordBytesOf, recordMac, RECORD_MAC_ANNOTATION, RELEASE_RECORD_TYPE } from '../../../src/helm/record-mac.js';

const KEY = deriveRecordKey(Buffer.alloc(32, 3), 'uid-web');
const OTHER_KEY = deriveRecordKey(Buffer.alloc(32, 3), 'uid-other');
const CTX = { release: 'web', namespace: 'team-a', key: KEY } as const;

/** `data.release` as the API carries it: base64 of helm's base64(gzip(JSON)). */
function releaseData(over: { name?: string; namespace?: string; version?: number; manifest?: string } = {}): string {
  const json = { name: over.name ?? 'web', namespace: over.namespace ?? 'team-a', version: over.version ?? 1, info: { status: 'deployed' }, manifest: over.manifest ?? '---\n{"kind": "ConfigMap"}\n' };
  return Buffer.from(gzipSync(Buffer.from(JSON.stringify(json))).toString('base64')).toString('base64');
}

/** A record Secret as helm's storage writes it (no namespace in the body: the URL has it). */
function written(revision: number, over: { labels?: Record<string, string>; data?: string; type?: string; name?: string } = {}): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: over.type ?? RELEASE_RECORD_TYPE,
    metadata: { name: over.name ?? `sh.helm.release.v1.web.v${String(revision)}`, labels: over.labels ?? { owner: 'helm', name: 'web', version: String(revision), status: 'deployed' } },
    data: { release: over.data ?? releaseData({ version: revision }) },
  };
}

/** The same Secret as the API server returns it: namespaced, stamped with `key`'s MAC when given. */
function stored(revision: number, key: Buffer | undefined, over: Parameters<typeof written>[1] = {}): Record<string, unknown> {
  const s = written(revision, over);
  const meta = s['metadata'] as Record<string, unknown>;
  meta['namespace'] = 'team-a';
  const bytes = recordBytesOf(s, 'team-a');
  assert.ok(bytes !== undefined);
  if (key !== undefined) meta['annotations'] = { [RECORD_MAC_ANNOTATION]: recordMac(key, bytes) };
  return s;
}

describe('API proxy: release records in a helm call', () => {
  it('serves a storage read only when every record in it is proved for this CR and release', () => {
    const records = new SessionRecords(CTX);
    assert.equal(records.judgeRead([stored(1, KEY), stored(2, KEY)]), undefined);
    assert.equal(records.judgeRead([]), undefined, 'no records: nothing to prove');
    for (const [what, secret] of [
      ['no MAC', stored(3, undefined)],
      ['another CR’s MAC', stored(3, OTHER_KEY)],
      ['another release', stored(1, KEY, { name: 'sh.helm.release.v1.shop.v1' })],
      ['not a record name', stored(1, KEY, { name: 'web-record' })],
      ['not a record type', stored(1, KEY, { type: 'Opaque' })],
    ] as const) {
      const refusal = new SessionRecords(CTX).judgeRead([stored(1, KEY), secret]);
      assert.match(refusal ?? '', /refused to serve Helm release record .* not written by chartpilot for this resource \(release web\)/, what);
    }
    const edited = stored(2, KEY);
    (edited['metadata'] as { labels: Record<string, string> }).labels['status'] = 'superseded';
    assert.match(new SessionRecords(CTX).judgeRead([edited]) ?? '', /sh\.helm\.release\.v1\.web\.v2/, 'a label changed after stamping');
  });

  it('lets helm create one revision, stamping it; a second create, a patch or another release’s record is refused', async () => {
    const records = new SessionRecords(CTX);
    const body = written(1);
    assert.deepEqual(await records.decideWrite('create', 'sh.helm.release.v1.web.v1', body), { allowed: true, stamp: true });
    records.stamp(body);
    const bytes = recordBytesOf(body, 'team-a');
    assert.ok(bytes !== undefined && hasValidRecordMac(KEY, bytes, claimedMacOf(body)), 'the stamp verifies over what is sent');
    assert.equal(hasValidRecordMac(OTHER_KEY, bytes, claimedMacOf(body)), false);

    const again = await records.decideWrite('create', 'sh.helm.release.v1.web.v2', written(2));
    assert.ok(!again.allowed && /already created revision 1/.test(again.message), 'a hook or chart object named like a record');
    const patch = await records.decideWrite('patch', 'sh.helm.release.v1.web.v1', {});
    assert.ok(!patch.allowed && /never patches them/.test(patch.message));
    const other = await records.decideWrite('create', 'sh.helm.release.v1.shop.v1', written(1, { name: 'sh.helm.release.v1.shop.v1' }));
    assert.ok(!other.allowed && /this helm call is for release web in namespace team-a only/.test(other.message));
    const collection = await records.decideWrite('deletecollection', undefined, undefined);
    assert.ok(!collection.allowed);
    assert.deepEqual(await records.decideWrite('delete', 'sh.helm.release.v1.web.v1', undefined), { allowed: true, stamp: false });
  });

  it('lets helm rewrite only the revision it created or one it was served', async () => {
    const records = new SessionRecords(CTX);
    const notSeen = await records.decideWrite('update', 'sh.helm.release.v1.web.v1', written(1));
    assert.ok(!notSeen.allowed && /neither created nor read/.test(notSeen.message));
    assert.equal(records.judgeRead([stored(1, KEY)]), undefined);
    assert.deepEqual(await records.decideWrite('update', 'sh.helm.release.v1.web.v1', written(1, { labels: { owner: 'helm', name: 'web', version: '1', status: 'superseded' } })), { allowed: true, stamp: true });
    assert.deepEqual(await records.decideWrite('create', 'sh.helm.release.v1.web.v2', written(2)), { allowed: true, stamp: true });
    assert.deepEqual(await records.decideWrite('update', 'sh.helm.release.v1.web.v2', written(2)), { allowed: true, stamp: true });
    const refused = new SessionRecords(CTX);
    assert.ok(refused.judgeRead([stored(1, undefined)]) !== undefined);
    assert.equal((await refused.decideWrite('update', 'sh.helm.release.v1.web.v1', written(1))).allowed, false, 'a record refused to helm is not one it was served');
  });

  it('stamps only what helm’s storage would write for that revision', async () => {
    const cases: [string, Record<string, unknown>][] = [
      ['another type', written(1, { type: 'Opaque' })],
      ['labels not helm’s', written(1, { labels: { owner: 'helm', name: 'web', version: '2' } })],
      ['no owner label', written(1, { labels: { name: 'web', version: '1' } })],
      ['a release of another revision inside', written(1, { data: releaseData({ version: 7 }) })],
      ['a release of another name inside', written(1, { data: releaseData({ name: 'shop' }) })],
      ['a release of another namespace inside', written(1, { data: releaseData({ namespace: 'kube-system' }) })],
      ['not base64', written(1, { data: 'not base64!' })],
      ['base64 that is not canonical', written(1, { data: `${releaseData({ version: 1 })}\n` })],
      ['not a Helm release', written(1, { data: Buffer.from('plain').toString('base64') })],
    ];
    for (const [what, body] of cases) {
      const d = await new SessionRecords(CTX).decideWrite('create', 'sh.helm.release.v1.web.v1', body);
      assert.equal(d.allowed, false, what);
    }
    const otherName = await new SessionRecords(CTX).decideWrite('create', 'sh.helm.release.v1.web.v1', written(1, { name: 'sh.helm.release.v1.web.v2' }));
    assert.equal(otherName.allowed, false, 'the body names another Secret than the URL');
  });

  it('tells a write to a record apart from any other Secret write', () => {
    const records = new SessionRecords(CTX);
    assert.equal(records.concerns('sh.helm.release.v1.web.v1', undefined), true);
    assert.equal(records.concerns('sh.helm.release.v1.other.v9', undefined), true);
    assert.equal(records.concerns('app-credentials', { type: RELEASE_RECORD_TYPE }), true, 'the record type under any name');
    assert.equal(records.concerns('app-credentials', { type: 'Opaque' }), false);
    assert.equal(records.concerns(undefined, undefined), false);
  });
});

describe('record MACs as the engine makes them', () => {
  it('this vector is also helm-worker/confine_test.go’s: a record stamped by the proxy or the engine verifies in the other', () => {
    const key = deriveRecordKey(Buffer.from('0123456789abcdef0123456789abcdef'), 'uid-1');
    assert.equal(key.toString('base64'), 'JdCP//hgL3H2kshMBsNH0knBT/mJk+AWP5nLtPAoxF4=');
    const labels = { owner: 'helm', name: 'web', version: '2', status: 'deployed', 'chartpilot.io/fingerprint': 'abc' };
    const mac = recordMac(key, { namespace: 'team-a', name: 'sh.helm.release.v1.web.v2', type: RELEASE_RECORD_TYPE, labels, release: Buffer.from('H4sIAAAAAAAC/w==', 'utf8') });
    assert.equal(mac, '6XIqxjGBG9Fv9rH260AcE17SHcjM761dCqHZ5oq5pfE');
  });
});
