/**
 * Whether a Helm release record was written by chartpilot for one CR. Pure: given the CR's seal
 * key, the decoded record and its Secret's labels, a verdict.
 *
 * A record is ours for the CR iff every object of its manifest and of every hook's manifest
 * carries a valid seal under the CR's key (the post-renderer sealed them: nobody without the
 * operator's master key can make one, and a copy of another CR's record or any edit breaks them),
 * OR the record's Secret carries an adoption mark: `chartpilot adopt` looked at the record (its
 * chart, its objects within the confinement) and marked exactly these objects, this release name
 * and revision, with the CR's key. Labels and every other annotation are copied by a forger at
 * will; neither of these can be.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { canonicalObjectText, hasValidSeal } from './seal.js';
import type { Release } from '../reconcile/model.js';

/** A release record as stored: the release, and the manifests of its hooks (kept apart by Helm). */
export interface DecodedRecord {
  readonly release: Release;
  /** `hooks[].manifest`, in the record's order. */
  readonly hookManifests: readonly string[];
  /** Helm's release labels (`helm --labels`, kept in the record and copied to its Secret). */
  readonly labels: Readonly<Record<string, string>>;
  /** `info.last_deployed`: when the operation that wrote this revision began, by helm's clock. */
  readonly lastDeployed?: string | undefined;
}

/** A Helm release label: `chartpilot adopt` took this record over for its CR. */
export const ADOPTED_LABEL = 'chartpilot.io/adopted';
const MARK_BYTES = 31;

/** Parses a manifest into the objects helm would apply; throws when it cannot. */
export type ManifestObjects = (text: string) => Record<string, unknown>[];

/** Every object of a record, manifest first, then each hook's; throws when any cannot be read. */
export function recordObjects(record: DecodedRecord, parse: ManifestObjects): Record<string, unknown>[] {
  return [...parse(record.release.manifest), ...record.hookManifests.flatMap((m) => parse(m))];
}

/** sha256 (hex) of the canonical texts of `objects`, in order, each ended by a newline. */
export function objectsDigest(objects: readonly Record<string, unknown>[]): string {
  const hash = createHash('sha256');
  for (const o of objects) hash.update(`${canonicalObjectText(o)}\n`);
  return hash.digest('hex');
}

/** The adoption mark of one record: hex of HMAC(key, "adopt\0" + release + "\0" + revision + "\0" + digest), 31 bytes. */
export function adoptionMark(key: Buffer, releaseName: string, revision: number, objects: readonly Record<string, unknown>[]): string {
  return createHmac('sha256', key).update(`adopt\0${releaseName}\0${String(revision)}\0${objectsDigest(objects)}`).digest().subarray(0, MARK_BYTES).toString('hex');
}

export interface RecordToJudge {
  readonly record: DecodedRecord;
  /** The Secret's labels. */
  readonly labels: Readonly<Record<string, string>>;
}

/**
 * Whether the record is ours for the CR the key belongs to, and is the release `releaseName` in
 * `namespace`. Anything unreadable is not ours.
 */
export function isOurRecord(
  key: Buffer,
  judged: RecordToJudge,
  expect: { readonly releaseName: string; readonly namespace: string },
  parse: ManifestObjects,
): boolean {
  const { release } = judged.record;
  if (release.name !== expect.releaseName || release.namespace !== expect.namespace) return false;
  let objects: Record<string, unknown>[];
  try {
    objects = recordObjects(judged.record, parse);
  } catch {
    return false;
  }
  if (objects.every((o) => hasValidSeal(key, o))) return true;
  // On the Secret or in the record: helm copies the record's labels to the Secret it writes.
  const marks = [judged.labels[ADOPTED_LABEL], judged.record.labels[ADOPTED_LABEL]].filter((m) => m !== undefined);
  if (marks.length === 0) return false;
  const expected = adoptionMark(key, release.name, release.revision, objects);
  return marks.some((m) => sameText(m, expected));
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
