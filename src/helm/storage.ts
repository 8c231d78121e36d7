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
import { resolveManifestObjects } from './postrender/resolve.js';
import { isOurRecord, type DecodedRecord, type ManifestObjects, type RecordToJudge } from './record-origin.js';

export type { DecodedRecord } from './record-origin.js';
import { deriveSealKey } from './seal.js';

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

export interface ReleaseStoreOptions {
  /** The operator's master seal key (seal-key.ts): per-CR keys are derived from it. */
  readonly masterKey: Buffer;
  /** How a manifest becomes objects; the post-renderer's resolver. */
  readonly parse?: ManifestObjects;
  /** How many verdicts to remember (one per record version and CR); oldest forgotten first. */
  readonly maxVerdicts?: number;
}

/** Ten revisions for each of several thousand releases. */
const DEFAULT_MAX_VERDICTS = 50_000;

/**
 * The reconciler's view of Helm's storage: stored revisions from Secret metadata, lock removal,
 * and whether each record was written by chartpilot for the CR (record-origin.ts).
 */
export function createReleaseStore(client: KubeClient, opts: ReleaseStoreOptions): ReleaseStore {
  const parse = opts.parse ?? resolveManifestObjects;
  const maxVerdicts = opts.maxVerdicts ?? DEFAULT_MAX_VERDICTS;
  const sealKeys = new Map<string, Buffer>();
  const keyOf = (ownerUid: string): Buffer => {
    let key = sealKeys.get(ownerUid);
    if (key === undefined) {
      key = deriveSealKey(opts.masterKey, ownerUid);
      sealKeys.set(ownerUid, key);
      if (sealKeys.size > maxVerdicts) sealKeys.delete(sealKeys.keys().next().value as string);
    }
    return key;
  };
  // uid + resourceVersion name one exact content of one record: its verdict cannot change.
  const verdicts = new Map<string, boolean>();
  const remember = (key: string, ours: boolean): void => {
    verdicts.set(key, ours);
    if (verdicts.size > maxVerdicts) verdicts.delete(verdicts.keys().next().value as string);
  };
  return {
    sealKey(ownerUid) {
      return keyOf(ownerUid).toString('base64');
    },
    async foreignRevisions(namespace, release, ownerUid, revisions) {
      const foreign: StoredRevision[] = [];
      for (const r of revisions) {
        const cacheKey = r.uid !== undefined && r.resourceVersion !== undefined ? `${ownerUid}\0${r.uid}\0${r.resourceVersion}` : undefined;
        let ours = cacheKey === undefined ? undefined : verdicts.get(cacheKey);
        if (ours === undefined) {
          const read = await readRecord(client, namespace, r.secretName);
          // Gone since the LIST (helm pruned history, an uninstall): nothing left to act on.
          if (read === 'missing') continue;
          if (read === 'unreadable') {
            ours = false;
            // Not ours whatever version was read: remembering it under the LIST's version is safe.
            if (cacheKey !== undefined) remember(cacheKey, false);
          } else {
            ours = isOurRecord(keyOf(ownerUid), read, { releaseName: release, namespace }, parse);
            // Under the version that was read, which may be newer than the LIST's.
            if (read.uid !== undefined && read.resourceVersion !== undefined) remember(`${ownerUid}\0${read.uid}\0${read.resourceVersion}`, ours);
          }
        }
        if (!ours) foreign.push(r);
      }
      return foreign;
    },
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
  return { release, hookManifests, labels };
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
 * The manifest of one revision, only if its record proves it was written for the CR with
 * `ownerUid` (read again here, so a record replaced since it was judged is judged anew);
 * undefined when the record does not exist. Throws ForeignRecordError otherwise.
 */
export async function readOwnManifest(
  client: KubeClient,
  masterKey: Buffer,
  at: { readonly namespace: string; readonly release: string; readonly revision: number; readonly ownerUid: string },
  parse: ManifestObjects = resolveManifestObjects,
): Promise<string | undefined> {
  const secretName = releaseSecretName(at.release, at.revision);
  const read = await readRecord(client, at.namespace, secretName);
  if (read === 'missing') return undefined;
  if (at.ownerUid === '' || read === 'unreadable' || !isOurRecord(deriveSealKey(masterKey, at.ownerUid), read, { releaseName: at.release, namespace: at.namespace }, parse)) {
    throw new ForeignRecordError(`Helm release record ${at.namespace}/${secretName} was not written by chartpilot for this resource; its objects are not read or repaired`);
  }
  return read.record.release.manifest;
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

/** A release record that chartpilot did not write for the CR asking. */
export class ForeignRecordError extends Error {
  override readonly name = 'ForeignRecordError';
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
