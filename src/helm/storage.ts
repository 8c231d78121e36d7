/**
 * Helm's release storage (driver "secret", Helm's default), read and written without running helm:
 * the one place that knows its format. One Secret per revision, named
 * `sh.helm.release.v1.<release>.v<revision>` and labelled `owner=helm,name=<release>,version=N,
 * status=…` (plus chartpilot's fingerprint and owner-kind labels, set through `helm --labels`).
 *
 * - Deciding "is this release current?" lists the Secrets' metadata only: one small LIST.
 * - The manifest of a revision (for drift and readiness after a restart) is one GET: `data.release`
 *   = base64(gzip(JSON of the release)), with the API server's own base64 of Secret data on top.
 *   Releases written before Helm compressed them are plain JSON under the first base64, which Helm
 *   still reads, and so do we.
 */
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import { CoreResources, deleteObject, findObject, listObjects } from '../kube/objects.js';
import type { KubeClient } from '../kube/rest.js';
import { errorMessage } from '../lib/errors.js';
import { isPlainObject } from '../lib/json.js';
import type { Release, StoredRevision } from '../reconcile/model.js';
import { ReleaseLabels } from '../reconcile/names.js';
import type { ReleaseStore } from '../reconcile/ports.js';
import { toReleaseStatus } from './parse.js';

const gunzipAsync = promisify(gunzip);
const GZIP_MAGIC = [0x1f, 0x8b] as const;

export class ReleaseRecordError extends Error {
  override readonly name = 'ReleaseRecordError';
}

/** `sh.helm.release.v1.<release>.v<revision>`: Helm's name for the Secret of one revision. */
export function releaseSecretName(releaseName: string, revision: number): string {
  return `sh.helm.release.v1.${releaseName}.v${revision}`;
}

/** The stored-revision view of a release Secret's labels; undefined when they are not Helm's. */
export function revisionFromLabels(secretName: string, labels: Readonly<Record<string, string>>, createdAt: string | undefined): StoredRevision | undefined {
  const revision = Number(labels.version);
  if (!Number.isInteger(revision) || revision < 1) return undefined;
  return {
    revision,
    status: labels.status ?? 'unknown',
    fingerprint: labels[ReleaseLabels.fingerprint],
    ownerKind: labels[ReleaseLabels.ownerKind],
    ...(labels[ReleaseLabels.call] === undefined ? {} : { call: labels[ReleaseLabels.call] }),
    createdAt,
    secretName,
  };
}

/** The reconciler's view of Helm's storage: stored revisions from Secret metadata, and lock removal. */
export function createReleaseStore(client: KubeClient): ReleaseStore {
  return {
    async revisions(namespace, release) {
      const list = await listObjects(client, CoreResources.secret, namespace, { labelSelector: `owner=helm,name=${release}`, metadataOnly: true });
      const out: StoredRevision[] = [];
      for (const item of list.items) {
        const r = revisionFromLabels(item.metadata.name, item.metadata.labels ?? {}, item.metadata.creationTimestamp);
        if (r !== undefined) out.push(r);
      }
      return out;
    },
    async deleteRevision(namespace, revision, impersonate) {
      await deleteObject(client, { resource: CoreResources.secret, namespace, name: revision.secretName }, { impersonateUser: impersonate });
    },
  };
}

/** Decodes `data.release` of a release Secret (as the API returns it: base64 once more). */
export async function decodeStoredRelease(secretData: string): Promise<Release> {
  const helmPayload = Buffer.from(secretData, 'base64').toString('latin1');
  let bytes = Buffer.from(helmPayload, 'base64');
  if (bytes[0] === GZIP_MAGIC[0] && bytes[1] === GZIP_MAGIC[1]) {
    try {
      bytes = await gunzipAsync(bytes);
    } catch (cause) {
      throw new ReleaseRecordError(`release record is not valid gzip: ${errorMessage(cause)}`, { cause });
    }
  }
  let json: unknown;
  try {
    json = JSON.parse(bytes.toString('utf8'));
  } catch (cause) {
    throw new ReleaseRecordError('release record is not JSON (is this a Helm release Secret?)', { cause });
  }
  if (!isPlainObject(json)) throw new ReleaseRecordError('release record is not a JSON object');
  const info = isPlainObject(json.info) ? json.info : {};
  const chart = isPlainObject(json.chart) && isPlainObject(json.chart.metadata) ? json.chart.metadata : {};
  return {
    name: str(json.name) ?? '',
    namespace: str(json.namespace) ?? '',
    revision: typeof json.version === 'number' ? json.version : 0,
    status: toReleaseStatus(info.status),
    chartName: str(chart.name) ?? '',
    chartVersion: str(chart.version) ?? '',
    appVersion: str(chart.appVersion) ?? '',
    notes: str(info.notes) ?? '',
    // A chart that renders nothing has no manifest key at all.
    manifest: str(json.manifest) ?? '',
    description: str(info.description) ?? '',
    applyMethod: str(json.apply_method),
  };
}

/** The stored record of one revision, or undefined when that revision's Secret does not exist. */
export async function readStoredRelease(client: KubeClient, namespace: string, releaseName: string, revision: number): Promise<Release | undefined> {
  const secretName = releaseSecretName(releaseName, revision);
  const secret = await findObject(client, { resource: CoreResources.secret, namespace, name: secretName });
  if (secret === undefined) return undefined;
  const data = isPlainObject(secret.data) ? secret.data.release : undefined;
  if (typeof data !== 'string') {
    throw new ReleaseRecordError(`Secret ${namespace}/${secretName} has no data.release: it is not a Helm release record`);
  }
  try {
    return await decodeStoredRelease(data);
  } catch (err) {
    if (err instanceof ReleaseRecordError) {
      throw new ReleaseRecordError(`Secret ${namespace}/${secretName}: ${err.message}`, { cause: err.cause });
    }
    throw err;
  }
}

/** The manifest of one revision, or undefined when that revision's Secret does not exist. */
export async function readReleaseManifest(client: KubeClient, namespace: string, releaseName: string, revision: number): Promise<string | undefined> {
  return (await readStoredRelease(client, namespace, releaseName, revision))?.manifest;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}
