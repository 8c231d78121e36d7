/**
 * The bench's watches during one phase: the namespace's Deployments (create, upgrade) and the
 * operator's CRs. Records per release when its Deployment was available for the phase, when its
 * CR was Ready for the current spec and when the CR was gone, and when every Deployment of the
 * namespace was rolled out (the settled point that ends the equal write window).
 */
import type { Kind } from './cluster-ops.js';
import type { Phase } from './contenders.js';
import type { BenchKube } from './kube.js';
import { isAvailable, isReadyFor, isRolledOut, releaseOf, tracksReadiness, type CrReadyView, type DeploymentView } from './rollout.js';
import type { WatchTimes } from './timeline.js';
import { listAndWatch, type Watch } from './watch.js';

export interface PhaseWatchOptions {
  kube: BenchKube;
  namespace: string;
  /** The operator's CR kind; undefined for the floor. */
  kind: Kind | undefined;
  phase: Phase;
  names: readonly string[];
  log: (line: string) => void;
}

export interface PhaseWatch extends WatchTimes {
  /** Some CR carried a Ready condition that tracks readiness. */
  readonly readyTracked: boolean;
  /**
   * Since when (ms) every Deployment of the namespace has been rolled out, the phase's releases
   * among them at their new spec; undefined while that is not so.
   */
  readonly rolledOutSince: number | undefined;
  /** Resolves with rolledOutSince once there is one; undefined at the deadline or on abort. */
  rolledOut(deadline: number, signal: AbortSignal): Promise<number | undefined>;
  stop(): Promise<void>;
}

interface DeployState {
  generation: number;
  rolledOut: boolean;
}

export async function startPhaseWatch(opts: PhaseWatchOptions): Promise<PhaseWatch> {
  const { kube, namespace, kind, phase } = opts;
  const names = new Set(opts.names);
  const available = new Map<string, number>();
  const ready = new Map<string, number>();
  const gone = new Map<string, number>();
  const deployments = new Map<string, DeployState>();
  /** Generations at the phase start: an upgrade counts only what comes after. */
  const startGen = new Map<string, number>();
  const crStartGen = new Map<string, number>();
  let readyTracked = false;
  let rolledOutSince: number | undefined;
  const waiters = new Set<() => void>();

  const allRolledOut = (): boolean => {
    for (const n of names) {
      const d = deployments.get(n);
      if (d === undefined || (phase === 'upgrade' && d.generation <= (startGen.get(n) ?? 0))) return false;
    }
    for (const d of deployments.values()) if (!d.rolledOut) return false;
    return true;
  };
  const check = (at: number): void => {
    if (!allRolledOut()) {
      rolledOutSince = undefined;
      return;
    }
    rolledOutSince ??= at;
    for (const w of waiters) w();
  };

  const onDeployment = (type: string, d: DeploymentView, at: number): void => {
    const name = releaseOf(d);
    if (type === 'DELETED') deployments.delete(name);
    else {
      const generation = d.metadata.generation ?? 0;
      deployments.set(name, { generation, rolledOut: isRolledOut(d) });
      if (names.has(name) && !available.has(name)) {
        const reached = phase === 'create' ? isAvailable(d) : generation > (startGen.get(name) ?? 0) && isRolledOut(d);
        if (reached) available.set(name, at);
      }
    }
    check(at);
  };

  const onCr = (type: string, cr: CrReadyView, at: number): void => {
    const name = cr.metadata.name;
    if (!names.has(name)) return;
    if (type === 'DELETED') {
      if (!gone.has(name)) gone.set(name, at);
      return;
    }
    if (tracksReadiness(cr)) readyTracked = true;
    if (!ready.has(name) && isReadyFor(cr, phase === 'upgrade' ? (crStartGen.get(name) ?? 0) + 1 : 1)) ready.set(name, at);
  };

  const watches: Watch<{ metadata: { name: string } }>[] = [];
  try {
    if (phase !== 'delete') {
      const w = await listAndWatch<DeploymentView>(kube, `/apis/apps/v1/namespaces/${namespace}/deployments`, onDeployment, opts.log);
      watches.push(w);
      for (const d of w.initial) {
        const release = releaseOf(d);
        startGen.set(release, d.metadata.generation ?? 0);
        deployments.set(release, { generation: d.metadata.generation ?? 0, rolledOut: isRolledOut(d) });
      }
    }
    if (kind !== undefined) {
      const w = await listAndWatch<CrReadyView>(kube, `/apis/${kind.group}/${kind.version}/namespaces/${namespace}/${kind.plural}`, onCr, opts.log);
      watches.push(w);
      for (const cr of w.initial) {
        crStartGen.set(cr.metadata.name, cr.metadata.generation ?? 0);
        if (tracksReadiness(cr)) readyTracked = true;
      }
    }
  } catch (err) {
    await Promise.all(watches.map((w) => w.stop()));
    throw err;
  }

  return {
    available,
    ready,
    gone,
    get readyTracked() { return readyTracked; },
    get rolledOutSince() { return rolledOutSince; },
    rolledOut(deadline, signal) {
      if (rolledOutSince !== undefined) return Promise.resolve(rolledOutSince);
      return new Promise((resolve) => {
        const done = (): void => {
          waiters.delete(wake);
          clearTimeout(timer);
          signal.removeEventListener('abort', done);
          resolve(rolledOutSince);
        };
        const wake = (): void => { done(); };
        waiters.add(wake);
        const timer = setTimeout(done, Math.max(0, deadline - Date.now()));
        signal.addEventListener('abort', done, { once: true });
      });
    },
    async stop() {
      await Promise.all(watches.map((w) => w.stop()));
    },
  };
}
