/**
 * `chartpilot run --shards`: the wiring of one ring member around the manager — the start-up
 * checks (ring and member names, RBAC, one version and one set of settings in the ring), this
 * replica's Lease, its view of the ring, the sharder it runs while it holds the ring's leader
 * Lease, and the hooks by which its controllers hand CRs back.
 */
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { WatchEntry } from '../config/types.js';
import { gvkKey } from '../config/types.js';
import type { ShardHooks } from '../controller/cr-controller.js';
import { LeaderElector } from '../controller/leader-election/elector.js';
import { KubeLeaseStore } from '../controller/leader-election/lease-store.js';
import { acknowledge } from '../controller/sharding/acknowledge.js';
import { ShardClaims } from '../controller/sharding/claims.js';
import { MemberLease } from '../controller/sharding/member.js';
import { drainLabel, memberLeaseName, shardLabel } from '../controller/sharding/names.js';
import { BUCKETS, VIRTUAL_NODES } from '../controller/sharding/ring.js';
import { RingView, type RingMember } from '../controller/sharding/ring-view.js';
import { Sharder } from '../controller/sharding/sharder.js';
import { dependentShare, dependentSwapDelays } from '../controller/sharding/share.js';
import type { DependentSelection, SwapDelays } from '../dependents/selection.js';
import type { ShardTimings } from '../controller/sharding/timings.js';
import { handOverNote, parseHandOverNote, type StoppedCalls } from '../helm/stopped-calls.js';
import { isForbidden } from '../kube/errors.js';
import { createObject, CoreResources } from '../kube/objects.js';
import type { KubeClient } from '../kube/rest.js';
import type { ApiResource, KubeObject } from '../kube/types.js';
import { canonicalJson } from '../lib/json.js';
import { errorMessage } from '../lib/errors.js';
import { checkPermissions, PreflightError, type Check } from './preflight.js';

export interface ShardSetup {
  /** The ring's name: the leader election id. */
  readonly ring: string;
  /** The operator's namespace, where the ring's Leases live. */
  readonly namespace: string;
  readonly member: string;
  readonly timings: ShardTimings;
  readonly version: string;
}

/**
 * What members of one ring must agree on: the kinds and selectors they watch (what there is to
 * share) and the shard settings (how it is shared and when a member is judged gone).
 */
export function settingsDigest(entries: readonly WatchEntry[], timings: ShardTimings): string {
  const kinds = entries.map((e) => ({ kind: gvkKey(e), selector: e.labelSelector ?? '' })).sort((a, b) => (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0));
  const text = canonicalJson({ kinds, leaseDurationMs: timings.leaseDurationMs, buckets: BUCKETS, virtualNodes: VIRTUAL_NODES });
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

/** The RBAC a member needs beyond a single replica's, named so a denial says which rule to add. */
function shardChecks(setup: ShardSetup, resources: readonly ApiResource[], namespaces: readonly string[]): Check[] {
  const leases = ['get', 'list', 'watch', 'create', 'update', 'delete'].map((verb) => ({ verb, group: 'coordination.k8s.io', resource: 'leases', namespace: setup.namespace }));
  const scopes = namespaces.length === 0 ? [undefined] : namespaces;
  const labels = resources.flatMap((r) => scopes.map((namespace) => ({ verb: 'patch', group: r.group, resource: r.plural, namespace })));
  return [...leases, ...labels];
}

/** Start-up checks of `--shards`: each problem one line naming the fix. */
export async function checkShards(client: KubeClient, setup: ShardSetup, resources: readonly ApiResource[], namespaces: readonly string[]): Promise<void> {
  try {
    await checkPermissions(client, shardChecks(setup, resources, namespaces));
  } catch (err) {
    if (!(err instanceof PreflightError)) throw err;
    // checkPermissions names what is denied; the rule to add is the ring's, not `generate rbac`'s.
    const denied = err.problems.map((p) => /needs: (.*?)\. Grant them/u.exec(p)?.[1] ?? p).join('; ');
    throw new PreflightError([
      `--shards: the operator's identity may not ${denied}. A sharded operator needs a Role in ${setup.namespace} allowing get, list, watch, create, update and delete on ` +
        `leases (coordination.k8s.io), and patch on the watched kinds (to write their shard labels); chartpilot generate deploy --shards writes the Role for the Leases, generate rbac the patch`,
    ]);
  }
  // The review can allow what admission then refuses: try the write itself (not stored).
  const name = memberLeaseName(setup.ring, setup.member);
  try {
    await createObject(client, CoreResources.lease, setup.namespace, { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name, namespace: setup.namespace }, spec: {} }, { dryRun: true });
  } catch (err) {
    if (isAlreadyThere(err)) return;
    const why = isForbidden(err) ? 'creating it is forbidden' : errorMessage(err);
    throw new PreflightError([
      `--shards: cannot write this replica's Lease ${setup.namespace}/${name}: ${why}; grant create and update on leases (coordination.k8s.io) in ${setup.namespace} ` +
        `(chartpilot generate deploy --shards writes that Role), or create the namespace`,
    ]);
  }
}

