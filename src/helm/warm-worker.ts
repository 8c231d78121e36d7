/**
 * One warm helm worker: a `chartpilot-helm` process in worker mode (helm-worker/, protocol in
 * docs/architecture/helm-engine.md "Helm kept warm"), speaking newline-delimited JSON on stdin/stdout, one call at a time.
 * This module only knows the wire; what a call's outcome means (errors, timeouts) is warm-pool.ts's.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

/** What a worker answers for one call: what a helm process with that argv and env would have done. */
export interface WorkerReply {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** How a worker process ended. */
export interface WorkerExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** A call the worker did not answer because it exited first. */
export class WorkerGone extends Error {
  override readonly name = 'WorkerGone';
  constructor(readonly exit: WorkerExit) {
    super(`the warm helm worker exited (${describeExit(exit)})`);
  }
}

/** The worker did not come up: not a chartpilot-helm, crashed, or too slow. */
export class WorkerStartError extends Error {
  override readonly name = 'WorkerStartError';
}

export interface WorkerCall {
  readonly argv: readonly string[];
  /** The call's complete environment: nothing of the worker's own or an earlier call's. */
  readonly env: Readonly<Record<string, string>>;
  readonly dir?: string | undefined;
}

export interface StartWorkerOptions {
  readonly bin: string;
  /** The worker process's own environment (CHARTPILOT_HELM_WORKER=1 is added). */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** How long it may take to say ready. */
  readonly readyTimeoutMs: number;
}

/** Most of a worker's stderr (its own diagnostics) kept, for a start-up failure's message. */
const STDERR_TAIL = 2000;

export function describeExit(exit: WorkerExit): string {
  return exit.signal !== null ? `killed by ${exit.signal}` : `exit code ${String(exit.code)}`;
}

export class WarmWorker {
  /** The helm process's pid as the worker reports it (the process we spawned may be a wrapper). */
  readonly pid: number;
  readonly helmVersion: string;
  /** Resolves once the process has exited (never rejects). */
  readonly exited: Promise<WorkerExit>;
  private exitedWith: WorkerExit | undefined;
  private nextId = 0;
  private current: { id: number; resolve: (r: WorkerReply) => void; reject: (e: Error) => void } | undefined;

  private constructor(
    private readonly child: ChildProcess,
    ready: { pid: number; helmVersion: string },
    exited: Promise<WorkerExit>,
    lines: AsyncIterator<string>,
  ) {
    this.pid = ready.pid;
    this.helmVersion = ready.helmVersion;
    this.exited = exited.then((e) => {
      this.exitedWith = e;
      const c = this.current;
      this.current = undefined;
      c?.reject(new WorkerGone(e));
      return e;
    });
    void this.readReplies(lines);
  }

  /** Starts a worker and waits for its ready line. */
  static async start(opts: StartWorkerOptions): Promise<WarmWorker> {
    const p = await startLineProcess({ bin: opts.bin, env: { ...opts.env, CHARTPILOT_HELM_WORKER: '1' }, readyTimeoutMs: opts.readyTimeoutMs }, (first) => {
      const ready = parseReady(first);
      // A plain helm given no arguments prints its usage: not a worker.
      if (ready === undefined) throw new WorkerStartError(`${opts.bin} is not a chartpilot-helm: its first line is not {"ready":true,…}`);
      return ready;
    });
    return new WarmWorker(p.child, p.ready, p.exited, p.lines);
  }

  get busy(): boolean {
    return this.current !== undefined;
  }

  get alive(): boolean {
    return this.exitedWith === undefined;
  }

  /** Runs one call; rejects with WorkerGone if the worker exits before it answers. */
  call(c: WorkerCall): Promise<WorkerReply> {
    if (this.current !== undefined) return Promise.reject(new Error('a warm helm worker runs one call at a time'));
    if (this.exitedWith !== undefined) return Promise.reject(new WorkerGone(this.exitedWith));
    const id = ++this.nextId;
    return new Promise<WorkerReply>((resolve, reject) => {
      this.current = { id, resolve, reject };
      this.send({ id, argv: c.argv, env: c.env, ...(c.dir === undefined ? {} : { dir: c.dir }) });
    });
  }

  /** Asks the worker to stop the running call as SIGTERM stops a helm process; it still answers. */
  cancel(): void {
    if (this.current !== undefined) this.send({ cancel: this.current.id });
  }

  /** SIGKILL to the worker and everything it started. */
  kill(): void {
    if (this.exitedWith === undefined) killGroup(this.child);
  }

  /** Ends an idle worker: its stdin closes (it exits), SIGKILL after `graceMs`. */
  async close(graceMs: number): Promise<void> {
    if (this.exitedWith === undefined) await endLineProcess(this.child, this.exited, graceMs);
  }

  private send(message: unknown): void {
    this.child.stdin?.write(`${JSON.stringify(message)}\n`);
  }

