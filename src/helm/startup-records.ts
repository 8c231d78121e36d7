/**
 * Helm's release records as one paged, metadata-only LIST found them when the operator started
 * (or took over as leader), each release's revisions handed out once. After a restart the first
 * look at every CR then costs no LIST of its own: 10,000 CRs are 20 pages, not 10,000 LISTs that
 * each make the API server scan every Secret of the namespace for one release's labels.
 *
 * Only ever a first look, never grounds to act: the reconciler takes it for "nothing to do" and
 * nothing else (any other plan observes again with a fresh LIST before it acts), and each
 * release's answer is given once, so every later look is a fresh LIST. A snapshot older than
 * `maxAgeMs` is not used at all. Verdicts on the records (seals) are made on the records
 * themselves as always: a version not judged before is read.
 */
import type { Logger } from 'pino';
import { CoreResources, listObjects } from '../kube/objects.js';
import type { KubeClient } from '../kube/rest.js';
import { errorMessage } from '../lib/errors.js';
import type { StoredRevision } from '../core/model.js';
import { revisionFromLabels } from './storage.js';

export interface StartupRecordsOptions {
  readonly client: KubeClient;
  /** The watched namespaces; [] = all (one cluster-wide LIST). */
  readonly namespaces: readonly string[];
  readonly log?: Logger;
  /** How long after it was taken a snapshot may still answer a first look; default 5 min. */
  readonly maxAgeMs?: number;
  /** Records per LIST page; default 500. */
  readonly pageSize?: number;
  readonly now?: () => number;
}

interface Snapshot {
  readonly takenAt: number;
  /** `<namespace>/<release>` → its revisions; deleted as it is handed out. */
  readonly byRelease: Map<string, StoredRevision[]>;
  /** Releases whose first look was answered (with records or with none). */
  readonly handedOut: Set<string>;
}

const DEFAULT_MAX_AGE_MS = 5 * 60_000;
const DEFAULT_PAGE_SIZE = 500;

export class StartupRecords {
  private readonly scopes = new Map<string, Promise<Snapshot | undefined>>();
  private readonly maxAgeMs: number;
  private readonly now: () => number;

  constructor(private readonly opts: StartupRecordsOptions) {
    this.maxAgeMs = opts.maxAgeMs ?? DEFAULT_MAX_AGE_MS;
    this.now = opts.now ?? Date.now;
  }

  /**
   * The revisions of `release` as the snapshot of its namespace found them ([] for none), the
   * first time it is asked for; undefined when it was asked for before, the snapshot is too old
   * or could not be taken (the caller LISTs instead).
   */
  async take(namespace: string, release: string): Promise<StoredRevision[] | undefined> {
    const scope = this.opts.namespaces.length === 0 ? '' : namespace;
    let loading = this.scopes.get(scope);
    if (loading === undefined) {
      loading = this.load(scope);
      this.scopes.set(scope, loading);
    }
    const snapshot = await loading;
    if (snapshot === undefined) return undefined;
    if (this.now() - snapshot.takenAt > this.maxAgeMs) {
      // Too old to stand for a first look: forget it (its memory too), LIST from now on.
      snapshot.byRelease.clear();
      snapshot.handedOut.clear();
      this.scopes.set(scope, Promise.resolve(undefined));
      return undefined;
    }
    const key = `${namespace}/${release}`;
    const revisions = snapshot.byRelease.get(key);
    if (revisions === undefined) {
      // Given out before, or none then: only a first look may go without a LIST.
      if (snapshot.handedOut.has(key)) return undefined;
      snapshot.handedOut.add(key);
      return [];
    }
    snapshot.byRelease.delete(key);
    snapshot.handedOut.add(key);
    return revisions;
  }

  private async load(scope: string): Promise<Snapshot | undefined> {
    const takenAt = this.now();
    const byRelease = new Map<string, StoredRevision[]>();
    let cont: string | undefined;
    let records = 0;
    try {
      do {
        const page = await listObjects(this.opts.client, CoreResources.secret, scope === '' ? undefined : scope, {
          labelSelector: 'owner=helm',
          metadataOnly: true,
          limit: this.opts.pageSize ?? DEFAULT_PAGE_SIZE,
          continue: cont,
        });
        for (const item of page.items) {
          const m = item.metadata;
          const labels = m.labels ?? {};
          const release = labels.name;
          if (release === undefined || m.namespace === undefined) continue;
          const r = revisionFromLabels(m.name, labels, m.creationTimestamp, { uid: m.uid, resourceVersion: m.resourceVersion });
          if (r === undefined) continue;
          const key = `${m.namespace}/${release}`;
          const list = byRelease.get(key);
          if (list === undefined) byRelease.set(key, [r]);
          else list.push(r);
          records++;
        }
        cont = page.metadata.continue || undefined;
      } while (cont !== undefined);
    } catch (err) {
      this.opts.log?.info({ namespace: scope === '' ? undefined : scope, err: errorMessage(err) }, 'cannot list the release records at start; each resource lists its own');
      return undefined;
    }
    this.opts.log?.info({ namespace: scope === '' ? undefined : scope, records, releases: byRelease.size, ms: this.now() - takenAt }, 'release records listed for the first look at each resource');
    return { takenAt, byRelease, handedOut: new Set() };
  }
}
