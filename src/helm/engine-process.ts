/**
 * The helm engine: one `chartpilot-helm` process in engine mode (helm-worker/, "Engine protocol"
 * in its README) running helm's actions concurrently, each call with its own configuration.
 * Newline-delimited JSON both ways; calls are told apart by id, and a call that asked for it is
 * asked back for its post-render over the same channel. This module only knows the wire and the
 * process; what an answer means for the operator is engine-client.ts's.
 */
import type { ChildProcess } from 'node:child_process';

import { endLineProcess, killGroup, parseJson, startLineProcess, WorkerGone, WorkerStartError, type WorkerExit } from './warm-worker.js';

/** The protocol version this client speaks (the ready frame's `engine`). */
export const ENGINE_PROTOCOL = 2;

/** A release record's fields as the engine sends them. */
export interface EngineRelease {
  readonly name: string;
  readonly namespace: string;
  readonly revision: number;
  readonly status: string;
  readonly chartName: string;
  readonly chartVersion: string;
  readonly appVersion: string;
  readonly notes: string;
  readonly manifest: string;
  readonly description: string;
  readonly applyMethod: string;
}

export type EngineErrorClass = 'not-found' | 'cancelled' | 'timeout' | 'failed';

export type EngineAnswer = (
  | { readonly release: EngineRelease }
  | { readonly releases: readonly EngineRelease[] }
  | { readonly done: true }
  | { readonly error: { readonly class: EngineErrorClass; readonly message: string } }
) & {
  /** What a confined call's confinement refused, in order (also when helm went on past it). */
  readonly refusals?: readonly string[] | undefined;
};

/**
 * A call confined in the engine (README.md "Confinement in the engine"): where it may write, and
 * the key its release records are proved with. Secret (the key): never logged.
 */
export interface EngineConfinement {
  readonly namespace: string;
  readonly allowClusterScoped: boolean;
  readonly allowCrossNamespace: boolean;
  /** base64 of the CR's record key (helm/record-mac.ts deriveRecordKey). */
  readonly recordKey: string;
}

/** One call as the engine takes it (engine-client.ts builds them; field names are the protocol's). */
export interface EngineRequest {
  readonly op: 'upgrade' | 'uninstall' | 'rollback' | 'status' | 'history';
  readonly release: string;
  readonly namespace: string;
  /** A session of the API proxy to reach the API server through; or `confine`. */
  readonly kubeconfig?: string | undefined;
  /** Confined in the engine, as its own connection to the API server; or `kubeconfig`. */
  readonly confine?: EngineConfinement | undefined;
  readonly kubeCacheDir?: string | undefined;
  readonly impersonate?: string | undefined;
  readonly timeoutMs: number;
  readonly chart?: string | undefined;
  /** The text of a values file (JSON), read by the engine as helm reads `--values`. */
  readonly values?: string | undefined;
  readonly historyMax?: number | undefined;
  readonly description?: string | undefined;
  readonly labels?: Readonly<Record<string, string>> | undefined;
  readonly force?: boolean | undefined;
  readonly disableHooks?: boolean | undefined;
  readonly postRender?: boolean | undefined;
  readonly wait?: boolean | undefined;
  readonly revision?: number | undefined;
}

/** Answers a post-render: the manifest to apply, or a refusal (helm then applies nothing). */
export type PostRenderHandler = (manifest: string) => { manifest: string } | { error: string };

export interface StartEngineOptions {
  readonly bin: string;
  /** The engine's own environment (CHARTPILOT_HELM_ENGINE=1 is added). */
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly readyTimeoutMs: number;
}

interface Pending {
  readonly resolve: (a: EngineAnswer) => void;
  readonly reject: (e: Error) => void;
  readonly postRender: PostRenderHandler | undefined;
}

