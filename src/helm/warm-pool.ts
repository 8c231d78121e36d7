/**
 * Helm kept warm: up to `size` worker processes (warm-worker.ts), started when calls need them,
 * each running one call at a time. `run` takes what exec.ts's runHelm takes and fails the way it
 * fails, so the client (cli-client.ts) cannot tell the two apart:
 * - helm's non-zero exit → helmErrorFromStderr, as for a process;
 * - the time is up → the call is cancelled (helm's SIGTERM), and if the worker has not answered
 *   within the kill grace it is SIGKILLed and replaced: HelmKilledError;
 * - the signal aborts → the same, then HelmCallInterrupted (StoppedCalls records the call);
 * - the worker dies mid-call → HelmProcessDied, which StoppedCalls records too: the dead worker
 *   cannot hold the release's lock any more, so the next reconcile clears it at once.
 * The time counts from `run`, waiting for a free worker included: it is the caller's budget.
 * Memory: each worker holds ~15–25 MiB of its own (Go runtime and helm's package state) beside the
 * binary text all workers share, so a worker idle for `idleMs` ends, the last one excepted (it
 * answers the next call warm); a wave starts them again, one start per waiting call.
 */
import { HelmCallInterrupted, HelmCallsStopped } from '../engines/helm/ports.js';
import { helmErrorFromStderr } from './errors.js';
import { HelmKilledError, HelmProcessDied, KILL_GRACE_MS, type RunOptions, type RunResult } from './exec.js';
import { HelmError } from './types.js';
import { describeExit, WarmWorker, WorkerGone, type WorkerExit, type WorkerReply } from './warm-worker.js';

export type WorkerEvent =
  | { readonly event: 'started'; readonly pid: number; readonly helmVersion: string; readonly replaces?: number | undefined; readonly workers: number }
  | { readonly event: 'start-failed'; readonly error: string }
  | { readonly event: 'exited'; readonly pid: number; readonly how: string; readonly why: 'timeout' | 'stopped' | 'died' | 'closed' | 'idle' };

export interface WarmPoolOptions {
  /** The chartpilot-helm binary. */
  readonly bin: string;
  /** How many workers at most: the helm slots. */
  readonly size: number;
  /** The workers' own environment; default process.env. */
  readonly env?: Readonly<Record<string, string | undefined>> | undefined;
  /** How long a worker may take to say ready; default 30 s. */
  readonly readyTimeoutMs?: number | undefined;
  /** A worker idle this long ends, unless it is the last; default 10 s (IDLE_MS). */
  readonly idleMs?: number | undefined;
  /** Worker starts, replacements and exits (must not throw). */
  readonly log?: ((event: WorkerEvent) => void) | undefined;
}

/** A call's environment as execa's `extendEnv: true` builds it: ours, extended by the call's. */
export function callEnv(base: Readonly<Record<string, string | undefined>>, extra: Readonly<Record<string, string>>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(base)) if (v !== undefined) env[k] = v;
  return Object.assign(env, extra);
}

/** A call from `run` until it is answered: queued, then on a worker. */
interface PendingCall {
  readonly args: readonly string[];
  readonly opts: RunOptions;
  /** Settles the caller's promise (once) and drops the timer and abort listener. */
  readonly finish: (outcome: { result: RunResult } | { error: Error }) => void;
  timedOut: boolean;
  aborted: boolean;
  /** While it runs: stops it on its worker (cancel, then SIGKILL after the grace). */
  stop: (() => void) | undefined;
}

const DEFAULT_READY_TIMEOUT_MS = 30_000;
/**
 * Long enough that the calls of one wave (each worker's next call follows within milliseconds)
 * and a kind's reconciles after a burst keep their workers; short enough that a quiet operator
 * holds one worker's memory, not one per helm slot. A new worker costs the next call that finds
 * none idle one process start (60–130 ms to ready, 30–40 ms of CPU: helm's package initialisation)
 * and ~10 ms more CPU on its first call (podinfo install: ~50 ms against ~40 ms on a warm worker).
 */
export const IDLE_MS = 10_000;

