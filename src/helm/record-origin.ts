/**
 * Whether a Helm release record was written for one CR under chartpilot's confinement. Pure: given
 * the CR's record key and the record as stored, a verdict.
 *
 * A record is ours for the CR iff its Secret carries a valid record MAC (record-mac.ts) under the
 * CR's key — over its exact bytes, so nothing in it is interpreted to decide — and it is the record
 * it says it is: a release record named for this release and revision, in this namespace, holding
 * that release and revision. The MAC is stamped by chartpilot's API proxy on what helm writes
 * through it, and by `chartpilot adopt` on what it takes over; nobody without the operator's
 * master key can make one, and a copy of another CR's, another revision's or an edited record
 * does not verify. Every other record — forged, emptied, re-assembled, written by plain helm,
 * operator-sdk or a chartpilot that sealed objects instead — is foreign.
 */
import type { Release } from '../core/model.js';
import { hasValidRecordMac, parseRecordName, RELEASE_RECORD_TYPE, type RecordBytes } from './record-mac.js';

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

/** Parses a manifest into the objects helm would apply; throws when it cannot. */
export type ManifestObjects = (text: string) => Record<string, unknown>[];

/** Every object of a record, manifest first, then each hook's; throws when any cannot be read. */
export function recordObjects(record: DecodedRecord, parse: ManifestObjects): Record<string, unknown>[] {
  return [...parse(record.release.manifest), ...record.hookManifests.flatMap((m) => parse(m))];
}

export interface RecordToJudge {
  readonly record: DecodedRecord;
  /** The Secret's labels. */
  readonly labels: Readonly<Record<string, string>>;
  /** The Secret as the MAC covers it. */
  readonly bytes: RecordBytes;
  /** The MAC its Secret claims (the annotation's value, if any). */
  readonly mac: unknown;
}

/**
 * Whether the record is ours for the CR the key belongs to, and is the release `releaseName` in
 * `namespace`. Anything unreadable is not ours.
 */
export function isOurRecord(key: Buffer, judged: RecordToJudge, expect: { readonly releaseName: string; readonly namespace: string }): boolean {
  const { bytes } = judged;
  if (bytes.type !== RELEASE_RECORD_TYPE || bytes.namespace !== expect.namespace) return false;
  if (!hasValidRecordMac(key, bytes, judged.mac)) return false;
  const named = parseRecordName(bytes.name);
  const { release } = judged.record;
  return (
    named !== undefined &&
    named.release === expect.releaseName &&
    release.name === expect.releaseName &&
    release.namespace === expect.namespace &&
    release.revision === named.revision
  );
}
