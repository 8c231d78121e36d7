/**
 * The sharder: run by whichever member holds the ring's leader Lease. It watches the ring's member
 * Leases and every CR of the watched kinds (metadata only), and keeps each CR's shard label on the
 * member the hash ring picks, by the protocol in membership.ts: unassigned CRs are assigned, a CR
 * whose owner lives but is no longer the ring's pick gets a drain label (its owner hands it back),
 * and the CRs of a dead member are assigned at once. Every write carries the resourceVersion the
 * decision was based on, so a decision on a stale view fails instead of overwriting a newer state
 * (also with two sharders for a moment around a leader change).
 */
import type { Logger } from 'pino';
import { isConflict, isNotFound } from '../../kube/errors.js';
import { Informer } from '../../kube/informer.js';
import { CoreResources, deleteObject, mergePatchObject } from '../../kube/objects.js';
import type { KubeClient } from '../../kube/rest.js';
import type { ApiResource, KubeObject } from '../../kube/types.js';
import { realClock, type Clock, type TimerHandle } from '../../lib/clock.js';
import { errorMessage } from '../../lib/errors.js';
import { decide, DEAD_AFTER_LEASES, type MemberState, type ShardDecision } from './membership.js';
import { drainLabel, shardLabel } from './names.js';
import { HashRing } from './ring.js';
import type { RingMember, RingView } from './ring-view.js';
import type { ShardTimings } from './timings.js';

export interface ShardedKind {
  readonly resource: ApiResource;
  /** The watches entry's selector: CRs outside it are nobody's. */
  readonly labelSelector: string | undefined;
}

export interface SharderOptions {
  readonly client: KubeClient;
  readonly ring: string;
  readonly namespace: string;
  readonly kinds: readonly ShardedKind[];
  /** Watched namespaces; [] = all. */
  readonly namespaces: readonly string[];
  readonly view: RingView;
  readonly timings: ShardTimings;
  /** The sharder's own version and settings digest: only members with the same get CRs. */
  readonly version: string;
  readonly settings: string;
  readonly log: Logger;
  readonly clock?: Clock;
  /** Label writes at once. */
  readonly concurrency?: number;
  /** The ring changed (members that get CRs). */
  readonly onRing?: (members: readonly string[]) => void;
}

interface Tracked {
  readonly index: number;
  readonly kind: ShardedKind;
  readonly informer: Informer<KubeObject>;
}

const RETRY_MS = 1_000;

export class Sharder {
  private readonly clock: Clock;
  private readonly kinds: Tracked[] = [];
  private ring = new HashRing([]);
  /** Members whose Lease this sharder deleted as dead: their CRs go to others at once. */
  private readonly buried = new Set<string>();
  /** Owners named by CRs whose Lease is not in the view, and since when (they die after as long as a silent member). */
  private readonly missingSince = new Map<string, number>();
  private readonly pending = new Set<string>();
  private readonly waiting: string[] = [];
  private active = 0;
  private ticker: TimerHandle | undefined;
  private stopped = false;
  private mismatchLogged = new Set<string>();

  constructor(private readonly opts: SharderOptions) {
    this.clock = opts.clock ?? realClock;
    for (const [index, kind] of opts.kinds.entries()) {
      const namespaces = kind.resource.namespaced && opts.namespaces.length > 0 ? opts.namespaces : [undefined];
      for (const namespace of namespaces) {
        const enqueue = (obj: KubeObject): void => {
          this.enqueue(`${String(index)}|${obj.metadata.namespace ?? ''}|${obj.metadata.name}`);
        };
        const informer = new Informer<KubeObject>({
          client: opts.client,
          resource: kind.resource,
          ...(namespace === undefined ? {} : { namespace }),
          ...(kind.labelSelector === undefined ? {} : { labelSelector: kind.labelSelector }),
          metadataOnly: true,
          log: opts.log,
          handlers: { onAdd: enqueue, onUpdate: (_o, n) => { enqueue(n); } },
        });
        this.kinds.push({ index, kind, informer });
      }
    }
  }

