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
import { isConflict } from '../kube/errors.js';
import { CoreResources, deleteObject, findObject, listObjects, mergePatchObject } from '../kube/objects.js';
import type { KubeClient } from '../kube/rest.js';
import { errorMessage } from '../lib/errors.js';
import { isPlainObject } from '../lib/json.js';
import type { Release, StoredRevision } from '../core/model.js';
import { ReleaseLabels } from '../engines/helm/names.js';
import type { ReleaseStore } from '../engines/helm/ports.js';
import { toReleaseStatus } from './parse.js';
import { claimedMacOf, parseRecordName, recordBytesOf, recordMac, RECORD_MAC_ANNOTATION, RELEASE_RECORD_TYPE } from './record-mac.js';
import type { DecodedRecord, RecordToJudge } from './record-origin.js';

export type { DecodedRecord } from './record-origin.js';

const gunzipAsync = promisify(gunzip);
const GZIP_MAGIC = [0x1f, 0x8b] as const;

export class ReleaseRecordError extends Error {
  override readonly name = 'ReleaseRecordError';
}

/** The selector term helm's storage driver puts in every query of its records. */
const OWNER_HELM = /(?:^|,)\s*owner\s*(?:==?)\s*helm\s*(?:,|$)/u;

/** Whether a LIST of Secrets with this label selector is a read of helm's release storage. */
export function isStorageQuery(labelSelector: string | null): boolean {
  return labelSelector !== null && OWNER_HELM.test(labelSelector);
}

/** Whether a Secret name is a release record's (any release). */
export function isRecordName(name: string | undefined): boolean {
  return name !== undefined && parseRecordName(name) !== undefined;
}

/**
 * Why `body` is not the Secret helm's storage driver writes for `revision` of `release` (type,
 * name, helm's labels, canonical base64 of a release that says it is that revision); undefined
 * when it is.
 */
export async function releaseRecordProblem(
  body: unknown,
  expect: { readonly name: string; readonly namespace: string; readonly release: string; readonly revision: number },
): Promise<string | undefined> {
  if (!isPlainObject(body)) return 'the body is not a Secret object the proxy can read';
  if (body.kind !== 'Secret' || body.type !== RELEASE_RECORD_TYPE) return `it is not a Secret of type ${RELEASE_RECORD_TYPE}`;
  const meta = isPlainObject(body.metadata) ? body.metadata : {};
  if (meta.name !== expect.name) return 'the body names another Secret';
  if (meta.namespace !== undefined && meta.namespace !== '' && meta.namespace !== expect.namespace) return 'the body names another namespace';
  const labels = isPlainObject(meta.labels) ? meta.labels : {};
  if (labels.owner !== 'helm' || labels.name !== expect.release || labels.version !== String(expect.revision)) {
    return "its labels are not helm storage's (owner=helm, name=<release>, version=<revision>)";
  }
  const release = isPlainObject(body.data) ? body.data.release : undefined;
  // Canonical base64 only: the bytes the MAC covers are exactly the bytes the server stores.
  if (typeof release !== 'string' || Buffer.from(release, 'base64').toString('base64') !== release) return 'data.release is not base64 text';
  try {
    const decoded = await decodeStoredRecord(release);
    if (decoded.release.name !== expect.release || decoded.release.namespace !== expect.namespace || decoded.release.revision !== expect.revision) {
      return 'the release it holds is another release, namespace or revision';
    }
  } catch {
    return 'data.release is not a Helm release';
  }
  return undefined;
}

/** `sh.helm.release.v1.<release>.v<revision>`: Helm's name for the Secret of one revision. */
export function releaseSecretName(releaseName: string, revision: number): string {
  return `sh.helm.release.v1.${releaseName}.v${revision}`;
}

/** The stored-revision view of a release Secret's labels; undefined when they are not Helm's. */
export function revisionFromLabels(
  secretName: string,
  labels: Readonly<Record<string, string>>,
  createdAt: string | undefined,
  version?: { readonly uid?: string | undefined; readonly resourceVersion?: string | undefined },
): StoredRevision | undefined {
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
    ...(version?.uid === undefined ? {} : { uid: version.uid }),
    ...(version?.resourceVersion === undefined ? {} : { resourceVersion: version.resourceVersion }),
  };
}

/**
 * The reconciler's view of Helm's storage: stored revisions from Secret metadata, and lock
 * removal; whether a record was written by chartpilot for a CR comes from `origin`
 * (record-verdicts.ts).
 */
