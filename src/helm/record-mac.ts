/**
 * Record MACs: how chartpilot proves that a Helm release record (one Secret per revision) was
 * written by helm for one CR while chartpilot confined it. Whoever may write Secrets in a namespace
 * can write records there, so neither labels nor content prove anything; a MAC does: HMAC-SHA256,
 * under a key derived from the operator's master key and the CR's uid, over the Secret exactly as
 * stored — namespace, name (release and revision), type, every label and the exact bytes of
 * `data.release` (the release with its manifest and hooks). Nothing is parsed to decide: an edited,
 * re-assembled, emptied, renamed or copied record does not verify, whatever a YAML reader would
 * make of it.
 *
 * The API proxy (src/apiproxy/records.ts) stamps the MAC on the records helm writes through it;
 * `chartpilot adopt` stamps records it takes over. Pure: keys are loaded elsewhere.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** The annotation on a record's Secret holding its MAC. */
export const RECORD_MAC_ANNOTATION = 'chartpilot.io/record-mac';
/** The Secret type helm's storage driver gives release records. */
export const RELEASE_RECORD_TYPE = 'helm.sh/release.v1';

const KEY_CONTEXT = 'chartpilot.io/record/v1\0';
const RECORD_NAME = /^sh\.helm\.release\.v1\.(.+)\.v([1-9][0-9]{0,9})$/;

/** The key that proves one CR's records: HMAC-SHA256(master key, context + the CR's uid). */
export function deriveRecordKey(masterKey: Buffer, crUid: string): Buffer {
  if (masterKey.length < 16) throw new Error('the master key must be at least 16 bytes');
  if (crUid === '') throw new Error('a record key needs the CR uid');
  return createHmac('sha256', masterKey).update(KEY_CONTEXT + crUid).digest();
}

/** `sh.helm.release.v1.<release>.v<revision>` read back; undefined for any other name. */
export function parseRecordName(secretName: string): { readonly release: string; readonly revision: number } | undefined {
  const m = RECORD_NAME.exec(secretName);
  if (m?.[1] === undefined || m[2] === undefined) return undefined;
  return { release: m[1], revision: Number(m[2]) };
}

/** A record's Secret as the MAC covers it. */
export interface RecordBytes {
  readonly namespace: string;
  readonly name: string;
  readonly type: string;
  readonly labels: Readonly<Record<string, string>>;
  /** `data.release` as bytes (the API carries them base64-encoded once more). */
  readonly release: Buffer;
}

/** The MAC of `r` under `key` (base64url, 43 characters). */
export function recordMac(key: Buffer, r: RecordBytes): string {
  const mac = createHmac('sha256', key);
  // Every field length-prefixed: no two different records have the same input.
  const field = (b: Buffer | string): void => {
    const bytes = typeof b === 'string' ? Buffer.from(b, 'utf8') : b;
    const len = Buffer.alloc(8);
    len.writeBigUInt64BE(BigInt(bytes.length));
    mac.update(len).update(bytes);
  };
  field(r.namespace);
  field(r.name);
  field(r.type);
  const labels = Object.keys(r.labels).sort();
  field(String(labels.length));
  for (const k of labels) {
    field(k);
    field(r.labels[k] ?? '');
  }
  field(r.release);
  return mac.digest('base64url');
}

/** Whether `claimed` is the MAC `key` makes for exactly `r`. */
export function hasValidRecordMac(key: Buffer, r: RecordBytes, claimed: unknown): boolean {
  if (typeof claimed !== 'string') return false;
  const expected = Buffer.from(recordMac(key, r));
  const actual = Buffer.from(claimed);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/**
 * The MAC's input from a Secret object (as the API returns it, or as helm sends it) in
 * `namespace`; undefined when it is no release record at all (no `data.release` text).
 */
export function recordBytesOf(secret: Readonly<Record<string, unknown>>, namespace: string): RecordBytes | undefined {
  const metadata = objectAt(secret, 'metadata');
  const data = objectAt(secret, 'data');
  const name = metadata?.['name'];
  const release = data?.['release'];
  if (typeof name !== 'string' || typeof release !== 'string') return undefined;
  const labels: Record<string, string> = {};
  const given = objectAt(metadata, 'labels');
  for (const [k, v] of Object.entries(given ?? {})) {
    // A label that is not text never reaches the API server's storage; it makes no record.
    if (typeof v !== 'string') return undefined;
    labels[k] = v;
  }
  const type = secret['type'];
  return { namespace, name, type: typeof type === 'string' ? type : '', labels, release: Buffer.from(release, 'base64') };
}

/** The MAC a record's Secret claims. */
export function claimedMacOf(secret: Readonly<Record<string, unknown>>): unknown {
  return objectAt(objectAt(secret, 'metadata'), 'annotations')?.[RECORD_MAC_ANNOTATION];
}

function objectAt(parent: Readonly<Record<string, unknown>> | undefined, key: string): Record<string, unknown> | undefined {
  const v = parent === undefined || !Object.hasOwn(parent, key) ? undefined : parent[key];
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

/** Per-CR record keys, derived once each and remembered (oldest forgotten first). */
export class RecordKeys {
  private readonly keys = new Map<string, Buffer>();

  constructor(
    private readonly masterKey: Buffer,
    private readonly maxEntries = 50_000,
  ) {
    if (masterKey.length < 16) throw new Error('the master key must be at least 16 bytes');
  }

  keyOf(crUid: string): Buffer {
    let key = this.keys.get(crUid);
    if (key === undefined) {
      key = deriveRecordKey(this.masterKey, crUid);
      this.keys.set(crUid, key);
      if (this.keys.size > this.maxEntries) this.keys.delete(this.keys.keys().next().value as string);
    }
    return key;
  }
}
