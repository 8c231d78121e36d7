/**
 * Keeps a deployed release the way the chart says, between Helm operations: watches the kinds its
 * objects have, recreates deleted objects and sets back fields someone changed (server-side apply
 * as Helm's own field manager, so a later upgrade does not conflict), and tells readiness — all
 * from caches and the stored manifest, with no helm process and no new revision.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { parseManifest, inventoryOf } from './manifest.js';
import { FieldContests, type ContestPolicy } from './contest.js';
import { driftedFields, driftedPaths, formatPath, type FieldPath } from './drift.js';
import { leftAloneBy } from './drift-rules.js';
import { bucketLabelFix, fixBucketLabel } from './bucket-label.js';
import { describeOwner, ownersOf } from './managed-fields.js';
import { readinessOf } from './readiness.js';
import { HELM_FIELD_MANAGER, RepairError, repairObject } from './repair.js';
import type { ScopeMap } from './scopes.js';
import { describeRef, type DesiredObject } from './types.js';
import type { DependentWatcher } from './watcher.js';
import { KEEP_POLICY } from '../helm/types.js';
import { findObject } from '../kube/objects.js';
import type { KubeClient } from '../kube/rest.js';
import type { KubeObject } from '../kube/types.js';
import { DEFAULT_DRIFT_DETECTION, type Contest, type DriftDetection, type KeepResult, type ObjectRef, type Readiness, type Repair, type UnrepairedDrift } from '../core/model.js';
import type { KeepInput, KindScopes, RecordVersion, ReleaseKeeperPort } from '../engines/helm/ports.js';
import type { Confinement } from '../core/confinement.js';
import { isAllowedTarget, type ObjectScope } from '../core/confinement.js';
import { errorMessage } from '../lib/errors.js';
import { withReadyWhen, type StatusVerdict } from '../core/outputs.js';
import { formatPointer, isWithin, parsePointer } from '../lib/json-pointer.js';

export interface ReleaseKeeperOptions {
  readonly client: KubeClient;
  /** The shared dependent watcher; only these methods are used (unit tests pass a fake cache). */
  readonly watcher: Pick<DependentWatcher, 'ensureWatching' | 'waitForSync' | 'waitForOwner' | 'isWatching' | 'get'>;
  /**
   * --shards: a repair pass also sets each object's owner-bucket label right when it is missing
   * or wrong (bucket-label.ts), so the object is in its owner's caches and no one else's.
   */
  readonly fixBucketLabels?: boolean;
  readonly scopes: ScopeMap;
  readonly log: Logger;
  /** How long to wait for a newly watched kind's first LIST before judging without it. */
  readonly syncTimeoutMs?: number;
  /** How long to wait, right after a deploy, for the caches to show what helm wrote (awaitCaches). */
  readonly catchUpTimeoutMs?: number;
  /**
   * Called when a pass starts reading a release's objects from the caches: every change of them
   * the caches hold by now is seen by this pass, so hints queued for them earlier may go.
   */
  readonly onReading?: (namespace: string, release: string) => void;
  /**
   * The manifest of one revision, only from a record that proves it was written for the CR
   * `ownerUid` (storage.ts readOwnManifest); rejects otherwise, undefined when there is none.
   */
  readonly readManifest: (at: { namespace: string; release: string; revision: number; ownerUid: string; version?: RecordVersion | undefined }) => Promise<string | undefined>;
  /** Milliseconds on a monotonic scale, for telling a fight from drift; performance.now() by default. */
  readonly now?: () => number;
  /** When a field set back again and again is given up to another manager; DEFAULT_CONTEST_POLICY by default. */
  readonly contestPolicy?: ContestPolicy;
}

/** What is known of one release's fights: set-backs per field, and the contests given up. */
interface ReleaseContests {
  readonly book: FieldContests;
  /** By object key and pointer. */
  readonly given: Map<string, Omit<Contest, 'announce'>>;
}

/** What judging one object found and did. */
interface Judged {
  repair?: Repair;
  unrepaired?: UnrepairedDrift;
  contests: Contest[];
  /** The newest copy of the object judging saw (the cache's, or a fresh read), when it wrote nothing. */
  seen?: KubeObject | undefined;
}

/** The watch delivers helm's writes within milliseconds unless the machine is saturated. */
const DEFAULT_CATCH_UP_MS = 1_000;
const CATCH_UP_POLL_MS = 20;