  private async readReplies(lines: AsyncIterator<string>): Promise<void> {
    for (;;) {
      const next = await lines.next().catch(() => ({ done: true as const, value: undefined }));
      if (next.done === true) return;
      const reply = parseReply(next.value);
      const c = this.current;
      if (reply === undefined || c?.id !== reply.id) {
        // Not the protocol: nothing it says can be trusted any more.
        this.kill();
        return;
      }
      this.current = undefined;
      c.resolve({ exitCode: reply.exitCode, stdout: reply.stdout, stderr: reply.stderr });
    }
  }
}

/** A chartpilot-helm started in one of its protocol modes, its ready line read. */
export interface StartedLineProcess<T> {
  readonly child: ChildProcess;
  readonly exited: Promise<WorkerExit>;
  /** Its stdout's lines after the ready line. */
  readonly lines: AsyncIterator<string>;
  readonly ready: T;
}

/**
 * Starts `bin` with no arguments (the worker's and the engine's way in), in its own process group
 * so a kill also ends what helm started and any wrapper in front of it, and waits for its first
 * line, which `readReady` turns into what the caller needs (or throws WorkerStartError). Fails with
 * WorkerStartError, naming the last lines of its stderr, when it cannot start, exits first or is
 * silent for `readyTimeoutMs`; the process is killed then.
 */
export async function startLineProcess<T>(
  opts: { readonly bin: string; readonly env: Readonly<Record<string, string | undefined>>; readonly readyTimeoutMs: number },
  readReady: (first: string) => T,
): Promise<StartedLineProcess<T>> {
  let child: ChildProcess;
  try {
    child = spawn(opts.bin, [], { env: opts.env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  } catch (err) {
    throw new WorkerStartError(`cannot start ${opts.bin}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  let stderrTail = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    stderrTail = (stderrTail + chunk).slice(-STDERR_TAIL);
  });
  // A write to a process that just died must not crash the operator; its exit is reported instead.
  child.stdin?.on('error', () => undefined);
  const exited = new Promise<WorkerExit>((resolve) => {
    child.once('error', () => {
      // spawn failed (ENOENT, EACCES): 'close' follows; nothing else to do here.
    });
    child.once('close', (code, signal) => {
      resolve({ code, signal });
    });
  });
  const failed = new Promise<never>((_, reject) => {
    child.once('error', (err) => {
      reject(new WorkerStartError(`cannot start ${opts.bin}: ${err.message}`, { cause: err }));
    });
  });
  const stdout = child.stdout;
  if (stdout === null) throw new WorkerStartError(`cannot start ${opts.bin}: no stdout`);
  const lines = createInterface({ input: stdout, crlfDelay: Infinity })[Symbol.asyncIterator]();
  let timer: NodeJS.Timeout | undefined;
  try {
    const first = await Promise.race([
      lines.next(),
      failed,
      exited.then((e) => {
        throw new WorkerStartError(`${opts.bin} exited before it was ready (${describeExit(e)})${tail(stderrTail)}`);
      }),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          reject(new WorkerStartError(`${opts.bin} did not say it was ready within ${String(opts.readyTimeoutMs)} ms${tail(stderrTail)}`));
        }, opts.readyTimeoutMs);
      }),
    ]);
    if (first.done === true) {
      // Its stdout closed without a word: it is exiting; say how.
      const e = await exited;
      throw new WorkerStartError(`${opts.bin} exited before it was ready (${describeExit(e)})${tail(stderrTail)}`);
    }
    return { child, exited, lines, ready: readReady(first.value) };
  } catch (err) {
    killGroup(child);
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

/** Closes a protocol process's stdin (the worker and the engine then exit) and SIGKILLs its group after `graceMs`. */
export async function endLineProcess(child: ChildProcess, exited: Promise<WorkerExit>, graceMs: number): Promise<void> {
  child.stdin?.end();
  const timer = setTimeout(() => {
    killGroup(child);
  }, graceMs);
  await exited;
  clearTimeout(timer);
}

export function killGroup(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    child.kill('SIGKILL');
  }
}

function tail(stderr: string): string {
  const t = stderr.trim();
  return t === '' ? '' : `; it said: ${t.split('\n').slice(-3).join(' | ')}`;
}

export function parseJson(line: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(line);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function parseReady(line: string): { pid: number; helmVersion: string } | undefined {
  const v = parseJson(line);
  if (v?.['ready'] !== true || typeof v['pid'] !== 'number') return undefined;
  return { pid: v['pid'], helmVersion: typeof v['helmVersion'] === 'string' ? v['helmVersion'] : '' };
}

function parseReply(line: string): { id: number; exitCode: number; stdout: string; stderr: string } | undefined {
  const v = parseJson(line);
  if (v === undefined) return undefined;
  const { id, exitCode, stdout, stderr } = v;
  if (typeof id !== 'number' || typeof exitCode !== 'number' || typeof stdout !== 'string' || typeof stderr !== 'string') return undefined;
  return { id, exitCode, stdout, stderr };
}