export class WarmHelmPool {
  /** Most recently used last: calls take from the end, so the oldest idle ones age out. */
  private readonly idle: WarmWorker[] = [];
  /** Each idle worker's timer to end it (idleMs). */
  private readonly idleTimers = new Map<WarmWorker, NodeJS.Timeout>();
  /** Idle workers told to end, until they have exited: they no longer count towards the size. */
  private readonly leaving = new Set<WarmWorker>();
  private readonly workers = new Set<WarmWorker>();
  private starting = 0;
  private readonly queue: PendingCall[] = [];
  private closed = false;
  private sizeNow: number;
  /** The pid of a worker killed or dead, for the next start's log line. */
  private replacing: number[] = [];

  constructor(private readonly opts: WarmPoolOptions) {
    this.sizeNow = checkSize(opts.size);
  }

  get size(): number {
    return this.sizeNow;
  }

  /** Workers running (busy or idle), for tests and metrics. */
  get running(): number {
    return this.workers.size;
  }

  /** More or fewer helm slots (a hot reload added or removed kinds); extra idle workers end. */
  resize(size: number): void {
    this.sizeNow = checkSize(size);
    for (let w = this.takeIdle(); w !== undefined; w = this.live() > this.sizeNow ? this.takeIdle() : undefined) {
      if (this.live() <= this.sizeNow) {
        this.toIdle(w);
        break;
      }
      this.leaving.add(w);
      void this.retire(w);
    }
    this.dispatch();
  }

  /**
   * Starts one worker now (the first, at start-up) and returns the helm version it reports;
   * rejects with WorkerStartError when the binary is not a working chartpilot-helm.
   */
  async warmUp(): Promise<string> {
    if (this.idle[0] !== undefined) return this.idle[0].helmVersion;
    const w = await this.startWorker();
    this.toIdle(w);
    this.dispatch();
    return w.helmVersion;
  }

  /** One helm call, as runHelm(args, opts) would run it in a process of its own. */
  run(args: readonly string[], opts: RunOptions): Promise<RunResult> {
    if (!Number.isInteger(opts.timeoutMs) || opts.timeoutMs <= 0) {
      return Promise.reject(new RangeError(`timeoutMs must be a positive integer, got ${opts.timeoutMs}`));
    }
    if (opts.signal?.aborted === true || this.closed) return Promise.reject(new HelmCallsStopped(`helm ${opts.action} not started: stopping`));
    return new Promise<RunResult>((resolve, reject) => {
      let finished = false;
      const call: PendingCall = {
        args,
        opts,
        finish: (outcome) => {
          if (finished) return;
          finished = true;
          clearTimeout(timer);
          opts.signal?.removeEventListener('abort', onAbort);
          if ('error' in outcome) reject(outcome.error);
          else resolve(outcome.result);
        },
        timedOut: false,
        aborted: false,
        stop: undefined,
      };
      // While it waits for a worker nothing has run: time up is a timeout, abort a refusal.
      const timer = setTimeout(() => {
        call.timedOut = true;
        if (call.stop !== undefined) call.stop();
        else if (this.unqueue(call)) call.finish({ error: new HelmKilledError(opts.action, opts.timeoutMs) });
      }, opts.timeoutMs);
      const onAbort = (): void => {
        call.aborted = true;
        if (call.stop !== undefined) call.stop();
        else if (this.unqueue(call)) call.finish({ error: new HelmCallsStopped(`helm ${opts.action} not started: stopping`) });
      };
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      this.queue.push(call);
      this.dispatch();
    });
  }

  /** No call starts from now on; idle workers end, busy ones end after their call. */
  async close(graceMs = KILL_GRACE_MS): Promise<void> {
    this.closed = true;
    for (const c of this.queue.splice(0)) c.finish({ error: new HelmCallsStopped(`helm ${c.opts.action} not started: stopping`) });
    const idle = this.idle.splice(0);
    for (const w of idle) this.clearIdleTimer(w);
    await Promise.all(idle.map((w) => this.retire(w, graceMs)));
    await Promise.all([...this.workers].map((w) => w.exited));
  }

