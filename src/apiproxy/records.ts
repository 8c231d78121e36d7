/**
 * Helm's release records in one helm call's session: what the proxy serves helm and what it lets
 * helm write, decided on names, verbs and exact bytes (never on a manifest):
 *
 * - **Served only when proved.** A read of helm's storage (a GET of a record's Secret, a LIST whose
 *   label selector asks for helm's records: helm/storage.ts isStorageQuery) is answered only when every record in it carries a
 *   valid record MAC for this CR (helm/record-mac.ts) and belongs to this call's release;
 *   otherwise 403 naming the records. Whatever a tenant writes into a Secret, helm never reads it
 *   as history. Watches of records are refused (helm's storage never watches).
 * - **Written only as helm's storage writes them.** A call writes at most one new revision (POST,
 *   the first), rewrites only that one or one it was served (PUT: superseding, status changes),
 *   deletes its own release's records, and never patches one. Each record written gets its MAC
 *   stamped here, over exactly the bytes sent on, after checking that the Secret is a release
 *   record of this release, namespace and revision. Anything else aimed at a record name — a chart
 *   object, a hook, another release's record — is refused.
 *
 * Pure but for decoding the record (gunzip) to check what it says it is; what a record looks like
 * is helm/storage.ts's to know.
 */
import { isRecordName, isStorageQuery, releaseRecordProblem } from '../helm/storage.js';
import { claimedMacOf, hasValidRecordMac, parseRecordName, recordBytesOf, recordMac, RECORD_MAC_ANNOTATION, RELEASE_RECORD_TYPE } from '../helm/record-mac.js';
import { getOwn, isPlainMap, setOwn, type PlainMap } from '../lib/json.js';

/** The release a helm call's session is for, and the key its records are proved with. */
export interface SessionRecordsContext {
  readonly release: string;
  readonly namespace: string;
  /** The CR's record key (helm/record-mac.ts deriveRecordKey). Secret: never logged. */
  readonly key: Buffer;
}

export type RecordDecision = { readonly allowed: true; readonly stamp: boolean } | { readonly allowed: false; readonly message: string };

export { isRecordName, isStorageQuery };

export class SessionRecords {
  /** The revision this call created (its one POST). */
  private created: number | undefined;
  /** Revisions served to helm in this call, proved ours. */
  private readonly served = new Set<number>();

  constructor(readonly ctx: SessionRecordsContext) {}

  /**
   * Judges the Secrets of a storage read (GET: one, LIST: its items): undefined when every one is
   * a proved record of this release (their revisions are noted as served), else the refusal.
   */
  judgeRead(secrets: readonly unknown[]): string | undefined {
    const foreign: string[] = [];
    const revisions: number[] = [];
    for (const s of secrets) {
      const name = isPlainMap(s) ? nameOf(s) : undefined;
      const revision = name === undefined ? undefined : this.revisionOf(name);
      if (!isPlainMap(s) || name === undefined || revision === undefined || !this.proved(s)) {
        foreign.push(name ?? '(a Secret without a name)');
        continue;
      }
      revisions.push(revision);
    }
    if (foreign.length > 0) {
      const named = foreign.slice(0, 3).join(', ') + (foreign.length > 3 ? ` and ${foreign.length - 3} more` : '');
      return (
        `refused to serve Helm release record${foreign.length === 1 ? '' : 's'} ${named} in namespace ${this.ctx.namespace}: ` +
        `not written by chartpilot for this resource (release ${this.ctx.release}); delete ${foreign.length === 1 ? 'it' : 'them'} if forged, or run \`chartpilot adopt\``
      );
    }
    for (const r of revisions) this.served.add(r);
    return undefined;
  }

  /** Whether a write to the Secret `name` (undefined: a collection) is a write to a release record at all. */
  concerns(name: string | undefined, body: unknown): boolean {
    if (isRecordName(name)) return true;
    return isPlainMap(body) && getOwn(body, 'type') === RELEASE_RECORD_TYPE;
  }

  /** Whether helm's storage may make this write of a record; `stamp`: put the MAC on the body first. */
  async decideWrite(verb: 'create' | 'update' | 'patch' | 'delete' | 'deletecollection', name: string | undefined, body: unknown): Promise<RecordDecision> {
    const what = `Helm release record ${name ?? '(unnamed)'}`;
    if (verb === 'deletecollection') return refuse(`refused to delete Secrets by collection in a helm call: release records are deleted one by one`);
    const revision = name === undefined ? undefined : this.revisionOf(name);
    if (revision === undefined) return refuse(`refused to ${verb} ${what}: this helm call is for release ${this.ctx.release} in namespace ${this.ctx.namespace} only`);
    if (verb === 'delete') return { allowed: true, stamp: false };
    if (verb === 'patch') return refuse(`refused to patch ${what}: only helm's release storage writes records, and it never patches them (a chart object or hook may not be named like a record)`);
    if (verb === 'create' && this.created !== undefined) return refuse(`refused to create ${what}: this helm call already created revision ${this.created} (a chart object or hook may not be named like a record)`);
    if (verb === 'update' && revision !== this.created && !this.served.has(revision)) {
      return refuse(`refused to update ${what}: this helm call neither created nor read that revision`);
    }
    const problem = await releaseRecordProblem(body, { name: name ?? '', namespace: this.ctx.namespace, release: this.ctx.release, revision });
    if (problem !== undefined) return refuse(`refused to ${verb} ${what}: ${problem}`);
    if (verb === 'create') this.created = revision;
    return { allowed: true, stamp: true };
  }

  /** Puts this record's MAC on `body` (a Secret that decideWrite allowed), over exactly what will be sent. */
  stamp(body: PlainMap): void {
    const bytes = recordBytesOf(body, this.ctx.namespace);
    if (bytes === undefined) throw new Error('stamp() needs a release record that decideWrite allowed');
    const metadata = getOwn(body, 'metadata') as PlainMap;
    const annotations = getOwn(metadata, 'annotations');
    const kept: PlainMap = isPlainMap(annotations) ? annotations : {};
    setOwn(kept, RECORD_MAC_ANNOTATION, recordMac(this.ctx.key, bytes));
    setOwn(metadata, 'annotations', kept);
  }

  private revisionOf(name: string): number | undefined {
    const parsed = parseRecordName(name);
    return parsed?.release === this.ctx.release ? parsed.revision : undefined;
  }

  private proved(secret: PlainMap): boolean {
    const meta = getOwn(secret, 'metadata');
    const namespace = isPlainMap(meta) ? getOwn(meta, 'namespace') : undefined;
    if (namespace !== this.ctx.namespace) return false;
    const bytes = recordBytesOf(secret, this.ctx.namespace);
    return bytes !== undefined && bytes.type === RELEASE_RECORD_TYPE && hasValidRecordMac(this.ctx.key, bytes, claimedMacOf(secret));
  }
}

function nameOf(secret: PlainMap): string | undefined {
  const meta = getOwn(secret, 'metadata');
  const name = isPlainMap(meta) ? getOwn(meta, 'name') : undefined;
  return typeof name === 'string' ? name : undefined;
}

function refuse(message: string): RecordDecision {
  return { allowed: false, message };
}