  /** Starts once the view of the ring has synced (no CR is judged by an empty ring). */
  async start(signal: AbortSignal): Promise<void> {
    await this.opts.view.waitForSync(signal);
    if (this.stopped || signal.aborted) return;
    this.rebuild();
    for (const k of this.kinds) k.informer.start();
    this.tick();
    this.opts.log.info({ ring: this.opts.ring, members: this.ring.members }, 'sharder started');
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.ticker !== undefined) this.clock.clearTimeout(this.ticker);
    await Promise.all(this.kinds.map((k) => k.informer.stop()));
  }

  /** A member's Lease changed: re-judge the ring now (a leaving member must get nothing more). */
  membersChanged(): void {
    if (this.stopped) return;
    this.check();
  }

  /** Every retry period: members whose Lease stopped changing expire, then die. */
  private tick(): void {
    if (this.stopped) return;
    this.check();
    this.ticker = this.clock.setTimeout(() => {
      this.tick();
    }, this.opts.timings.retryPeriodMs);
  }

  private check(): void {
    const before = this.ring.members.join(',');
    this.rebuild();
    for (const { member, state } of this.opts.view.states()) if (state === 'dead') void this.bury(member);
    if (this.ring.members.join(',') !== before) {
      this.opts.log.info({ ring: this.opts.ring, members: this.ring.members }, 'ring members changed');
      this.enqueueAll();
    }
  }

  private rebuild(): void {
    const eligible: string[] = [];
    for (const { member, state } of this.opts.view.states()) {
      if (state !== 'ready') continue;
      if (member.settings !== this.opts.settings || member.version !== this.opts.version) {
        if (!this.mismatchLogged.has(member.lease)) {
          this.mismatchLogged.add(member.lease);
          this.opts.log.error(
            { ring: this.opts.ring, member: member.member, version: member.version, settings: member.settings, ownVersion: this.opts.version, ownSettings: this.opts.settings },
            'a ring member runs another version or other settings; it gets no resources until every replica of the ring runs the same image and flags',
          );
        }
        continue;
      }
      eligible.push(member.member);
    }
    eligible.sort();
    if (eligible.join(',') !== this.ring.members.join(',')) {
      this.ring = new HashRing(eligible);
      this.opts.onRing?.(this.ring.members);
    }
  }

  /** Deletes a dead member's Lease (only if unchanged since judged): from then on its CRs are reassigned at once. */
  private async bury(member: RingMember): Promise<void> {
    if (this.buried.has(member.member) && member.holder !== '') return;
    try {
      await deleteObject(this.opts.client, { resource: CoreResources.lease, namespace: this.opts.namespace, name: member.lease }, { resourceVersion: member.resourceVersion });
      this.buried.add(member.member);
      this.opts.log.warn({ ring: this.opts.ring, member: member.member }, 'ring member is gone (its Lease was not renewed for two lease durations, or it left); its resources go to the others');
      this.enqueueAll();
    } catch (err) {
      if (!isConflict(err)) this.opts.log.warn({ ring: this.opts.ring, member: member.member, err: errorMessage(err) }, 'could not remove the Lease of a gone ring member');
    }
  }

  private stateOf(owner: string): MemberState {
    const found = this.opts.view.states().find((s) => s.member.member === owner);
    if (found !== undefined) {
      this.missingSince.delete(owner);
      return found.state;
    }
    if (this.buried.has(owner)) return 'dead';
    const now = this.clock.now();
    const since = this.missingSince.get(owner) ?? now;
    this.missingSince.set(owner, since);
    if (now >= since + DEAD_AFTER_LEASES * this.opts.timings.leaseDurationMs) return 'dead';
    return 'expired';
  }

  private enqueueAll(): void {
    for (const k of this.kinds) for (const obj of k.informer.list()) this.enqueue(`${String(k.index)}|${obj.metadata.namespace ?? ''}|${obj.metadata.name}`);
  }

  private enqueue(key: string): void {
    if (this.stopped || this.pending.has(key)) return;
    this.pending.add(key);
    this.waiting.push(key);
    this.pump();
  }

  private pump(): void {
    const limit = this.opts.concurrency ?? 8;
    while (this.active < limit && this.waiting.length > 0) {
      const key = this.waiting.shift();
      if (key === undefined) break;
      this.pending.delete(key);
      this.active++;
      void this.handle(key).finally(() => {
        this.active--;
        this.pump();
      });
    }
  }

  private find(key: string): { kind: ShardedKind; obj: KubeObject } | undefined {
    const [indexText = '', namespace = '', name = ''] = key.split('|');
    const kind = this.opts.kinds[Number(indexText)];
    if (kind === undefined) return undefined;
    for (const k of this.kinds) {
      if (k.kind !== kind) continue;
      const obj = k.informer.get(namespace === '' ? undefined : namespace, name);
      if (obj !== undefined) return { kind, obj };
    }
    return undefined;
  }

  private async handle(key: string): Promise<void> {
    const found = this.find(key);
    if (found === undefined || this.stopped) return;
    const { kind, obj } = found;
    const labels = obj.metadata.labels ?? {};
    const shard = shardLabel(this.opts.ring);
    const drain = drainLabel(this.opts.ring);
    const uid = obj.metadata.uid;
    if (uid === undefined) return;
    const decision = decide({ owner: labels[shard], draining: labels[drain] !== undefined }, this.ring.ownerOfUid(uid), (m) => this.stateOf(m));
    const patch = patchFor(decision, shard, drain);
    if (patch === undefined) {
      // An owner that is not yet dead: look again once it could be.
      const owner = labels[shard];
      if (owner !== undefined && owner !== '' && !this.ring.members.includes(owner)) this.later(key);
      return;
    }
    try {
      await mergePatchObject(
        this.opts.client,
        { resource: kind.resource, namespace: obj.metadata.namespace, name: obj.metadata.name },
        { metadata: { resourceVersion: obj.metadata.resourceVersion, labels: patch } },
      );
      this.opts.log.debug({ namespace: obj.metadata.namespace, name: obj.metadata.name, decision: decision.kind, to: decision.kind === 'assign' ? decision.to : undefined }, 'shard label written');
    } catch (err) {
      // Changed meanwhile: the watch brings the new version, and with it another look.
      if (isConflict(err) || isNotFound(err)) return;
      this.opts.log.warn({ namespace: obj.metadata.namespace, name: obj.metadata.name, err: errorMessage(err) }, 'could not write the shard label; retrying');
      this.later(key);
    }
  }

  private later(key: string): void {
    this.clock.setTimeout(() => {
      this.enqueue(key);
    }, Math.max(RETRY_MS, this.opts.timings.retryPeriodMs));
  }
}

/** The labels a decision writes (null removes); undefined = nothing to write. */
function patchFor(d: ShardDecision, shard: string, drain: string): Record<string, string | null> | undefined {
  switch (d.kind) {
    case 'none':
      return undefined;
    case 'assign':
      return { [shard]: d.to, [drain]: null };
    case 'drain':
      return { [drain]: 'true' };
    case 'clear-drain':
      return { [drain]: null };
  }
}