  /** Takes a call off the queue; false when it had left it already. */
  private unqueue(c: PendingCall): boolean {
    const i = this.queue.indexOf(c);
    if (i < 0) return false;
    this.queue.splice(i, 1);
    return true;
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      const worker = this.takeIdle();
      if (worker !== undefined) {
        if (!worker.alive) continue;
        const next = this.queue.shift();
        if (next === undefined) break;
        void this.runOn(worker, next);
        continue;
      }
      // One start per waiting call, up to the pool's size.
      if (this.live() + this.starting >= this.sizeNow || this.starting >= this.queue.length) return;
      void this.startWorker().then(
        (w) => {
          this.toIdle(w);
          this.dispatch();
        },
        (err: unknown) => {
          // A worker that cannot start fails the oldest waiting call rather than leave it to its timeout.
          const next = this.queue.shift();
          next?.finish({ error: new HelmError('failed', `helm ${next.opts.action}: ${err instanceof Error ? err.message : String(err)}`, next.opts.action, { cause: err }) });
          this.dispatch();
        },
      );
    }
  }

  private async startWorker(): Promise<WarmWorker> {
    this.starting++;
    try {
      const w = await WarmWorker.start({ bin: this.opts.bin, env: this.opts.env ?? process.env, readyTimeoutMs: this.opts.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS });
      this.workers.add(w);
      const replaces = this.replacing.shift();
      this.emit({ event: 'started', pid: w.pid, helmVersion: w.helmVersion, ...(replaces === undefined ? {} : { replaces }), workers: this.workers.size });
      void w.exited.then((exit) => {
        this.workers.delete(w);
        if (this.leaving.delete(w)) this.dispatch();
        const i = this.idle.indexOf(w);
        if (i >= 0) {
          // Died while idle: nothing ran; the next call starts another.
          this.idle.splice(i, 1);
          this.clearIdleTimer(w);
          this.emit({ event: 'exited', pid: w.pid, how: describeExit(exit), why: 'died' });
        }
      });
      if (this.closed) {
        await this.retire(w);
        throw new HelmCallsStopped('the warm helm pool is closed');
      }
      return w;
    } catch (err) {
      if (!(err instanceof HelmCallsStopped)) this.emit({ event: 'start-failed', error: err instanceof Error ? err.message : String(err) });
      throw err;
    } finally {
      this.starting--;
    }
  }

  private async runOn(worker: WarmWorker, c: PendingCall): Promise<void> {
    const grace = c.opts.killGraceMs ?? KILL_GRACE_MS;
    let killTimer: NodeJS.Timeout | undefined;
    const killed = { byUs: false };
    c.stop = () => {
      worker.cancel();
      killTimer ??= setTimeout(() => {
        killed.byUs = true;
        worker.kill();
      }, grace);
    };
    let reply: WorkerReply | undefined;
    let gone: WorkerExit | undefined;
    try {
      reply = await worker.call({ argv: c.args, env: callEnv(process.env, c.opts.env), dir: process.cwd() });
    } catch (err) {
      gone = err instanceof WorkerGone ? err.exit : await worker.exited;
    } finally {
      clearTimeout(killTimer);
    }
    // A worker that said it is going (a cancel it could not take in-process answers 143, a panic
    // 2 with the stack) gets no other call: it is waited for (SIGKILL after the grace) and replaced.
    if (reply !== undefined && gone === undefined && !killed.byUs && isLastWords(reply)) {
      const timer = setTimeout(() => {
        worker.kill();
      }, grace);
      gone = await worker.exited;
      clearTimeout(timer);
      this.workers.delete(worker);
      this.emit({ event: 'exited', pid: worker.pid, how: describeExit(gone), why: c.aborted ? 'stopped' : c.timedOut ? 'timeout' : 'died' });
      this.replace(worker.pid);
      this.dispatch();
      c.finish(this.outcome(c, reply, gone, false));
      return;
    }
    // The worker has answered or exited: nothing of this call runs on.
    if (gone !== undefined || killed.byUs) {
      const exit = gone ?? (await worker.exited);
      gone = exit;
      this.workers.delete(worker);
      this.emit({ event: 'exited', pid: worker.pid, how: describeExit(exit), why: c.aborted ? 'stopped' : c.timedOut ? 'timeout' : 'died' });
      this.replace(worker.pid);
    } else {
      this.toIdle(worker);
    }
    this.dispatch();
    c.finish(this.outcome(c, reply, gone, killed.byUs));
  }

  /** A new worker for a dead one, now, so the next call finds a warm one. */
  private replace(pid: number): void {
    this.replacing.push(pid);
    if (this.closed || this.live() + this.starting >= this.sizeNow) return;
    void this.startWorker().then(
      (n) => {
        this.toIdle(n);
        this.dispatch();
      },
      () => undefined, // logged; the next call tries again
    );
  }

  /** What runHelm would have returned or thrown for this call. */
  private outcome(c: PendingCall, reply: WorkerReply | undefined, gone: WorkerExit | undefined, killedByUs: boolean): { result: RunResult } | { error: Error } {
    const { action } = c.opts;
    if (c.aborted) {
      // Helm's stderr is left out: it may quote values, and "context canceled" says nothing new.
      const how = killedByUs ? 'SIGKILL' : reply !== undefined ? 'cancelled' : gone === undefined ? 'it exited' : describeExit(gone);
      return { error: new HelmCallInterrupted(`helm ${action} was stopped (${how}): the operator is stopping`) };
    }
    if (c.timedOut) return { error: new HelmKilledError(action, c.opts.timeoutMs) };
    if (reply === undefined) {
      const how = gone === undefined ? 'it exited' : describeExit(gone);
      return { error: new HelmProcessDied(action, `helm ${action}: the warm helm worker (${this.opts.bin}) died during the call (${how}); a new one replaces it`) };
    }
    if (reply.exitCode !== 0) return { error: helmErrorFromStderr(reply.stderr, action, c.opts.secrets) };
    return { result: { stdout: reply.stdout, stderr: reply.stderr } };
  }

  /** A worker with no call: idle, and ended after idleMs unless it is the last one by then. */
  private toIdle(w: WarmWorker): void {
    this.idle.push(w);
    this.clearIdleTimer(w);
    const timer = setTimeout(() => {
      this.idleTimers.delete(w);
      const i = this.idle.indexOf(w);
      if (i < 0 || this.closed || this.live() + this.starting <= 1) return;
      this.idle.splice(i, 1);
      this.leaving.add(w);
      void this.retire(w, KILL_GRACE_MS, 'idle');
    }, this.opts.idleMs ?? IDLE_MS);
    // An idle worker must not keep the operator's process alive.
    timer.unref();
    this.idleTimers.set(w, timer);
  }

  /** Workers running and not on their way out. */
  private live(): number {
    return this.workers.size - this.leaving.size;
  }

  /** The most recently used idle worker, no longer idle. */
  private takeIdle(): WarmWorker | undefined {
    const w = this.idle.pop();
    if (w !== undefined) this.clearIdleTimer(w);
    return w;
  }

  private clearIdleTimer(w: WarmWorker): void {
    clearTimeout(this.idleTimers.get(w));
    this.idleTimers.delete(w);
  }

  private async retire(w: WarmWorker | undefined, graceMs = KILL_GRACE_MS, why: 'closed' | 'idle' = 'closed'): Promise<void> {
    if (w === undefined) return;
    this.emit({ event: 'exited', pid: w.pid, how: 'stdin closed', why });
    await w.close(graceMs);
  }

  private emit(e: WorkerEvent): void {
    try {
      this.opts.log?.(e);
    } catch {
      // A broken log hook must not break helm calls.
    }
  }
}

/** An answer after which the worker exits (its protocol): a cancel it could not take in-process, or a panic. */
function isLastWords(reply: WorkerReply): boolean {
  return reply.exitCode === 143 || (reply.exitCode === 2 && /^panic: /m.test(reply.stderr));
}

function checkSize(size: number): number {
  if (!Number.isInteger(size) || size < 1) throw new RangeError(`the warm helm pool size must be a whole number of at least 1, got ${String(size)}`);
  return size;
}
