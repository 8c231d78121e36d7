/**
 * The members of a shard ring as this process sees them: a watch of the ring's Leases (a handful
 * of small objects), each remembered with when it last changed on this process's monotonic clock,
 * never by the times written in it (clocks of two nodes may disagree).
 */
import type { Logger } from 'pino';
import { Informer } from '../../kube/informer.js';
import { CoreResources } from '../../kube/objects.js';
import type { KubeClient } from '../../kube/rest.js';
import type { KubeObject } from '../../kube/types.js';
import { realClock, type Clock } from '../../lib/clock.js';
import { HAND_OVER_ANNOTATION } from '../leader-election/lease-store.js';
import { memberState, type MemberObservation, type MemberState } from './membership.js';
import { MemberAnnotations, RING_LABEL } from './names.js';

type LeaseObject = KubeObject & { spec?: { holderIdentity?: string; leaseDurationSeconds?: number; renewTime?: string } };

export interface RingMember extends MemberObservation {
  /** The Lease's name. */
  readonly lease: string;
  readonly resourceVersion: string;
  readonly instance: string;
  readonly handOver: string | undefined;
}

export interface RingViewOptions {
  readonly client: KubeClient;
  readonly namespace: string;
  readonly ring: string;
  readonly leaseDurationMs: number;
  readonly log: Logger;
  readonly clock?: Clock;
  /** A member's Lease appeared or changed. */
  readonly onChange?: (member: RingMember) => void;
  /**
   * A member's Lease was deleted: the sharder does that once it judged the member dead (or long
   * gone), so nothing of that process runs any more, its helm calls included.
   */
  readonly onGone?: (member: RingMember) => void;
}

export class RingView {
  private readonly informer: Informer<LeaseObject>;
  private readonly clock: Clock;
  private readonly members = new Map<string, RingMember>();

  constructor(private readonly opts: RingViewOptions) {
    this.clock = opts.clock ?? realClock;
    const seen = (obj: LeaseObject): void => {
      const m = this.observe(obj);
      if (m === undefined) return;
      this.members.set(m.lease, m);
      opts.onChange?.(m);
    };
    this.informer = new Informer<LeaseObject>({
      client: opts.client,
      resource: CoreResources.lease,
      namespace: opts.namespace,
      labelSelector: `${RING_LABEL}=${opts.ring}`,
      log: opts.log,
      handlers: {
        onAdd: seen,
        onUpdate: (_old, obj) => {
          seen(obj);
        },
        onDelete: (obj) => {
          const m = this.members.get(obj.metadata.name) ?? this.observe(obj);
          this.members.delete(obj.metadata.name);
          if (m !== undefined) opts.onGone?.(m);
        },
      },
    });
  }

  start(): void {
    this.informer.start();
  }

  waitForSync(signal?: AbortSignal): Promise<void> {
    return this.informer.waitForSync(signal);
  }

  hasSynced(): boolean {
    return this.informer.hasSynced();
  }

  stop(): Promise<void> {
    return this.informer.stop();
  }

  now(): number {
    return this.clock.now();
  }

  list(): RingMember[] {
    return [...this.members.values()];
  }

  /** Members with their states now. */
  states(): { member: RingMember; state: MemberState }[] {
    const now = this.clock.now();
    return this.list().map((member) => ({ member, state: memberState(member, now, this.opts.leaseDurationMs) }));
  }

  private observe(obj: LeaseObject): RingMember | undefined {
    const a = obj.metadata.annotations ?? {};
    const member = a[MemberAnnotations.member];
    if (member === undefined || member === '') return undefined;
    const previous = this.members.get(obj.metadata.name);
    const rv = obj.metadata.resourceVersion ?? '';
    return {
      lease: obj.metadata.name,
      member,
      holder: obj.spec?.holderIdentity ?? '',
      leaseDurationMs: (obj.spec?.leaseDurationSeconds ?? 0) * 1000,
      // Unchanged (a relist): it has not been renewed since we last saw it.
      observedAt: previous !== undefined && previous.resourceVersion === rv ? previous.observedAt : this.clock.now(),
      leaving: a[MemberAnnotations.leaving] === 'true',
      version: a[MemberAnnotations.version] ?? '',
      settings: a[MemberAnnotations.settings] ?? '',
      resourceVersion: rv,
      instance: a[MemberAnnotations.instance] ?? '',
      handOver: a[HAND_OVER_ANNOTATION],
    };
  }
}