/** Cluster-scoped kinds change rarely (a CRD install); re-read discovery at most this often. */
const SCOPES_MAX_AGE_MS = 10 * 60_000;

export class ReleaseKeeper implements ReleaseKeeperPort {
  /**
   * Desired objects per release, parsed once per record, not on every pass. A revision number
   * alone does not name a record: after an outside `helm uninstall` numbering starts again at 1.
   */
  private readonly desired = new Map<string, ParsedRecord>();
  private scopesLoadedAt = Number.NEGATIVE_INFINITY;
  /** Per release (namespace/name); reset with its record, so a new revision gets a fresh start. */
  private readonly contests = new Map<string, ReleaseContests>();

  constructor(private readonly opts: ReleaseKeeperOptions) {}

  async kindScopes(): Promise<KindScopes> {
    if (performance.now() - this.scopesLoadedAt > SCOPES_MAX_AGE_MS) {
      await this.opts.scopes.refresh();
      this.scopesLoadedAt = performance.now();
    }
    return { clusterScoped: this.opts.scopes.clusterScopedKinds(), namespaced: this.opts.scopes.namespacedKinds() };
  }

  async learnKinds(kinds: readonly string[]): Promise<boolean> {
    const parsed = kinds.map((k) => {
      const slash = k.lastIndexOf('/');
      return { apiVersion: k.slice(0, slash), kind: k.slice(slash + 1) };
    });
    return await this.opts.scopes.ensureKnown(parsed);
  }

  /** How many releases' desired objects are remembered. */
  get remembered(): number {
    return this.desired.size;
  }

  forget(namespace: string, release: string): void {
    this.desired.delete(`${namespace}/${release}`);
    this.contests.delete(`${namespace}/${release}`);
  }

  /** A kind is no longer served (hot reload removed it): drop what is remembered of its releases. */
  forgetKind(ownerKind: string): void {
    for (const [key, parsed] of this.desired) {
      if (parsed.ownerKind !== ownerKind) continue;
      this.desired.delete(key);
      this.contests.delete(key);
    }
  }

  async remaining(items: readonly ObjectRef[], confinement: Confinement, impersonate?: string): Promise<ObjectRef[]> {
    const left: ObjectRef[] = [];
    for (const item of items) {
      const resource = await this.opts.client.resourceFor(item.apiVersion, item.kind).catch(() => undefined);
      if (resource === undefined) continue; // the kind itself is gone (e.g. its CRD was removed)
      // Only what the release may have: a status naming other objects makes us read none of them.
      if (!isAllowedTarget(confinement, item, resource.namespaced ? 'namespaced' : 'cluster')) continue;
      const live = await findObject(this.opts.client, { resource, namespace: item.namespace, name: item.name }, { impersonateUser: impersonate });
      // Helm keeps these on purpose; waiting for them would wait forever.
      if (live !== undefined && live.metadata.annotations?.[KEEP_POLICY.annotation] !== KEEP_POLICY.value) left.push(item);
    }
    return left;
  }

