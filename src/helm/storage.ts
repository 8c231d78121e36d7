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
import { gunzip, gunzipSync, gzipSync } from 'node:zlib';
import { isConflict } from '../kube/errors.js';
import { CoreResources, deleteObject, findObject, listObjects, replaceObject } from '../kube/objects.js';
import type { KubeClient } from '../kube/rest.js';
import { errorMessage } from '../lib/errors.js';
import { isPlainObject } from '../lib/json.js';
import type { Release, StoredRevision } from '../reconcile/model.js';
import { ReleaseLabels } from '../reconcile/names.js';
import type { ReleaseStore } from '../reconcile/ports.js';
import { toReleaseStatus } from './parse.js';
import type { DecodedRecord, RecordToJudge } from './record-origin.js';

export type { DecodedRecord } from './record-origin.js';

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
  origin: Pick<ReleaseStore, 'foreignRevisions' | 'sealKey'>,
  startup?: { take(namespace: string, release: string): Promise<StoredRevision[] | undefined> },
): ReleaseStore {
  return {
    ...(startup === undefined ? {} : { startupRevisions: (namespace: string, release: string) => startup.take(namespace, release) }),
    foreignRevisions: (namespace, release, ownerUid, revisions) => origin.foreignRevisions(namespace, release, ownerUid, revisions),
    sealKey: (ownerUid) => origin.sealKey(ownerUid),
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
    async operationStartedAt(namespace, revision) {
      const read = await readRecord(client, namespace, revision.secretName);
      // Only the very version the plan looked at: a record rewritten since says nothing about that one.
      if (typeof read === 'string' || read.uid !== revision.uid || read.resourceVersion !== revision.resourceVersion) return undefined;
      const at = read.record.lastDeployed === undefined ? Number.NaN : Date.parse(read.record.lastDeployed);
      return Number.isNaN(at) ? undefined : at;
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

/**
 * `data.release` of a record (as the API returns it) with one more Helm release label: what
 * `helm --labels` would have stored, so helm keeps it when it rewrites the record (superseding).
 */
export function withReleaseLabel(secretData: string, key: string, value: string): string {
  const helmPayload = Buffer.from(secretData, 'base64').toString('latin1');
  let bytes = Buffer.from(helmPayload, 'base64');
  if (bytes[0] === GZIP_MAGIC[0] && bytes[1] === GZIP_MAGIC[1]) bytes = gunzipSync(bytes);
  const json: unknown = JSON.parse(bytes.toString('utf8'));
  if (!isPlainObject(json)) throw new ReleaseRecordError('release record is not a JSON object');
  json.labels = { ...(isPlainObject(json.labels) ? json.labels : {}), [key]: value };
  return Buffer.from(gzipSync(Buffer.from(JSON.stringify(json))).toString('base64')).toString('base64');
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
  try {
    const record = await decodeStoredRecord(data);
    return { record, labels: secret.metadata.labels ?? {}, uid: secret.metadata.uid, resourceVersion: secret.metadata.resourceVersion };
  } catch (err) {
    if (err instanceof ReleaseRecordError) return 'unreadable';
    throw err;
  }
}

/**
 * Adds a Helm release label to one record, in its JSON and on its Secret, only if the record is
 * still at `resourceVersion` (what was checked is what is marked). 'changed' otherwise.
 */
export async function labelRecord(
  client: KubeClient,
  at: { readonly namespace: string; readonly secretName: string; readonly resourceVersion: string | undefined },
  label: { readonly key: string; readonly value: string },
): Promise<'labelled' | 'changed'> {
  const address = { resource: CoreResources.secret, namespace: at.namespace, name: at.secretName };
  const secret = await findObject(client, address);
  const data = secret !== undefined && isPlainObject(secret.data) ? secret.data : undefined;
  if (secret === undefined || data === undefined || typeof data.release !== 'string' || secret.metadata.resourceVersion !== at.resourceVersion) return 'changed';
  const updated = {
    ...secret,
    metadata: { ...secret.metadata, labels: { ...secret.metadata.labels, [label.key]: label.value } },
    data: { ...data, release: withReleaseLabel(data.release, label.key, label.value) },
  };
  try {
    await replaceObject(client, address, updated);
  } catch (err) {
    if (isConflict(err)) return 'changed';
    throw err;
  }
  return 'labelled';
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