function isAlreadyThere(err: unknown): boolean {
  return (err as { status?: number }).status === 409;
}

export interface ShardMemberOptions {
  readonly client: KubeClient;
  readonly setup: ShardSetup;
  readonly settings: string;
  readonly kinds: readonly { readonly resource: ApiResource; readonly labelSelector: string | undefined }[];
  readonly namespaces: readonly string[];
  readonly stoppedCalls: StoppedCalls;
  readonly log: Logger;
  /** This replica's Lease could not be renewed in time: it must stop acting now. */
  readonly onLost: () => void;
  /** A member is gone for good: its helm calls no longer run (their locks are nobody's). */
  readonly onMemberGone: () => void;
  /** The sharder role was taken or given up (leader_election_master_status). */
  readonly onSharder?: (sharder: boolean) => void;
  /** This replica's view of the ring changed: its dependent watches should follow dependentSelection(). */
  readonly onViewChanged?: () => void;
}

/** One replica's part in the ring. */
export class ShardMember {
  readonly view: RingView;
  private readonly lease: MemberLease;
  private readonly claims: ShardClaims;
  private readonly stopSharding = new AbortController();
  private sharderLoop: Promise<void> | undefined;
  private sharder: Sharder | undefined;
  private mismatchLogged = false;

  constructor(private readonly opts: ShardMemberOptions) {
    const { setup } = opts;
    this.view = new RingView({
      client: opts.client,
      namespace: setup.namespace,
      ring: setup.ring,
      leaseDurationMs: setup.timings.leaseDurationMs,
      log: opts.log.child({ controller: 'shard-ring' }),
      onChange: (m) => {
        this.noteMember(m);
      },
      onGone: (m) => {
        this.claims.refresh();
        if (m.member === setup.member) return;
        opts.stoppedCalls.adoptInstance(m.instance);
        opts.onMemberGone();
      },
    });
    this.lease = new MemberLease({
      client: opts.client,
      namespace: setup.namespace,
      ring: setup.ring,
      member: setup.member,
      version: setup.version,
      settings: opts.settings,
      instance: opts.stoppedCalls.instance,
      timings: setup.timings,
      log: opts.log.child({ controller: 'shard-member' }),
      onLost: opts.onLost,
      claims: () => this.claims.annotations(),
      onWritten: (annotations) => {
        this.claims.written(annotations);
      },
    });
    this.claims = new ShardClaims({
      client: opts.client,
      namespace: setup.namespace,
      ring: setup.ring,
      member: setup.member,
      version: setup.version,
      settings: opts.settings,
      view: this.view,
      retryPeriodMs: setup.timings.retryPeriodMs,
      log: opts.log.child({ controller: 'shard-member' }),
      publish: () => this.lease.publish(),
      onViewChanged: () => opts.onViewChanged?.(),
    });
  }

  /** The owners whose objects this replica's dependent watches should hold: its share of its view. */
  dependentSelection(): DependentSelection {
    return dependentShare(this.claims.currentView(), this.opts.setup.member);
  }

  /** When its dependent watches follow a change of its share. */
  get dependentSwapDelays(): SwapDelays {
    return dependentSwapDelays(this.opts.setup.timings);
  }

  /** The label selector of this replica's CRs. */
  get selector(): string {
    return `${shardLabel(this.opts.setup.ring)}=${this.opts.setup.member}`;
  }

  /** Members the ring counts now (ready ones). */
  liveMembers(): number {
    return this.view.states().filter((s) => s.state === 'ready').length;
  }

  /**
   * Watches the ring, waits (logging one line) while live members run another version or other
   * settings, then takes this replica's Lease and starts competing for the sharder role. False
   * when stopped first.
   */
  async join(signal: AbortSignal): Promise<boolean> {
    const { setup } = this.opts;
    this.view.start();
    await this.view.waitForSync(signal).catch(() => undefined);
    while (!signal.aborted) {
      const others = this.mismatched();
      if (others.length === 0) break;
      if (!this.mismatchLogged) {
        this.mismatchLogged = true;
        const o = others[0];
        this.opts.log.error(
          { ring: setup.ring, member: setup.member, other: o?.member, otherVersion: o?.version, otherSettings: o?.settings, version: setup.version, settings: this.opts.settings },
          `shard ring ${setup.ring}: member ${o?.member ?? ''} runs version ${o?.version ?? ''} with settings ${o?.settings ?? ''}, this replica ${setup.version} with ${this.opts.settings} ` +
            '(watched kinds, selectors, --shard-lease-duration); this replica takes no resources until every live member runs the same image and flags',
        );
      }
      await new Promise((resolve) => setTimeout(resolve, setup.timings.retryPeriodMs));
    }
    if (signal.aborted) return false;
    if (!(await this.lease.join(signal))) return false;
    this.opts.log.info({ ring: setup.ring, member: setup.member }, 'joined the shard ring');
    this.claims.start();
    await this.claims.settled(setup.timings.renewDeadlineMs, signal);
    this.sharderLoop = this.runSharder();
    return true;
  }