  async keep(input: KeepInput): Promise<KeepResult> {
    const all = await this.desiredObjects(input);
    const inventory: ObjectRef[] = inventoryOf(all);
    if (!input.watch && input.status === undefined) return { inventory, repaired: [], readiness: undefined };
    // Drift, readiness and outputs look only at objects the entry allows, whatever the record lists.
    const objects: DesiredObject[] = [];
    for (const o of all) if (isAllowedTarget(input.confinement, o, await this.scopeOf(o))) objects.push(o);
    // No caches: outputs are computed from the objects as rendered.
    if (!input.watch) return { inventory, repaired: [], readiness: undefined, ...statusOf(input, objects, () => undefined) };

    const { watcher } = this.opts;
    const kinds = new Map(objects.map((o) => [`${o.apiVersion}/${o.kind}`, o]));
    for (const o of kinds.values()) {
      try {
        await watcher.ensureWatching(o.apiVersion, o.kind);
      } catch (err) {
        this.opts.log.warn({ kind: o.kind, err: errorText(err) }, 'cannot watch a kind of this release; its objects are not kept');
      }
    }
    const synced = AbortSignal.timeout(this.opts.syncTimeoutMs ?? 20_000);
    try {
      await watcher.waitForSync(synced);
    } catch {
      this.opts.log.warn('dependent caches not synced in time; drift and readiness wait for the next pass');
      return { inventory, repaired: [], readiness: undefined };
    }
    // --shards: the caches hold only this replica's share. Judged from caches that cannot hold
    // them, every object would look missing: wait for its bucket's watch, or leave it to its owner.
    if (!(await watcher.waitForOwner(input.ownerUid, synced))) {
      this.opts.log.info({ namespace: input.namespace, name: input.release }, 'this replica does not watch this resource\'s objects (its share of the ring is changing); drift and readiness wait for a pass that does');
      return { inventory, repaired: [], readiness: undefined };
    }

    if (input.awaitCaches === true) await this.caughtUp(objects, input.driftDetection ?? DEFAULT_DRIFT_DETECTION);
    this.opts.onReading?.(input.namespace, input.release);
    const repaired: Repair[] = [];
    const unrepaired: UnrepairedDrift[] = [];
    const contests: Contest[] = [];
    const drift = input.driftDetection ?? DEFAULT_DRIFT_DETECTION;
    // off: readiness only — nothing is compared, nothing written, nothing reported.
    if (input.repair && drift.mode !== 'off') {
      const fights = this.contestsOf(input);
      fights.book.prune();
      for (const o of objects) {
        if (!watcher.isWatching(o.apiVersion, o.kind)) continue;
        const judged = await this.judge(o, watcher.get(o.apiVersion, o.kind, o.namespace, o.name), input, drift, fights);
        if (this.opts.fixBucketLabels === true && drift.mode === 'repair' && judged.repair === undefined && judged.seen !== undefined) await this.fixBucketLabel(o, judged.seen, input);
        if (judged.repair !== undefined) repaired.push(judged.repair);
        if (judged.unrepaired !== undefined) unrepaired.push(judged.unrepaired);
        contests.push(...judged.contests);
      }
    }
    const watched = objects.filter((o) => watcher.isWatching(o.apiVersion, o.kind));
    const live = (o: DesiredObject): KubeObject | undefined => (watcher.isWatching(o.apiVersion, o.kind) ? watcher.get(o.apiVersion, o.kind, o.namespace, o.name) : undefined);
    const judged: Readiness = readinessOf(watched.map((o) => ({ ...o, live: live(o) })));
    const status = statusOf(input, objects, live);
    const readiness: Readiness | undefined = withReadyWhen(judged, status.status);
    return { inventory, repaired, readiness, ...status, ...(input.repair ? { unrepaired, contests } : {}) };
  }

  /** Sets `live`'s owner-bucket label right (bucket-label.ts); a failure is logged, the pass goes on. */
  private async fixBucketLabel(desired: DesiredObject, live: KubeObject, input: KeepInput): Promise<void> {
    if (bucketLabelFix(live, input.ownerUid) === undefined) return;
    try {
      const resource = await this.opts.client.resourceFor(desired.apiVersion, desired.kind);
      const where = resource.namespaced ? { namespace: desired.namespace } : {};
      if (!isAllowedTarget(input.confinement, where, resource.namespaced ? 'namespaced' : 'cluster')) return;
      if (await fixBucketLabel(this.opts.client, resource, live, input.ownerUid, input.impersonate)) {
        this.opts.log.info({ namespace: input.namespace, name: input.release, object: describeRef(desired) }, 'set the owner-bucket label of an object, so the replica whose share it is watches it');
      }
    } catch (err) {
      this.opts.log.warn({ namespace: input.namespace, name: input.release, object: describeRef(desired), err: errorText(err) }, 'could not set the owner-bucket label of an object; the next pass tries again');
    }
  }

  private contestsOf(input: KeepInput): ReleaseContests {
    const key = `${input.namespace}/${input.release}`;
    let found = this.contests.get(key);
    if (found === undefined) {
      found = { book: new FieldContests(this.opts.now ?? (() => performance.now()), this.opts.contestPolicy), given: new Map() };
      this.contests.set(key, found);
    }
    return found;
  }

  /** An object's scope as the API server serves its kind; unknown kinds are looked up once. */
  private async scopeOf(o: DesiredObject): Promise<ObjectScope> {
    const known = this.opts.scopes.isNamespaced(o.apiVersion, o.kind);
    if (known !== undefined) return known ? 'namespaced' : 'cluster';
    const resource = await this.opts.client.resourceFor(o.apiVersion, o.kind).catch(() => undefined);
    if (resource === undefined) return 'unknown';
    return resource.namespaced ? 'namespaced' : 'cluster';
  }

