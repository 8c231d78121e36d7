/**
 * Reads a release straight from Helm's storage Secret, so the operator can recover a release's
 * manifest (e.g. after a restart) with one GET instead of running helm.
 *
 * Helm's secrets driver stores `data.release` = base64(gzip(JSON of the release)); the API server
 * adds its own base64 of Secret data on top. Releases written before Helm compressed them are
 * plain JSON under the first base64, which Helm still reads, and so do we.
 */
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import { CoreResources, findObject } from '../kube/objects.js';
import type { KubeClient } from '../kube/rest.js';
import { errorMessage } from '../lib/errors.js';
import { isPlainObject } from '../lib/json.js';

const gunzipAsync = promisify(gunzip);
const GZIP_MAGIC = [0x1f, 0x8b] as const;

/** The parts of a stored release the operator uses (Helm's JSON has more: chart files, values…). */
export interface ReleaseRecord {
  name: string;
  namespace: string;
  revision: number;
  /** deployed, superseded, failed, pending-install, … */
  status: string | undefined;
  manifest: string;
  notes: string | undefined;
  chart: { name: string | undefined; version: string | undefined; appVersion: string | undefined };
  /** `ssa` or `csa` (Helm 4 records how it applied the objects); undefined for Helm 3 releases. */
  applyMethod: string | undefined;
}

export class ReleaseRecordError extends Error {
  override readonly name = 'ReleaseRecordError';
}

/** `sh.helm.release.v1.<release>.v<revision>`: Helm's name for the Secret of one revision. */
export function releaseSecretName(releaseName: string, revision: number): string {
  return `sh.helm.release.v1.${releaseName}.v${revision}`;
}

/** Decodes `data.release` of a release Secret (as the API returns it: base64 once more). */
export async function decodeReleaseRecord(secretData: string): Promise<ReleaseRecord> {
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
    status: str(info.status),
    // A chart that renders nothing has no manifest key at all.
    manifest: str(json.manifest) ?? '',
    notes: str(info.notes),
    chart: { name: str(chart.name), version: str(chart.version), appVersion: str(chart.appVersion) },
    applyMethod: str(json.apply_method),
  };
}

/** The stored record of one revision, or undefined when that revision's Secret does not exist. */
export async function readReleaseRecord(
  client: KubeClient,
  namespace: string,
  releaseName: string,
  revision: number,
): Promise<ReleaseRecord | undefined> {
  const secretName = releaseSecretName(releaseName, revision);
  const secret = await findObject(client, { resource: CoreResources.secret, namespace, name: secretName });
  if (secret === undefined) return undefined;
  const data = isPlainObject(secret.data) ? secret.data.release : undefined;
  if (typeof data !== 'string') {
    throw new ReleaseRecordError(`Secret ${namespace}/${secretName} has no data.release: it is not a Helm release record`);
  }
  try {
    return await decodeReleaseRecord(data);
  } catch (err) {
    if (err instanceof ReleaseRecordError) {
      throw new ReleaseRecordError(`Secret ${namespace}/${secretName}: ${err.message}`, { cause: err.cause });
    }
    throw err;
  }
}

/** The manifest of one revision, or undefined when that revision's Secret does not exist. */
export async function readReleaseManifest(
  client: KubeClient,
  namespace: string,
  releaseName: string,
  revision: number,
): Promise<string | undefined> {
  return (await readReleaseRecord(client, namespace, releaseName, revision))?.manifest;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}
