import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { describe, it } from 'node:test';
import {
  ReleaseRecordError,
  createReleaseStore,
  decodeStoredRecord,
  decodeStoredRelease,
  readReleaseManifest,
  readStoredRelease,
  releaseSecretName,
  revisionFromLabels,
} from '../../../src/helm/storage.js';
import { KubeApiError } from '../../../src/kube/errors.js';
import type { KubeClient } from '../../../src/kube/rest.js';
import { resourcePath } from '../../../src/kube/resource.js';
import type { KubeObject } from '../../../src/kube/types.js';
import { fixtureJson } from '../dependents/fixtures.js';

const STORE_OPTS = { foreignRevisions: () => Promise.resolve([]), sealKey: () => '' };

/** A real Secret written by `helm install web2 charts/webapp` (Helm 4.1.4). */
const secret = fixtureJson('release-secret-web2-v1.json');
const releaseData = (secret.data as { release: string }).release;

/** Answers GETs from a map of path → object; anything else is a 404. */
function clientServing(objects: Record<string, unknown>, seen: string[] = []): KubeClient {
  return {
    request: <T>(method: string, path: string): Promise<T> => {
      seen.push(`${method} ${path}`);
      if (method === 'GET' && path in objects) return Promise.resolve(objects[path] as T);
      return Promise.reject(new KubeApiError(`${path} not found`, { status: 404, reason: 'NotFound' }));
    },
    watch: () => Promise.reject(new Error('not used')),
    resourceFor: () => Promise.reject(new Error('not used')),
    forward: () => Promise.reject(new Error('not used')),
    pathFor: resourcePath,
  };
}

/** What Helm stores: base64(gzip(JSON)), then base64 again as Secret data. */
function encode(release: unknown, gzip = true): string {
  const json = Buffer.from(JSON.stringify(release));
  const helm = (gzip ? gzipSync(json) : json).toString('base64');
  return Buffer.from(helm).toString('base64');
}