  /** Live members whose version or settings differ from this replica's. */
  private mismatched(): RingMember[] {
    const { setup } = this.opts;
    return this.view
      .states()
      .filter((s) => s.state === 'ready' && s.member.member !== setup.member && (s.member.version !== setup.version || s.member.settings !== this.opts.settings))
      .map((s) => s.member);
  }

  /** Hooks for the controllers: a drain label means hand back, and handing back publishes stopped helm calls first. */
  hooks(resource: ApiResource): ShardHooks {
    const { setup, client } = this.opts;
    const drain = drainLabel(setup.ring);
    return {
      draining: (obj: KubeObject) => obj.metadata.labels?.[drain] !== undefined,
      admit: (obj: KubeObject) => {
        const { decision, end } = this.claims.admit(obj);
        switch (decision.kind) {
          case 'act':
            return end === undefined ? { kind: 'skip' } : { kind: 'act', end };
          case 'let-go':
            return { kind: 'let-go' };
          case 'wait':
            // A label naming another member is not ours to look at again; any other wait ends by itself.
            return decision.reason === 'not-labelled' ? { kind: 'skip' } : { kind: 'wait', retryMs: setup.timings.retryPeriodMs, reason: decision.reason };
        }
      },
      acknowledge: async (obj: KubeObject) => {
        // Its next owner reads this member's Lease before acting: it must no longer list the CR busy.
        await this.claims.settle(obj.metadata.uid);
        // The next owner must know which of our helm calls were stopped before it sees the CR.
        const note = handOverNote(this.opts.stoppedCalls.list());
        if (note !== '') await this.lease.publishNote(note);
        return acknowledge(client, resource, { namespace: obj.metadata.namespace, name: obj.metadata.name }, setup.ring, setup.member);
      },
      onError: (obj, err) => {
        this.opts.log.warn({ namespace: obj.metadata.namespace, name: obj.metadata.name, err: errorMessage(err) }, 'could not hand the resource back; retrying');
      },
    };
  }

  /** Stopping: the Lease says so (the sharder gives this replica nothing more). */
  async leave(): Promise<void> {
    if (!(await this.lease.markLeaving())) this.opts.log.warn({ ring: this.opts.setup.ring }, 'could not mark this replica as leaving; the sharder sees it when its Lease is released');
  }

  /** Once every CR is handed back: give up the sharder role and the Lease. */
  async close(): Promise<void> {
    this.claims.stop();
    this.stopSharding.abort();
    await this.sharderLoop;
    await this.lease.release();
    await this.view.stop();
  }

  /** Another member's hand-over note: its stopped helm calls are nobody's locks. */
  private noteMember(m: RingMember): void {
    if (m.member !== this.opts.setup.member) this.opts.stoppedCalls.adopt(parseHandOverNote(m.handOver));
    this.claims.refresh();
    this.sharder?.membersChanged();
  }

  /** While this replica holds the ring's leader Lease it is the sharder; when it loses it, it competes again. */
  private async runSharder(): Promise<void> {
    const { setup, client, log } = this.opts;
    const signal = this.stopSharding.signal;
    while (!signal.aborted) {
      const lost = new AbortController();
      const elector = new LeaderElector({
        store: new KubeLeaseStore({ client, namespace: setup.namespace, name: setup.ring, requestTimeoutMs: setup.timings.renewDeadlineMs / 2 }),
        identity: `${setup.member}_sharder_${String(process.pid)}`,
        log: log.child({ controller: 'sharder' }),
        leaseDurationMs: setup.timings.leaseDurationMs,
        renewDeadlineMs: setup.timings.renewDeadlineMs,
        retryPeriodMs: setup.timings.retryPeriodMs,
        ...(this.opts.onSharder === undefined ? {} : { onLeadership: this.opts.onSharder }),
        onLost: () => {
          lost.abort();
        },
      });
      if (!(await elector.acquire(signal))) {
        await elector.release();
        return;
      }
      const sharder = new Sharder({
        client,
        ring: setup.ring,
        namespace: setup.namespace,
        kinds: this.opts.kinds,
        namespaces: this.opts.namespaces,
        view: this.view,
        timings: setup.timings,
        version: setup.version,
        settings: this.opts.settings,
        log: log.child({ controller: 'sharder' }),
      });
      this.sharder = sharder;
      const both = AbortSignal.any([signal, lost.signal]);
      await sharder.start(both);
      await new Promise<void>((resolve) => {
        if (both.aborted) resolve();
        else both.addEventListener('abort', () => { resolve(); }, { once: true });
      });
      this.sharder = undefined;
      await sharder.stop();
      await elector.release();
    }
  }
}