export class HelmEngineProcess {
  readonly pid: number;
  readonly helmVersion: string;
  /** Resolves once the process has exited (never rejects). */
  readonly exited: Promise<WorkerExit>;
  private exitedWith: WorkerExit | undefined;
  private nextId = 0;
  private readonly pending = new Map<number, Pending>();

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
      const calls = [...this.pending.values()];
      this.pending.clear();
      for (const c of calls) c.reject(new WorkerGone(e));
      return e;
    });
    void this.readFrames(lines);
  }

  static async start(opts: StartEngineOptions): Promise<HelmEngineProcess> {
    const p = await startLineProcess({ bin: opts.bin, env: { ...opts.env, CHARTPILOT_HELM_ENGINE: '1' }, readyTimeoutMs: opts.readyTimeoutMs }, (first) => {
      const ready = parseJson(first);
      if (ready?.['ready'] !== true || typeof ready['pid'] !== 'number') {
        throw new WorkerStartError(`${opts.bin} is not a chartpilot-helm with an engine: its first line is not {"ready":true,…}`);
      }
      if (ready['engine'] !== ENGINE_PROTOCOL) {
        throw new WorkerStartError(`${opts.bin} speaks engine protocol ${JSON.stringify(ready['engine'] ?? null)}, this chartpilot ${String(ENGINE_PROTOCOL)}: rebuild it (devcluster/provision.sh helm-worker)`);
      }
      return { pid: ready['pid'], helmVersion: typeof ready['helmVersion'] === 'string' ? ready['helmVersion'] : '' };
    });
    return new HelmEngineProcess(p.child, p.ready, p.exited, p.lines);
  }

  get alive(): boolean {
    return this.exitedWith === undefined;
  }

  get inFlight(): number {
    return this.pending.size;
  }

  /**
   * Sends one call; `onStart` gets its id (for `cancel`) before anything can answer. Rejects with
   * WorkerGone if the engine exits before answering.
   */
  call(req: EngineRequest, postRender: PostRenderHandler | undefined, onStart?: (id: number) => void): Promise<EngineAnswer> {
    if (this.exitedWith !== undefined) return Promise.reject(new WorkerGone(this.exitedWith));
    const id = ++this.nextId;
    return new Promise<EngineAnswer>((resolve, reject) => {
      this.pending.set(id, { resolve, reject, postRender });
      onStart?.(id);
      this.send({ id, ...req });
    });
  }

  /** Cancels call `id`'s context; it still answers (cancelled, or whatever helm made of it). */
  cancel(id: number): void {
    if (this.pending.has(id)) this.send({ cancel: id });
  }

  /** SIGKILL to the engine and everything it started; every call in flight rejects with WorkerGone. */
  kill(): void {
    if (this.exitedWith === undefined) killGroup(this.child);
  }

  /** Ends the engine: stdin closes (it cancels what runs and exits), SIGKILL after `graceMs`. */
  async close(graceMs: number): Promise<void> {
    if (this.exitedWith === undefined) await endLineProcess(this.child, this.exited, graceMs);
  }

  private send(message: unknown): void {
    this.child.stdin?.write(`${JSON.stringify(message)}\n`);
  }

  private async readFrames(lines: AsyncIterator<string>): Promise<void> {
    for (;;) {
      const next = await lines.next().catch(() => ({ done: true as const, value: undefined }));
      if (next.done === true) return;
      const frame = parseJson(next.value);
      const id = frame?.['id'];
      const call = typeof id === 'number' ? this.pending.get(id) : undefined;
      if (frame === undefined || typeof id !== 'number' || call === undefined) {
        // Not the protocol: nothing it says can be trusted any more.
        this.kill();
        return;
      }
      if (typeof frame['postRender'] === 'string') {
        this.answerPostRender(id, call, frame['postRender']);
        continue;
      }
      const answer = parseAnswer(frame);
      if (answer === undefined) {
        this.kill();
        return;
      }
      this.pending.delete(id);
      call.resolve(answer);
    }
  }

  private answerPostRender(id: number, call: Pending, manifest: string): void {
    let reply: { manifest: string } | { error: string };
    try {
      reply = call.postRender === undefined ? { error: 'this call has no post-renderer' } : call.postRender(manifest);
    } catch (err) {
      reply = { error: err instanceof Error ? err.message : String(err) };
    }
    this.send({ postRendered: id, ...reply });
  }
}

const CLASSES: ReadonlySet<string> = new Set<EngineErrorClass>(['not-found', 'cancelled', 'timeout', 'failed']);

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

function parseRelease(v: unknown): EngineRelease | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const r = v as Record<string, unknown>;
  const revision = r['revision'];
  if (typeof revision !== 'number' || !Number.isInteger(revision) || str(r['name']) === '') return undefined;
  return {
    name: str(r['name']),
    namespace: str(r['namespace']),
    revision,
    status: str(r['status']),
    chartName: str(r['chartName']),
    chartVersion: str(r['chartVersion']),
    appVersion: str(r['appVersion']),
    notes: str(r['notes']),
    manifest: str(r['manifest']),
    description: str(r['description']),
    applyMethod: str(r['applyMethod']),
  };
}

/** Exported for the unit test of the frame shapes. */
export function parseAnswer(frame: Readonly<Record<string, unknown>>): EngineAnswer | undefined {
  const answer = answerOf(frame);
  const refusals = frame['refusals'];
  if (answer === undefined || refusals === undefined) return answer;
  if (!Array.isArray(refusals) || !refusals.every((r): r is string => typeof r === 'string')) return undefined;
  return { ...answer, refusals };
}

function answerOf(frame: Readonly<Record<string, unknown>>): EngineAnswer | undefined {
  const error = frame['error'];
  if (typeof error === 'object' && error !== null) {
    const e = error as Record<string, unknown>;
    const cls = str(e['class']);
    return { error: { class: CLASSES.has(cls) ? (cls as EngineErrorClass) : 'failed', message: str(e['message']) } };
  }
  if (frame['done'] === true) return { done: true };
  if ('release' in frame) {
    const release = parseRelease(frame['release']);
    return release === undefined ? undefined : { release };
  }
  if (Array.isArray(frame['releases'])) {
    const releases = frame['releases'].map(parseRelease);
    const read = releases.filter((r): r is EngineRelease => r !== undefined);
    return read.length === releases.length ? { releases: read } : undefined;
  }
  return undefined;
}
