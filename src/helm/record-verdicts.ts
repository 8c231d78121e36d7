/**
 * Which release records chartpilot wrote for which CR, as the reconciler asks it: verdicts on
 * records (record-origin.ts) read from the API server, remembered per record version. A record's
 * uid and resourceVersion name one exact content, whose verdict cannot change: a converged CR
 * costs no GET.
 */
import type { KubeClient } from '../kube/rest.js';
import type { StoredRevision } from '../core/model.js';
import type { RecordVersion } from '../engines/helm/ports.js';
import { RecordKeys } from './record-mac.js';
import { isOurRecord } from './record-origin.js';
import { readRecord, releaseSecretName } from './storage.js';

export interface RecordVerdictsOptions {
  /** The per-CR record keys (derived from the operator's master key, seal-key.ts). */
  readonly keys: RecordKeys;
  /** How many verdicts (one per record version and CR) and keys to remember; oldest forgotten first. */
  readonly maxEntries?: number;
}

/** Manifests judged and not yet taken: about as many as reconciles run at once, with room to spare. */
const MAX_JUDGED_MANIFESTS = 256;

/** Ten revisions for each of several thousand releases. */
const DEFAULT_MAX_ENTRIES = 50_000;

/** A release record that chartpilot did not write for the CR asking. */
export class ForeignRecordError extends Error {
  override readonly name = 'ForeignRecordError';
}

export class RecordVerdicts {
  private readonly maxEntries: number;
  private readonly verdicts = new Map<string, boolean>();
  /**
   * The manifest of the newest record each judging read found ours, by owner and record version,
   * until ownManifest takes it: a first look after a restart reads each record once, not twice.
   */
  private readonly judgedManifests = new Map<string, string>();

  constructor(
    private readonly client: KubeClient,
    private readonly opts: RecordVerdictsOptions,
  ) {
    this.maxEntries = opts.maxEntries ?? DEFAULT_MAX_ENTRIES;
  }

  /** Which of `revisions` chartpilot did not write for the CR `ownerUid`; reads only versions not judged before. */
  async foreignRevisions(namespace: string, release: string, ownerUid: string, revisions: readonly StoredRevision[]): Promise<StoredRevision[]> {
    const foreign: StoredRevision[] = [];
    const newest = Math.max(0, ...revisions.map((r) => r.revision));
    for (const r of revisions) {
      const listed = r.uid !== undefined && r.resourceVersion !== undefined ? `${ownerUid}\0${r.uid}\0${r.resourceVersion}` : undefined;
      let ours = listed === undefined ? undefined : this.verdicts.get(listed);
      if (ours === undefined) {
        const read = await readRecord(this.client, namespace, r.secretName);
        // Gone since the LIST (helm pruned history, an uninstall): nothing left to act on.
        if (read === 'missing') continue;
        if (read === 'unreadable') {
          ours = false;
          // Not ours whatever version was read: remembering it under the LIST's version is safe.
          if (listed !== undefined) this.remember(listed, false);
        } else {
          ours = isOurRecord(this.opts.keys.keyOf(ownerUid), read, { releaseName: release, namespace });
          // Under the version that was read, which may be newer than the LIST's.
          if (read.uid !== undefined && read.resourceVersion !== undefined) {
            const version = `${ownerUid}\0${read.uid}\0${read.resourceVersion}`;
            this.remember(version, ours);
            // The keeper asks for the newest one's manifest next (drift, readiness).
            if (ours && r.revision === newest) this.keepManifest(version, read.record.release.manifest);
          }
        }
      }
      if (!ours) foreign.push(r);
    }
    return foreign;
  }

  /**
   * The manifest of one revision, only if its record proves it was written for the CR `ownerUid`
   * (read again here, so a record replaced since it was judged is judged anew); undefined when
   * the record does not exist. Throws ForeignRecordError otherwise.
   */
  async ownManifest(at: {
    readonly namespace: string;
    readonly release: string;
    readonly revision: number;
    readonly ownerUid: string;
    /** The record version the caller's LIST showed: one judged ours at exactly it is not read again. */
    readonly version?: RecordVersion | undefined;
  }): Promise<string | undefined> {
    if (at.version !== undefined && at.ownerUid !== '') {
      const version = `${at.ownerUid}\0${at.version.uid}\0${at.version.resourceVersion}`;
      const judged = this.judgedManifests.get(version);
      if (judged !== undefined) {
        this.judgedManifests.delete(version);
        return judged;
      }
    }
    const secretName = releaseSecretName(at.release, at.revision);
    const read = await readRecord(this.client, at.namespace, secretName);
    if (read === 'missing') return undefined;
    if (at.ownerUid === '' || read === 'unreadable' || !isOurRecord(this.opts.keys.keyOf(at.ownerUid), read, { releaseName: at.release, namespace: at.namespace })) {
      throw new ForeignRecordError(`Helm release record ${at.namespace}/${secretName} was not written by chartpilot for this resource; its objects are not read or repaired`);
    }
    return read.record.release.manifest;
  }

  private keepManifest(version: string, manifest: string): void {
    this.judgedManifests.set(version, manifest);
    // Taken moments later by the same reconcile; one that never asks (no keeper) must not pile up.
    if (this.judgedManifests.size > MAX_JUDGED_MANIFESTS) this.judgedManifests.delete(this.judgedManifests.keys().next().value as string);
  }

  private remember(key: string, ours: boolean): void {
    this.verdicts.set(key, ours);
    if (this.verdicts.size > this.maxEntries) this.verdicts.delete(this.verdicts.keys().next().value as string);
  }
}