describe('decodeStoredRelease', () => {
  it('decodes a real Helm 4 release Secret', async () => {
    const r = await decodeStoredRelease(releaseData);
    assert.equal(r.name, 'web2');
    assert.equal(r.namespace, 'exp');
    assert.equal(r.revision, 1);
    assert.equal(r.status, 'deployed');
    assert.equal(r.applyMethod, 'ssa');
    assert.equal((await decodeStoredRecord(releaseData)).lastDeployed, '2026-11-22T13:57:57.065566979Z');
    assert.deepEqual([r.chartName, r.chartVersion, r.appVersion], ['webapp', '0.1.0', '1.0.0']);
    assert.match(r.notes, /web2 serves "Hello from chartpilot" with 2 replica/);
    assert.match(r.manifest, /^# Source: webapp\/templates\/deployment\.yaml\napiVersion: apps\/v1\nkind: Deployment\n/m);
    assert.match(r.manifest, /cpu: "0\.1"/, 'the manifest is what the chart rendered, not what the server stored');
  });

  it('reads uncompressed records (older Helm) and records without a manifest', async () => {
    const r = await decodeStoredRelease(encode({ name: 'x', namespace: 'n', version: 3, info: { status: 'failed' } }, false));
    assert.equal(r.revision, 3);
    assert.equal(r.status, 'failed');
    assert.equal(r.manifest, '');
    assert.equal(r.applyMethod, undefined);
    assert.deepEqual([r.chartName, r.chartVersion, r.appVersion, r.notes], ['', '', '', '']);
  });

  it('rejects data that is not a release record', async () => {
    await assert.rejects(decodeStoredRelease(Buffer.from('hello').toString('base64')), ReleaseRecordError);
    await assert.rejects(decodeStoredRelease(encode([1, 2])), /not a JSON object/);
    const truncatedGzip = Buffer.from(gzipSync(Buffer.from('{"a":1}')).subarray(0, 12).toString('base64')).toString('base64');
    await assert.rejects(decodeStoredRelease(truncatedGzip), /not valid gzip/);
  });
});

describe('readReleaseManifest', () => {
  const path = '/api/v1/namespaces/exp/secrets/sh.helm.release.v1.web2.v1';

  it('GETs the revision’s Secret and returns its manifest', async () => {
    const seen: string[] = [];
    const manifest = await readReleaseManifest(clientServing({ [path]: secret }, seen), 'exp', 'web2', 1);
    assert.deepEqual(seen, [`GET ${path}`]);
    assert.match(manifest ?? '', /kind: Service/);
  });

  it('returns undefined when the revision does not exist', async () => {
    assert.equal(await readReleaseManifest(clientServing({}), 'exp', 'web2', 7), undefined);
  });

  it('names the Secret when it is not a release record', async () => {
    const notHelm: KubeObject = { metadata: { name: 'x' }, data: { other: 'eA==' } };
    await assert.rejects(readStoredRelease(clientServing({ [path]: notHelm }), 'exp', 'web2', 1), /exp\/sh\.helm\.release\.v1\.web2\.v1 has no data\.release/);
  });

  it('passes other API errors through', async () => {
    const client: KubeClient = {
      ...clientServing({}),
      request: () => Promise.reject(new KubeApiError('forbidden', { status: 403 })),
    };
    await assert.rejects(readReleaseManifest(client, 'exp', 'web2', 1), (e: unknown) => e instanceof KubeApiError && e.reason === 'Forbidden');
  });

  it('uses Helm’s Secret naming', () => {
    assert.equal(releaseSecretName('my-app', 12), 'sh.helm.release.v1.my-app.v12');
  });
});

describe('createReleaseStore', () => {
  const secrets = '/api/v1/namespaces/shop/secrets';

  /** Records each request; LIST answers with `items`, DELETE with `deleteStatus`. */
  function storeClient(items: unknown, deleteStatus = 200): { client: KubeClient; seen: { method: string; path: string; opts: unknown }[] } {
    const seen: { method: string; path: string; opts: unknown }[] = [];
    const client: KubeClient = {
      ...clientServing({}),
      request: <T>(method: string, path: string, opts?: unknown): Promise<T> => {
        seen.push({ method, path, opts });
        if (method === 'GET') return Promise.resolve({ metadata: {}, items } as T);
        if (deleteStatus === 404) return Promise.reject(new KubeApiError('gone', { status: 404 }));
        return Promise.resolve({} as T);
      },
    };
    return { client, seen };
  }

  it('lists the release’s Secrets as metadata only and reads each revision from its labels', async () => {
    const { client, seen } = storeClient([
      {
        metadata: {
          name: 'sh.helm.release.v1.web.v2',
          creationTimestamp: '2026-01-01T10:00:00Z',
          labels: { owner: 'helm', name: 'web', version: '2', status: 'deployed', 'chartpilot.io/fingerprint': 'f2', 'chartpilot.io/owner-kind': 'WebApp.example.com' },
        },
      },
      { metadata: { name: 'unrelated', labels: { owner: 'helm', name: 'web' } } },
      {
        metadata: {
          name: 'sh.helm.release.v1.web.v3',
          creationTimestamp: '2026-01-01T10:01:00Z',
          labels: { owner: 'helm', name: 'web', version: '3', status: 'pending-upgrade', 'chartpilot.io/helm-call': '0123456789ab-4' },
        },
      },
    ]);
    const revs = await createReleaseStore(client, STORE_OPTS).revisions('shop', 'web');
    assert.deepEqual(revs, [
      { revision: 2, status: 'deployed', fingerprint: 'f2', ownerKind: 'WebApp.example.com', createdAt: '2026-01-01T10:00:00Z', secretName: 'sh.helm.release.v1.web.v2' },
      { revision: 3, status: 'pending-upgrade', fingerprint: undefined, ownerKind: undefined, call: '0123456789ab-4', createdAt: '2026-01-01T10:01:00Z', secretName: 'sh.helm.release.v1.web.v3' },
    ]);
    assert.equal(seen[0]?.path, secrets);
    const opts = seen[0].opts as { query: { labelSelector: string }; accept: string };
    assert.equal(opts.query.labelSelector, 'owner=helm,name=web');
    assert.match(opts.accept, /as=PartialObjectMetadataList/);
  });

  it('treats an empty metadata list (items: null) as no revisions', async () => {
    assert.deepEqual(await createReleaseStore(storeClient(null).client, STORE_OPTS).revisions('shop', 'web'), []);
  });

  it('deletes a revision’s Secret and ignores one already gone', async () => {
    const rev = revisionFromLabels('sh.helm.release.v1.web.v3', { version: '3', status: 'pending-upgrade' }, undefined);
    assert.ok(rev);
    const ok = storeClient([]);
    await createReleaseStore(ok.client, STORE_OPTS).deleteRevision('shop', rev);
    assert.deepEqual(ok.seen.map((r) => `${r.method} ${r.path}`), [`DELETE ${secrets}/sh.helm.release.v1.web.v3`]);
    await createReleaseStore(storeClient([], 404).client, STORE_OPTS).deleteRevision('shop', rev);
  });

  it('ignores labels that are not a Helm revision', () => {
    assert.equal(revisionFromLabels('x', { version: 'abc' }, undefined), undefined);
    assert.equal(revisionFromLabels('x', { version: '0' }, undefined), undefined);
    assert.equal(revisionFromLabels('x', { version: '4' }, undefined)?.status, 'unknown');
  });
});
