/**
 * Seals: how chartpilot proves that an object in a Helm release record was rendered by chartpilot
 * for one CR. Whoever may write Secrets in a namespace can write Helm's release records there, so
 * a record's labels prove nothing. The post-renderer puts on every object it lets through an
 * annotation holding a MAC of the object (its canonical JSON) under a key derived from a master
 * key only the operator holds and the CR's uid. A record whose objects all carry a valid seal was
 * rendered for this CR (a copy of another CR's record, or any edit of an object, breaks them).
 *
 * Pure: the master key is loaded elsewhere; this module only derives, seals and checks.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** The annotation holding an object's seal. */
export const SEAL_ANNOTATION = 'chartpilot.io/seal';

/** Helm 4 adds it before post-rendering and removes it after: never part of what is sealed. */
export const HELM_POSTRENDER_FILENAME_ANNOTATION = 'postrenderer.helm.sh/postrender-filename';

const KEY_CONTEXT = 'chartpilot.io/seal/v1\0';

/** The key that seals one CR's objects: HMAC-SHA256(master key, context + the CR's uid). */
export function deriveSealKey(masterKey: Buffer, crUid: string): Buffer {
  if (masterKey.length < 16) throw new Error('the seal master key must be at least 16 bytes');
  if (crUid === '') throw new Error('a seal key needs the CR uid');
  return createHmac('sha256', masterKey).update(KEY_CONTEXT + crUid).digest();
}

/**
 * The canonical text of an object as sealed: JSON with object keys sorted, integers beyond the
 * safe range written exactly (bigint), without the seal itself and helm's file-name annotation,
 * and without an `annotations` map those removals left empty (helm may drop it or keep `{}`).
 */
export function canonicalObjectText(object: Readonly<Record<string, unknown>>): string {
  return canonical(withoutSealFields(object));
}

/** The seal of `object` under `key` (base64url, 43 characters). */
export function sealOf(key: Buffer, object: Readonly<Record<string, unknown>>): string {
  return createHmac('sha256', key).update(canonicalObjectText(object)).digest('base64url');
}

/** Whether `object` carries a seal that `key` made for exactly this content. */
export function hasValidSeal(key: Buffer, object: Readonly<Record<string, unknown>>): boolean {
  const claimed = annotationsOf(object)?.[SEAL_ANNOTATION];
  if (typeof claimed !== 'string') return false;
  const expected = Buffer.from(sealOf(key, object));
  const actual = Buffer.from(claimed);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

function annotationsOf(object: Readonly<Record<string, unknown>>): Record<string, unknown> | undefined {
  const metadata = object['metadata'];
  if (!isRecord(metadata)) return undefined;
  const annotations = metadata['annotations'];
  return isRecord(annotations) ? annotations : undefined;
}

function withoutSealFields(object: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const annotations = annotationsOf(object);
  if (annotations === undefined) return { ...object };
  const kept = Object.fromEntries(
    Object.entries(annotations).filter(([k]) => k !== SEAL_ANNOTATION && k !== HELM_POSTRENDER_FILENAME_ANNOTATION),
  );
  const metadata = { ...(object['metadata'] as Record<string, unknown>) };
  if (Object.keys(kept).length === 0) delete metadata['annotations'];
  else metadata['annotations'] = kept;
  return { ...object, metadata };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Deterministic JSON; own keys only, so `__proto__` is data here as everywhere else. */
function canonical(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error('a sealed object cannot hold NaN or infinity');
    // An integral float and an int are the same JSON number after helm's decoding.
    return JSON.stringify(value);
  }
  if (typeof value === 'string' || typeof value === 'boolean') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (isRecord(value)) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(',')}}`;
  }
  throw new Error(`a sealed object cannot hold a ${typeof value}`);
}