export function createReleaseStore(
  client: KubeClient,
  origin: Pick<ReleaseStore, 'foreignRevisions'>,
  startup?: { take(namespace: string, release: string): Promise<StoredRevision[] | undefined> },
): ReleaseStore {
  return {
    ...(startup === undefined ? {} : { startupRevisions: (namespace: string, release: string) => startup.take(namespace, release) }),
    foreignRevisions: (namespace, release, ownerUid, revisions) => origin.foreignRevisions(namespace, release, ownerUid, revisions),
    async revisions(namespace, release) {
      const list = await listObjects(client, CoreResources.secret, namespace, { labelSelector: `owner=helm,name=${release}`, metadataOnly: true });
      const out: StoredRevision[] = [];
      for (const item of list.items) {
        const m = item.metadata;
        const r = revisionFromLabels(m.name, m.labels ?? {}, m.creationTimestamp, { uid: m.uid, resourceVersion: m.resourceVersion });
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
  return (await decodeStoredRecord(secretData)).release;
}

/** Decodes `data.release` of a release Secret with its hooks' manifests. */
export async function decodeStoredRecord(secretData: string): Promise<DecodedRecord> {
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
  const hookManifests: string[] = [];
  if (json.hooks !== undefined && json.hooks !== null) {
    if (!Array.isArray(json.hooks)) throw new ReleaseRecordError('release record has hooks that are not a list');
    for (const h of json.hooks) {
      if (!isPlainObject(h) || typeof h.manifest !== 'string') throw new ReleaseRecordError('release record has a hook without a manifest');
      hookManifests.push(h.manifest);
    }
  }
  const release: Release = {
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
  const labels: Record<string, string> = {};
  if (isPlainObject(json.labels)) for (const [k, v] of Object.entries(json.labels)) if (typeof v === 'string') labels[k] = v;
  return { release, hookManifests, labels, lastDeployed: str(info.last_deployed) };
}

/** One release record's Secret, read and decoded, with what identifies this exact version of it. */
export interface ReadRecord extends RecordToJudge {
  readonly uid: string | undefined;
  readonly resourceVersion: string | undefined;
}

/** Reads and decodes one record; 'unreadable' when it is not a Helm record at all. */
export async function readRecord(client: KubeClient, namespace: string, secretName: string): Promise<ReadRecord | 'missing' | 'unreadable'> {
  const secret = await findObject(client, { resource: CoreResources.secret, namespace, name: secretName });
  if (secret === undefined) return 'missing';
  const data = isPlainObject(secret.data) ? secret.data.release : undefined;
  if (typeof data !== 'string') return 'unreadable';
  const bytes = recordBytesOf(secret, namespace);
  if (bytes === undefined) return 'unreadable';
  try {
    const record = await decodeStoredRecord(data);
    return {
      record,
      labels: secret.metadata.labels ?? {},
      bytes,
      mac: claimedMacOf(secret),
      uid: secret.metadata.uid,
      resourceVersion: secret.metadata.resourceVersion,
    };
  } catch (err) {
    if (err instanceof ReleaseRecordError) return 'unreadable';
    throw err;
  }
}

/**
 * Stamps one record with the CR's record MAC (what `chartpilot adopt` does when it takes a record
 * over), only if the record is still at `resourceVersion`: what was checked is what is stamped.
 * 'changed' otherwise. The MAC covers the record as read, which the stamp does not change.
 */
export async function stampRecord(
  client: KubeClient,
  at: { readonly namespace: string; readonly secretName: string; readonly resourceVersion: string | undefined },
  key: Buffer,
): Promise<'stamped' | 'changed'> {
  const address = { resource: CoreResources.secret, namespace: at.namespace, name: at.secretName };
  const secret = await findObject(client, address);
  if (secret === undefined || secret.metadata.resourceVersion !== at.resourceVersion) return 'changed';
  const bytes = recordBytesOf(secret, at.namespace);
  if (bytes === undefined) return 'changed';
  const patch = { metadata: { resourceVersion: at.resourceVersion, annotations: { [RECORD_MAC_ANNOTATION]: recordMac(key, bytes) } } };
  try {
    await mergePatchObject(client, address, patch);
  } catch (err) {
    if (isConflict(err)) return 'changed';
    throw err;
  }
  return 'stamped';
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