  /**
   * Waits (briefly, bounded) until the caches show every watched object as the release has it:
   * present and not differing from the manifest. Past the deadline readiness is told as it is.
   */
  private async caughtUp(objects: readonly DesiredObject[], drift: DriftDetection): Promise<void> {
    const { watcher } = this.opts;
    const shown = (o: DesiredObject): boolean => {
      if (!watcher.isWatching(o.apiVersion, o.kind)) return true;
      const cached = watcher.get(o.apiVersion, o.kind, o.namespace, o.name);
      // Fields others own may differ from what helm wrote at any time: they say nothing here.
      return cached !== undefined && driftedFields(o.object, cached, leftAloneBy(drift.ignore, o)).length === 0;
    };
    const deadline = performance.now() + (this.opts.catchUpTimeoutMs ?? DEFAULT_CATCH_UP_MS);
    while (!objects.every(shown)) {
      if (performance.now() >= deadline) {
        const behind = objects.filter((o) => !shown(o)).map((o) => describeRef(o));
        this.opts.log.info({ behind: behind.slice(0, 5) }, 'caches do not show what helm wrote yet; readiness is told from what they show');
        return;
      }
      await sleep(CATCH_UP_POLL_MS);
    }
  }

  private async desiredObjects(input: KeepInput): Promise<DesiredObject[]> {
    const key = `${input.namespace}/${input.release}`;
    const cached = this.desired.get(key);
    // A manifest at hand is fresh from helm: it wins over whatever was parsed before.
    if (input.manifest === undefined && cached !== undefined && sameRecord(cached, input)) {
      if (cached.createdAt === undefined && input.recordCreatedAt !== undefined) this.desired.set(key, { ...cached, createdAt: input.recordCreatedAt });
      return cached.objects;
    }
    const manifest =
      input.manifest ??
      (await this.opts.readManifest({ namespace: input.namespace, release: input.release, revision: input.revision, ownerUid: input.ownerUid, version: input.recordVersion })) ??
      '';
    const objects = parseManifest(manifest, input.namespace, (apiVersion, kind) => this.opts.scopes.isNamespaced(apiVersion, kind));
    // Another record (a deploy, a new revision): fields given up under the old one get a fresh start.
    this.contests.delete(key);
    this.desired.set(key, {
      revision: input.revision,
      createdAt: input.recordCreatedAt,
      fingerprint: input.fingerprint,
      ownerKind: input.ownerKind,
      objects,
    });
    return objects;
  }

