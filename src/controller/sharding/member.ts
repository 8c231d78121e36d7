/**
 * This replica's membership of a shard ring: its own Lease, held and renewed by the leader
 * election algorithm (elector.ts: it gives up, and `onLost` fires, when a renewal has not succeeded
 * within the renew deadline, before the sharder can judge it dead), with the annotations the
 * sharder and the other members read.
 */
import { randomUUID } from 'node:crypto';
import { LeaderElector, type ElectionLog } from '../leader-election/elector.js';
import { HAND_OVER_ANNOTATION, KubeLeaseStore } from '../leader-election/lease-store.js';
import type { KubeClient } from '../../kube/rest.js';
import { MemberAnnotations, memberLeaseName, RING_LABEL } from './names.js';
import type { ShardTimings } from './timings.js';

export interface MemberLeaseOptions {
  readonly client: KubeClient;
  readonly namespace: string;
  readonly ring: string;
  readonly member: string;
  readonly version: string;
  readonly settings: string;
  /** This process in helm call ids. */
  readonly instance: string;
  readonly timings: ShardTimings;
  readonly log: ElectionLog;
  /** The Lease could not be renewed in time: this replica must stop acting on its CRs now. */
  readonly onLost: () => void;
  /** More annotations, read at each write (the member's claims: its view of the ring, busy uids). */
  readonly claims?: () => Readonly<Record<string, string>>;
  /** A write went through with these annotations. */
  readonly onWritten?: (annotations: Readonly<Record<string, string>>) => void;
}

export class MemberLease {
  private readonly elector: LeaderElector;
  private leaving = false;
  private note: string | undefined;

  constructor(private readonly opts: MemberLeaseOptions) {
    const store = new KubeLeaseStore({
      client: opts.client,
      namespace: opts.namespace,
      name: memberLeaseName(opts.ring, opts.member),
      labels: { [RING_LABEL]: opts.ring },
      requestTimeoutMs: opts.timings.renewDeadlineMs / 2,
      annotations: () => ({
        [MemberAnnotations.member]: opts.member,
        [MemberAnnotations.version]: opts.version,
        [MemberAnnotations.settings]: opts.settings,
        [MemberAnnotations.instance]: opts.instance,
        ...(this.leaving ? { [MemberAnnotations.leaving]: 'true' } : {}),
        ...(this.note === undefined ? {} : { [HAND_OVER_ANNOTATION]: this.note }),
        ...opts.claims?.(),
      }),
      ...(opts.onWritten === undefined ? {} : { onWritten: opts.onWritten }),
    });
    this.elector = new LeaderElector({
      store,
      identity: `${opts.member}_${randomUUID()}`,
      log: opts.log,
      leaseDurationMs: opts.timings.leaseDurationMs,
      renewDeadlineMs: opts.timings.renewDeadlineMs,
      retryPeriodMs: opts.timings.retryPeriodMs,
      onLost: opts.onLost,
    });
  }

  /** Takes the Lease (at once unless another process of the same name still holds it); false if stopped first. */
  join(signal: AbortSignal): Promise<boolean> {
    return this.elector.acquire(signal);
  }

  /** From now on the Lease says this member is stopping: the sharder gives it no CRs. True once written. */
  async markLeaving(): Promise<boolean> {
    this.leaving = true;
    return this.elector.renewNow();
  }

  /** Publishes the hand-over note (stopped helm calls) now, before the CRs they belong to are handed back. */
  async publishNote(note: string): Promise<void> {
    if (note === this.note) return;
    this.note = note;
    await this.elector.renewNow();
  }

  /** Writes the Lease now (its annotations changed); true when written. */
  publish(): Promise<boolean> {
    return this.elector.renewNow();
  }

  /** Gives the Lease up (holder ''): call once nothing acts on this member's CRs any more. */
  release(): Promise<void> {
    return this.elector.release(this.note);
  }
}
