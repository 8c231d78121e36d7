/**
 * A member's claims (guard.ts): it keeps its view of the ring, writes it to its Lease with the
 * uids it still reconciles that the view gives to others, reads the other members' Leases afresh
 * once the view is written, and answers, per CR, whether this member may act on it now.
 */
import type { Logger } from 'pino';
import { CoreResources, listObjects } from '../../kube/objects.js';
import type { KubeClient } from '../../kube/rest.js';
import type { KubeObject } from '../../kube/types.js';
import { errorMessage } from '../../lib/errors.js';
import { formatView, guard, parseView, pickOf, sameView, type GuardDecision, type MemberClaims } from './guard.js';
import { drainLabel, MemberAnnotations, RING_LABEL, shardLabel } from './names.js';
import type { RingView } from './ring-view.js';

type LeaseObject = KubeObject & { spec?: { holderIdentity?: string } };

export interface ShardClaimsOptions {
  readonly client: KubeClient;
  readonly namespace: string;
  readonly ring: string;
  readonly member: string;
  readonly version: string;
  readonly settings: string;
  readonly view: Pick<RingView, 'states'>;
  /** How often the view is recomputed (members expire without an event) and waiting claims read again. */
  readonly retryPeriodMs: number;
  readonly log: Logger;
  /** Writes this member's Lease now (its annotations are `annotations()`); true when written. */
  readonly publish: () => Promise<boolean>;
  /** The view changed (the dependent watches follow it; they are not what decides to act). */
  readonly onViewChanged?: (view: readonly string[]) => void;
}

export class ShardClaims {
  private view: string[] = [];
  private published: string[] | undefined;
  /** Counts writes of a new view: a read of the others started before the latest one is void. */
  private publications = 0;
  private others: MemberClaims[] | undefined;
  /** Uids of CRs a reconcile runs for here, and how many runs (per kind one at most, but kinds differ). */
  private readonly running = new Map<string, number>();
  /** The busy uids the Lease holds now. */
  private publishedBusy = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private publishing: Promise<void> | undefined;
  private republish = false;
  private reading = false;
  /** A CR waited for another member's claim: read the Leases again at the next tick. */
  private waitingOnOthers = false;
  private started = false;

  constructor(private readonly opts: ShardClaimsOptions) {}

  /** The annotations this member's Lease carries (read at each write). */
  annotations(): Record<string, string> {
    const view = this.view;
    const busy = [...this.running.keys()].filter((uid) => pickOf(view, uid) !== this.opts.member).sort();
    return { [MemberAnnotations.view]: formatView(view), [MemberAnnotations.busy]: busy.join(',') };
  }

  /** The Lease was written with these annotations. */
  written(annotations: Readonly<Record<string, string>>): void {
    const view = parseView(annotations[MemberAnnotations.view]);
    this.publishedBusy = new Set((annotations[MemberAnnotations.busy] ?? '').split(',').filter((u) => u !== ''));
    if (sameView(view, this.published)) return;
    this.published = view;
    this.publications++;
    this.others = undefined;
    if (sameView(view, this.view)) void this.readOthers();
  }

  /** Starts following the ring (call once this member's Lease is written). */
  start(): void {
    this.started = true;
    this.refresh();
    this.timer = setInterval(() => {
      this.refresh();
      if (this.waitingOnOthers) void this.readOthers();
    }, this.opts.retryPeriodMs);
    this.timer.unref();
  }