  /**
   * Compares one object with the chart (leaving alone the fields the entry's rules and earlier
   * fights give to others) and, in repair mode, sets back what differs. Caches lag behind the API
   * server (e.g. right after an upgrade), so the object is read fresh before it is written, and
   * only written when it really differs.
   */
  private async judge(desired: DesiredObject, cached: KubeObject | undefined, input: KeepInput, drift: DriftDetection, fights: ReleaseContests): Promise<Judged> {
    const judged: Judged = { contests: [], seen: cached };
    if (cached?.metadata.deletionTimestamp !== undefined) return judged; // being deleted: recreate once gone
    const object = describeRef(desired);
    const objectKey = `${desired.apiVersion}/${desired.kind} ${desired.namespace ?? ''}/${desired.name}`;
    const rules = leftAloneBy(drift.ignore, desired);
    const givenUp = fights.book.givenUp(objectKey).flatMap((p) => {
      const parsed = parsePointer(p);
      return parsed.ok ? [[...parsed.segments]] : [];
    });
    const cachedDrift = cached === undefined ? undefined : driftedPaths(desired.object, cached, rules);
    // Fields given up to others are told on every pass while they differ, so the condition stays.
    for (const path of cachedDrift ?? []) {
      const contest = givenUp.some((g) => isWithin(path, g)) ? fights.given.get(`${objectKey} ${formatPointer(path)}`) : undefined;
      if (contest !== undefined) judged.contests.push({ ...contest, announce: false });
    }
    const rest = cachedDrift?.filter((p) => !givenUp.some((g) => isWithin(p, g)));
    if (drift.mode === 'warn') {
      // Told from the cache: nothing is written, so nothing needs a fresh read.
      if (rest === undefined) judged.unrepaired = { object, fields: [] };
      else if (rest.length > 0) judged.unrepaired = { object, fields: rest.map(formatPath) };
      return judged;
    }
    if (rest !== undefined && rest.length === 0) return judged;

    const resource = await this.opts.client.resourceFor(desired.apiVersion, desired.kind);
    // The served scope decides where an apply would land: check it, not the manifest's guess.
    const where = resource.namespaced ? { namespace: desired.namespace } : {};
    if (!isAllowedTarget(input.confinement, where, resource.namespaced ? 'namespaced' : 'cluster')) return judged;
    // As the tenant too: what a repair reads must not tell the CR more than the tenant may read.
    const current = (await findObject(this.opts.client, { resource, namespace: desired.namespace, name: desired.name }, { impersonateUser: input.impersonate })) ?? null;
    judged.seen = current ?? undefined;
    if (current?.metadata.deletionTimestamp !== undefined) return judged;
    const leaveAlone: (readonly string[])[] = [...rules, ...givenUp];
    const paths: FieldPath[] = current === null ? [] : driftedPaths(desired.object, current, leaveAlone);
    if (current !== null && paths.length === 0) return judged;

    const toRepair: FieldPath[] = [];
    for (const path of paths) {
      const pointer = formatPointer(path);
      const verdict = fights.book.judge(objectKey, pointer);
      if (verdict.kind === 'repair') {
        toRepair.push(path);
        continue;
      }
      leaveAlone.push(path.map(String));
      if (verdict.kind !== 'contested' || current === null) continue;
      const managers = ownersOf(current, path)
        .filter((o) => !(o.manager === HELM_FIELD_MANAGER && o.operation === 'Apply'))
        .map(describeOwner);
      const contest = { object, kind: desired.kind, field: formatPath(path), pointer, managers, repairs: verdict.repairs, withinMs: verdict.withinMs };
      fights.given.set(`${objectKey} ${pointer}`, contest);
      judged.contests.push({ ...contest, announce: true });
    }
    if (current !== null && toRepair.length === 0) return judged;

    let action: Awaited<ReturnType<typeof repairObject>>;
    try {
      action = await repairObject(this.opts.client, resource, desired, HELM_FIELD_MANAGER, {
        release: { name: input.release, namespace: input.namespace },
        current,
        impersonateUser: input.impersonate,
        leaveAlone,
      });
    } catch (err) {
      // Changed since it was read (a field left alone was sent as it was then): the watch brings
      // the change, and with it the next pass.
      if (err instanceof RepairError && err.reason === 'Conflict') return judged;
      throw err;
    }
    if (action === 'unchanged') return judged;
    for (const path of toRepair) fights.book.repaired(objectKey, formatPointer(path));
    judged.repair = { object, action, fields: toRepair.map(formatPath) };
    return judged;
  }
}

interface ParsedRecord {
  readonly revision: number;
  /** The record's creation time; undefined when parsed from helm's output (not known then). */
  readonly createdAt: string | undefined;
  readonly fingerprint: string | undefined;
  readonly ownerKind: string | undefined;
  readonly objects: DesiredObject[];
}

/**
 * Whether `input` names the record `cached` was parsed from: same revision and creation time.
 * A parse from helm's own output has no creation time yet; it is the same record when chartpilot
 * wrote both with the same fingerprint (equal inputs, so equal objects).
 */
function sameRecord(cached: ParsedRecord, input: KeepInput): boolean {
  if (cached.revision !== input.revision) return false;
  if (cached.createdAt !== undefined || input.recordCreatedAt === undefined) return cached.createdAt === input.recordCreatedAt;
  return cached.fingerprint !== undefined && cached.fingerprint === input.fingerprint;
}

function errorText(err: unknown): string {
  return errorMessage(err);
}

/** The entry's outputs and readyWhen over the release's allowed objects, live where `live` has them. */
function statusOf(input: KeepInput, objects: readonly DesiredObject[], live: (o: DesiredObject) => KubeObject | undefined): { status?: StatusVerdict } {
  if (input.status === undefined) return {};
  const { program, self } = input.status;
  const listed = objects.map((o) => ({ apiVersion: o.apiVersion, kind: o.kind, name: o.name, namespace: o.namespace, rendered: o.object, live: live(o) }));
  return { status: program.evaluate({ self, objects: listed }) };
}
