/**
 * Which helm calls an operator stopped on its way out, so the next owner of a release can tell a
 * lock nobody holds from a live one. Every install and upgrade labels its release record with a
 * call id (`chartpilot.io/helm-call: <process>-<n>`, through `helm --labels`); a call stopped by its
 * signal (the drain's deadline, or hot reload removing its kind) is remembered once helm has
 * exited. The list goes to the next leader on the Lease this process releases (handOverNote),
 * and that leader adopts it; plan.ts then unlocks a pending record such a call left at once.
 */
import { randomBytes } from 'node:crypto';
import { ReleaseLabels } from '../engines/helm/names.js';
import { HelmCallInterrupted, type ReleaseActions } from '../engines/helm/ports.js';
import { HelmProcessDied } from './exec.js';

/** How many stopped calls are remembered (and handed over): the newest win. */
const MAX_REMEMBERED = 200;
const CALL_ID = /^[0-9a-f]{12}-\d{1,12}$/;

export class StoppedCalls {
  /** This process, as it appears in call ids. */
  readonly instance: string;
  private seq = 0;
  /** In the order they were stopped (or adopted), oldest first. */
  private readonly ids = new Set<string>();

  constructor(instance: string = randomBytes(6).toString('hex')) {
    if (!/^[0-9a-f]{12}$/.test(instance)) throw new RangeError(`instance must be 12 hex digits, got ${JSON.stringify(instance)}`);
    this.instance = instance;
  }

  /** Processes known to be gone for good (a dead shard ring member): every call they made is stopped. */
  private readonly goneInstances = new Set<string>();

  has(call: string): boolean {
    return this.ids.has(call) || this.goneInstances.has(call.slice(0, call.lastIndexOf('-')));
  }

  /** Every call of `instance` is stopped: that process is gone (shards: the sharder removed its Lease). */
  adoptInstance(instance: string): void {
    if (/^[0-9a-f]{12}$/.test(instance) && instance !== this.instance) this.goneInstances.add(instance);
  }

  /** The remembered calls, oldest first. */
  list(): string[] {
    return [...this.ids];
  }

  /** Calls a previous owner stopped (from its hand-over note); malformed entries are ignored. */
  adopt(calls: Iterable<string>): void {
    for (const c of calls) if (CALL_ID.test(c)) this.remember(c);
  }

  /**
   * `actions` with every install and upgrade labelled with a fresh call id, and every call its
   * signal stopped, or whose helm died under it (a killed process or warm worker), remembered. Only upgradeInstall takes `--labels`; an interrupted uninstall or
   * rollback leaves its lock to the time rule.
   */
  track(actions: ReleaseActions): ReleaseActions {
    return {
      upgradeInstall: async (req) => {
        const call = `${this.instance}-${String(++this.seq)}`;
        try {
          return await actions.upgradeInstall({ ...req, releaseLabels: { ...req.releaseLabels, [ReleaseLabels.call]: call } });
        } catch (err) {
          // Rejected only once helm has exited: nothing of this call can still hold the lock.
          if (err instanceof HelmCallInterrupted || err instanceof HelmProcessDied) this.remember(call);
          throw err;
        }
      },
      uninstall: (req) => actions.uninstall(req),
      rollback: (req) => actions.rollback(req),
      status: (req) => actions.status(req),
    };
  }

  private remember(call: string): void {
    this.ids.delete(call);
    this.ids.add(call);
    for (const old of this.ids) {
      if (this.ids.size <= MAX_REMEMBERED) break;
      this.ids.delete(old);
    }
  }
}

/** The note a stopping leader leaves on its Lease: the stopped calls, comma-separated. */
export function handOverNote(calls: readonly string[]): string {
  return calls.join(',');
}

/** The calls in a hand-over note (anything else in it is ignored). */
export function parseHandOverNote(note: string | undefined): string[] {
  if (note === undefined) return [];
  return note.split(',').filter((c) => CALL_ID.test(c));
}