  /**
   * Resolves once this member is in its own view, has written it and read the others (so the first
   * CRs its controllers see are not put off), or after `maxMs` (they are then looked at again later).
   */
  async settled(maxMs: number, signal: AbortSignal): Promise<void> {
    const deadline = Date.now() + maxMs;
    while (!signal.aborted && Date.now() < deadline) {
      this.refresh();
      if (this.view.includes(this.opts.member) && sameView(this.published, this.view) && this.others !== undefined) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  stop(): void {
    this.started = false;
    if (this.timer !== undefined) clearInterval(this.timer);
  }

  /** A member's Lease changed: the view may have. */
  refresh(): void {
    if (!this.started) return;
    const view = eligibleMembers(this.opts.view, this.opts.version, this.opts.settings);
    if (sameView(view, this.view)) return;
    this.view = view;
    this.opts.log.info({ ring: this.opts.ring, member: this.opts.member, view }, 'ring view changed; publishing it before acting on resources it gives this replica');
    void this.publish();
    this.opts.onViewChanged?.(view);
  }

  /** The ring as this member sees it now (ready members of its version and settings, sorted). */
  currentView(): readonly string[] {
    return this.view;
  }

  /**
   * Whether to act on `obj` now; on 'act' the reconcile is recorded as running (end it with the
   * returned function). Synchronous, so no view is written between the decision and the record.
   */
  admit(obj: KubeObject): { decision: GuardDecision; end?: () => void } {
    const uid = obj.metadata.uid;
    if (uid === undefined) return { decision: { kind: 'wait', reason: 'not-labelled' } };
    const labels = obj.metadata.labels ?? {};
    const decision = guard({
      member: this.opts.member,
      uid,
      owner: labels[shardLabel(this.opts.ring)],
      draining: labels[drainLabel(this.opts.ring)] !== undefined,
      view: this.view,
      published: this.published,
      others: this.others,
    });
    if (decision.kind === 'wait' && (decision.reason === 'claimed' || decision.reason === 'unverified')) this.waitingOnOthers = true;
    if (decision.kind !== 'act') return { decision };
    this.running.set(uid, (this.running.get(uid) ?? 0) + 1);
    let ended = false;
    return {
      decision,
      end: () => {
        if (ended) return;
        ended = true;
        const n = (this.running.get(uid) ?? 1) - 1;
        if (n > 0) this.running.set(uid, n);
        else this.running.delete(uid);
        // Others wait for this uid to leave the Lease: write it now rather than at the next renewal.
        if (n <= 0 && this.publishedBusy.has(uid)) void this.publish();
      },
    };
  }

  /** Before handing a CR back: the Lease no longer lists it busy (its next owner reads that). */
  async settle(uid: string | undefined): Promise<void> {
    if (uid === undefined || !this.publishedBusy.has(uid) || this.running.has(uid)) return;
    await this.publish();
  }

  /** A method, not the field: it changes while a read awaits, which narrowing cannot see. */
  private publicationCount(): number {
    return this.publications;
  }

  private askedAgain(): boolean {
    return this.republish;
  }

  /** Writes the Lease (once more if asked again meanwhile). */
  private publish(): Promise<void> {
    if (this.publishing !== undefined) {
      this.republish = true;
      return this.publishing;
    }
    this.publishing = (async () => {
      do {
        this.republish = false;
        if (!(await this.opts.publish())) this.opts.log.warn({ ring: this.opts.ring, member: this.opts.member }, 'could not write this replica\'s ring view to its Lease; retrying at the next renewal');
      } while (this.askedAgain());
    })().finally(() => {
      this.publishing = undefined;
    });
    return this.publishing;
  }

  /** Reads every member's Lease from the API server (not a cache), after this member's view was written. */
  private async readOthers(): Promise<void> {
    if (this.reading) return;
    if (this.published === undefined) return;
    const basis = this.publications;
    this.reading = true;
    this.waitingOnOthers = false;
    try {
      // No resourceVersion: a consistent read, newer than this member's own write.
      const list = await listObjects<LeaseObject>(this.opts.client, CoreResources.lease, this.opts.namespace, { labelSelector: `${RING_LABEL}=${this.opts.ring}` });
      if (basis !== this.publicationCount()) return;
      this.others = claimsOf(list.items, this.opts.member);
    } catch (err) {
      this.waitingOnOthers = true;
      this.opts.log.warn({ ring: this.opts.ring, err: errorMessage(err) }, 'could not read the ring\'s Leases; resources wait');
    } finally {
      this.reading = false;
    }
  }
}

/** The members of the ring that get CRs: ready, same version and settings (as the sharder counts them). */
export function eligibleMembers(view: Pick<RingView, 'states'>, version: string, settings: string): string[] {
  return view
    .states()
    .filter(({ member, state }) => state === 'ready' && member.version === version && member.settings === settings)
    .map(({ member }) => member.member)
    .sort();
}

/** Other members' claims; a released Lease (holder '') claims nothing: that process stopped all its work first. */
export function claimsOf(leases: readonly LeaseObject[], self: string): MemberClaims[] {
  const claims: MemberClaims[] = [];
  for (const lease of leases) {
    const a = lease.metadata.annotations ?? {};
    const member = a[MemberAnnotations.member];
    if (member === undefined || member === self || (lease.spec?.holderIdentity ?? '') === '') continue;
    claims.push({ member, view: parseView(a[MemberAnnotations.view]), busy: new Set((a[MemberAnnotations.busy] ?? '').split(',').filter((u) => u !== '')) });
  }
  return claims;
}
