/**
 * The leader lease as a `coordination.k8s.io/v1` Lease object, read and written through the typed
 * verbs of kube/objects.ts with optimistic concurrency: every update carries the resourceVersion
 * it was based on, and a write that lost a race surfaces as `LeaseConflictError`.
 */
import { isAlreadyExists, isConflict } from '../../kube/errors.js';
import { CoreResources, createObject, findObject, replaceObject, type ObjectAddress } from '../../kube/objects.js';
import type { KubeClient } from '../../kube/rest.js';
import type { KubeObject, ObjectMeta } from '../../kube/types.js';
import { LEASE_DURATION_MS, LeaseConflictError, RENEW_DEADLINE_MS, type LeaseRecord, type LeaseSnapshot, type LeaseStore } from './elector.js';

interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

type LeaseObject = KubeObject & { spec?: LeaseSpec };

/** Where a released lease carries its hand-over note (LeaseRecord.handOver). */
export const HAND_OVER_ANNOTATION = 'chartpilot.io/hand-over';

export interface KubeLeaseStoreOptions {
  readonly client: KubeClient;
  readonly namespace: string;
  readonly name: string;
  /** Deadline of each request; default half the renew deadline, so one hung call leaves time for a retry. */
  readonly requestTimeoutMs?: number;
  /** Labels every write sets (a shard ring's member Leases carry the ring's name). */
  readonly labels?: Readonly<Record<string, string>>;
  /** Annotations every write sets, read at each write (a shard member's version, settings, state). */
  readonly annotations?: () => Readonly<Record<string, string>>;
  /** A write went through, with the annotations the server stored (a shard member's published claims). */
  readonly onWritten?: (annotations: Readonly<Record<string, string>>) => void;
}

/** A lost race: AlreadyExists on create, Conflict on an update against a stale resourceVersion. */
function isLostRace(err: unknown): boolean {
  return isConflict(err) || isAlreadyExists(err);
}

export class KubeLeaseStore implements LeaseStore {
  readonly description: string;
  private readonly client: KubeClient;
  private readonly at: ObjectAddress & { readonly namespace: string };
  private readonly timeoutMs: number;
  /** Labels and annotations others put on the lease survive our full-object updates. */
  private meta: Pick<ObjectMeta, 'labels' | 'annotations'> = {};

  constructor(private readonly opts: KubeLeaseStoreOptions) {
    if (opts.namespace === '') throw new TypeError('lease store: namespace must not be empty');
    if (opts.name === '') throw new TypeError('lease store: name must not be empty');
    const timeoutMs = opts.requestTimeoutMs ?? RENEW_DEADLINE_MS / 2;
    if (!(Number.isFinite(timeoutMs) && timeoutMs > 0)) throw new RangeError(`lease store: requestTimeoutMs must be positive, got ${String(timeoutMs)}`);
    this.client = opts.client;
    this.at = { resource: CoreResources.lease, namespace: opts.namespace, name: opts.name };
    this.timeoutMs = timeoutMs;
    this.description = `${opts.namespace}/${opts.name}`;
  }

  async get(): Promise<LeaseSnapshot | undefined> {
    const found = await findObject<LeaseObject>(this.client, this.at, { timeoutMs: this.timeoutMs });
    return found === undefined ? undefined : this.snapshot(found);
  }

  /**
   * Start-up check: a dry-run create fails fast on what would otherwise make a standby retry
   * forever (a namespace that does not exist, a denied create); an existing lease is fine.
   */
  async checkWritable(): Promise<void> {
    const record: LeaseRecord = { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: undefined, renewTime: undefined, leaseTransitions: 0 };
    try {
      await createObject(this.client, CoreResources.lease, this.at.namespace, this.body(record, undefined), { dryRun: true, timeoutMs: this.timeoutMs });
    } catch (err) {
      if (isLostRace(err)) return;
      throw err;
    }
  }

  async create(record: LeaseRecord): Promise<LeaseSnapshot> {
    return this.write(() => createObject<LeaseObject>(this.client, CoreResources.lease, this.at.namespace, this.body(record, undefined), { timeoutMs: this.timeoutMs }));
  }

  async update(base: LeaseSnapshot, record: LeaseRecord): Promise<LeaseSnapshot> {
    return this.write(() => replaceObject<LeaseObject>(this.client, this.at, this.body(record, base.resourceVersion), { timeoutMs: this.timeoutMs }));
  }

  private async write(op: () => Promise<LeaseObject>): Promise<LeaseSnapshot> {
    try {
      const written = await op();
      this.opts.onWritten?.(written.metadata.annotations ?? {});
      return this.snapshot(written);
    } catch (err) {
      if (isLostRace(err)) throw new LeaseConflictError(`lease ${this.description} changed meanwhile`, { cause: err });
      throw err;
    }
  }

  private body(record: LeaseRecord, resourceVersion: string | undefined): LeaseObject {
    const { [HAND_OVER_ANNOTATION]: _previous, ...kept } = this.meta.annotations ?? {};
    const others = { ...kept, ...this.opts.annotations?.() };
    const annotations = record.handOver === undefined ? others : { ...others, [HAND_OVER_ANNOTATION]: record.handOver };
    const labels = this.opts.labels === undefined ? this.meta.labels : { ...this.meta.labels, ...this.opts.labels };
    return {
      apiVersion: CoreResources.lease.apiVersion,
      kind: CoreResources.lease.kind,
      metadata: {
        name: this.at.name,
        namespace: this.at.namespace,
        ...(labels === undefined ? {} : { labels }),
        ...(Object.keys(annotations).length === 0 ? {} : { annotations }),
        ...(resourceVersion === undefined ? {} : { resourceVersion }),
      },
      spec: {
        holderIdentity: record.holderIdentity,
        leaseDurationSeconds: record.leaseDurationSeconds,
        ...(record.acquireTime === undefined ? {} : { acquireTime: record.acquireTime }),
        ...(record.renewTime === undefined ? {} : { renewTime: record.renewTime }),
        leaseTransitions: record.leaseTransitions,
      },
    };
  }

  /** The snapshot of a Lease the server returned; remembers its labels and annotations for the next write. */
  private snapshot(obj: LeaseObject): LeaseSnapshot {
    // Read as possibly partial: what the server sent is not checked against the type.
    const wire: { metadata?: Partial<ObjectMeta>; spec?: LeaseSpec } = obj;
    const m = wire.metadata ?? {};
    this.meta = { ...(m.labels === undefined ? {} : { labels: m.labels }), ...(m.annotations === undefined ? {} : { annotations: m.annotations }) };
    const s = wire.spec ?? {};
    return {
      resourceVersion: m.resourceVersion ?? '',
      record: {
        holderIdentity: s.holderIdentity ?? '',
        leaseDurationSeconds: s.leaseDurationSeconds ?? Math.ceil(LEASE_DURATION_MS / 1000),
        acquireTime: s.acquireTime,
        renewTime: s.renewTime,
        leaseTransitions: s.leaseTransitions ?? 0,
        ...(m.annotations?.[HAND_OVER_ANNOTATION] === undefined ? {} : { handOver: m.annotations[HAND_OVER_ANNOTATION] }),
      },
    };
  }
}
