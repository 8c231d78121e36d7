/**
 * HelmClient backed by the helm engine (engine-process.ts): helm's actions run in one
 * chartpilot-helm process, concurrently, each call as a typed request instead of a command line.
 * What stays as with a helm process per call: every call is confined — by the engine itself,
 * on the call's own transport (`confine`, the default the operator sets up), or through its own
 * session of the API proxy (the engine gets the session's kubeconfig) — values reach helm only as a
 * values file's text, the post-render check is the same TypeScript (asked over the engine's
 * channel instead of through a plugin and curl), and helm's error text is classified and redacted
 * by the same rules (errors.ts), so a call fails the same way in every mode:
 * - the time is up → the call's context is cancelled (as SIGTERM to helm); no answer within the
 *   kill grace → the engine is killed and replaced: HelmKilledError (the others in flight die with it);
 * - the signal aborts → the same, then HelmCallInterrupted;
 * - the engine dies mid-call → HelmProcessDied (StoppedCalls clears the lock it left at once).
 */
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { makeProcessDir } from '../lib/process-dirs.js';
import { HelmCallInterrupted, HelmCallsStopped } from '../engines/helm/ports.js';
import type { ApiGate, GatedCall } from './api-gate.js';
import { timedCall, type HelmCallEvent } from './call-log.js';
import {
  refusedError,
  releaseLabelFlags,
  scope,
  validateChart,
  validateRequest,
  validateUser,
  whenFound,
  withSession,
  type CliHelmClient,
} from './cli-client.js';
import { helmErrorFromStderr, stringLeaves } from './errors.js';
import { HelmKilledError, HelmProcessDied, KILL_GRACE_MS } from './exec.js';
import { HelmEngineProcess, type EngineAnswer, type EngineRelease, type EngineRequest, type PostRenderHandler } from './engine-process.js';
import { toReleaseStatus } from './parse.js';
import { injectMetadata, PostRenderRefusal } from './postrender/inject.js';
import type { RenderRefusal } from './postrender/spec.js';
import {
  HelmError,
  type PostRenderSpec,
  type Release,
  type ReleaseRequestBase,
  type RollbackRequest,
  type StatusRequest,
  type TemplateRequest,
  type UninstallRequest,
  type UpgradeInstallRequest,
} from './types.js';
import { describeExit, WorkerGone } from './warm-worker.js';
import { helmTimeoutMs } from './argv.js';

export type EngineEvent =
  | { readonly event: 'started'; readonly pid: number; readonly helmVersion: string; readonly replaces?: number | undefined }
  | { readonly event: 'start-failed'; readonly error: string }
  | { readonly event: 'exited'; readonly pid: number; readonly how: string; readonly why: 'killed' | 'died' | 'closed' };

export interface EngineHelmClientOptions {
  /** The chartpilot-helm binary. */
  readonly bin: string;
  /** The engine's own environment; default process.env. */
  readonly env?: Readonly<Record<string, string | undefined>> | undefined;
  /** The confining API layer: every call of the engine goes through a session of its own. */
  readonly gate: ApiGate;
  /** `helm template` (the command-line tools' only action the engine does not run). */
  readonly template: (req: TemplateRequest) => Promise<string>;
  readonly log?: ((event: HelmCallEvent) => void) | undefined;
  readonly onEngine?: ((event: EngineEvent) => void) | undefined;
  /** After the time is up, how long a cancelled call may take to answer before the engine is killed; default 5 s. */
  readonly killGraceMs?: number | undefined;
  /** How long the engine may take to say ready; default 30 s. */
  readonly readyTimeoutMs?: number | undefined;
  /** Where the per-call kubeconfigs (and the confined calls' discovery cache) go; default os.tmpdir(). */
  readonly tempDir?: string | undefined;
  /**
   * Confinement in the engine: every call reaches the API server as the engine's own connection
   * (KUBECONFIG or the pod's service account, as the operator's) through the engine's rules —
   * the same as the API proxy's, on the call's transport (helm-worker/confine.go, records.go) —
   * instead of through a `gate` session. `recordKey` is the CR's record key (record-mac.ts).
   */
  readonly confine?: { readonly recordKey: (crUid: string) => Buffer } | undefined;
}

type EngineFields = Omit<EngineRequest, 'release' | 'namespace' | 'kubeconfig' | 'confine' | 'impersonate' | 'kubeCacheDir' | 'timeoutMs'>;
type Connection = Pick<EngineRequest, 'kubeconfig' | 'confine' | 'impersonate' | 'kubeCacheDir'>;
interface CallOptions {
  readonly secrets?: readonly string[];
  readonly postRender?: PostRenderSpec | undefined;
}

/** The engine process as metrics see it. */
export interface EngineStats {
  /** The running engine's pid, undefined while none runs. */
  readonly pid: number | undefined;
  /** Calls sent and not yet answered. */
  readonly inFlight: number;
  /** Engines started so far (1 + replacements). */
  readonly starts: number;
}

export interface EngineHelmClient extends CliHelmClient {
  /** Starts the engine (if it is not running) and returns helm's version. */
  warmUp(): Promise<string>;
  stats(): EngineStats;
}

const DEFAULT_READY_TIMEOUT_MS = 30_000;
/** How long close() lets calls in flight answer before the engine is killed. */
const CLOSE_GRACE_MS = 5000;

export function createEngineHelmClient(opts: EngineHelmClientOptions): EngineHelmClient {
  return new EngineHelm(opts);
}

class EngineHelm implements EngineHelmClient {
  private engine: Promise<HelmEngineProcess> | undefined;
  /** The engine that said ready last (for stats, without awaiting). */
  private current: HelmEngineProcess | undefined;
  private starts = 0;
  private lastPid: number | undefined;
  /** Engines this client killed on purpose: their exit is not a death. */
  private readonly killed = new WeakSet<HelmEngineProcess>();
  private closed = false;
  private kubeCache: Promise<string> | undefined;

  constructor(private readonly opts: EngineHelmClientOptions) {}

  async warmUp(): Promise<string> {
    return (await this.running()).helmVersion;
  }

  stats(): EngineStats {
    const e = this.current;
    return { pid: e?.alive === true ? e.pid : undefined, inFlight: e?.alive === true ? e.inFlight : 0, starts: this.starts };
  }

  async version(): Promise<string> {
    return await this.warmUp();
  }

  async close(): Promise<void> {
    this.closed = true;
    const engine = await this.engine?.catch(() => undefined);
    this.engine = undefined;
    await engine?.close(CLOSE_GRACE_MS);
    const cache = await this.kubeCache?.catch(() => undefined);
    if (cache !== undefined) await rm(cache, { recursive: true, force: true });
  }

  async upgradeInstall(req: UpgradeInstallRequest): Promise<Release> {
    validate(req);
    validateChart(req.chart);
    releaseLabelFlags(req.releaseLabels); // throws on a label helm or the API server would refuse
    if (req.historyMax !== undefined && (!Number.isInteger(req.historyMax) || req.historyMax < 0)) {
      throw new RangeError(`historyMax must be a non-negative integer, got ${String(req.historyMax)}`);
    }
    return await timedCall(scope('upgrade', req, req.timeoutMs), this.opts.log, async (remaining) => {
      const answer = await this.run('upgrade', req, remaining, {
        op: 'upgrade',
        chart: req.chart,
        values: JSON.stringify(req.values),
        historyMax: req.historyMax,
        description: req.description,
        labels: req.releaseLabels,
        force: req.force,
        disableHooks: req.disableHooks,
        postRender: req.postRender !== undefined,
      }, { secrets: stringLeaves(req.values), postRender: req.postRender });
      return releaseOf(answer, 'upgrade');
    });
  }

  async uninstall(req: UninstallRequest): Promise<'uninstalled' | 'not-found'> {
    validate(req);
    return await timedCall(scope('uninstall', req, req.timeoutMs), this.opts.log, async (remaining) => {
      const found = await whenFound(this.run('uninstall', req, remaining, { op: 'uninstall', wait: req.wait, disableHooks: req.disableHooks, description: req.description }));
      return found === undefined ? 'not-found' : 'uninstalled';
    });
  }

  async rollback(req: RollbackRequest): Promise<void> {
    validate(req);
    if (req.revision !== undefined && (!Number.isInteger(req.revision) || req.revision < 1)) {
      throw new RangeError(`rollback revision must be a positive integer, got ${String(req.revision)}`);
    }
    await timedCall(scope('rollback', req, req.timeoutMs), this.opts.log, async (remaining) => {
      await this.run('rollback', req, remaining, { op: 'rollback', revision: req.revision, force: req.force, disableHooks: req.disableHooks });
    });
  }

  async status(req: StatusRequest): Promise<Release | undefined> {
    validate(req);
    return await timedCall(scope('status', req, req.timeoutMs), this.opts.log, async (remaining) => {
      const answer = await whenFound(this.run('status', req, remaining, { op: 'status' }));
      return answer === undefined ? undefined : releaseOf(answer, 'status');
    });
  }

  async history(req: StatusRequest): Promise<readonly Release[]> {
    validate(req);
    return await timedCall(scope('history', req, req.timeoutMs), this.opts.log, async (remaining) => {
      const answer = await whenFound(this.run('history', req, remaining, { op: 'history' }));
      if (answer === undefined) return [];
      if (!('releases' in answer)) throw new HelmError('failed', 'the helm engine answered history without revisions', 'history');
      return answer.releases.map(toRelease).sort((a, b) => a.revision - b.revision);
    });
  }

  async template(req: TemplateRequest): Promise<string> {
    return await this.opts.template(req);
  }

  /**
   * One engine call, confined in the engine (`confine`) or through its own gate session, bounded
   * by what is left of the budget.
   */
  private async run(
    action: string,
    req: ReleaseRequestBase,
    remaining: () => number,
    fields: EngineFields,
    o: CallOptions = {},
  ): Promise<EngineAnswer> {
    if (req.signal?.aborted === true || this.closed) throw new HelmCallsStopped(`helm ${action} not started: stopping`);
    const owner = req.owner;
    if (owner === undefined || owner.uid === '') {
      // Fail closed: the engine never runs helm for nobody in particular.
      throw new TypeError(`helm calls of release ${req.namespace}/${req.release} need the owner they act for (the CR's uid and confinement)`);
    }
    const confine = this.opts.confine;
    if (confine !== undefined) {
      const c = owner.confinement;
      const connection: Connection = {
        confine: { namespace: c.namespace, allowClusterScoped: c.allowClusterScoped, allowCrossNamespace: c.allowCrossNamespace, recordKey: confine.recordKey(owner.uid).toString('base64') },
        // The engine's own connection: identity is asked of it (as --kube-as-user).
        impersonate: req.impersonate,
        kubeCacheDir: await this.cacheDir(),
      };
      return await this.callEngine(action, req, remaining, fields, o, connection, () => []);
    }
    const call: GatedCall = { release: req.release, namespace: req.namespace, owner, impersonate: req.impersonate, action };
    return await withSession(this.opts.gate, call, this.opts.tempDir, async (kubeconfig, session) =>
      // Through the gate identity is the session's (the layer impersonates): helm is not asked to.
      await this.callEngine(action, req, remaining, fields, o, { kubeconfig, kubeCacheDir: session.cacheDir }, () => session.refusals()),
    );
  }

  /** Sends one call and reads its answer: refusals (the gate's, or the engine's own) explain failures first. */
  private async callEngine(
    action: string,
    req: ReleaseRequestBase,
    remaining: () => number,
    fields: EngineFields,
    o: CallOptions,
    connection: Connection,
    gateRefusals: () => readonly string[],
  ): Promise<EngineAnswer> {
    let engine: HelmEngineProcess;
    try {
      engine = await this.running();
    } catch (err) {
      if (err instanceof HelmCallsStopped) throw err;
      throw new HelmError('failed', `helm ${action}: the helm engine could not be started: ${err instanceof Error ? err.message : String(err)}`, action, { cause: err });
    }
    let refusal: RenderRefusal | undefined;
    const spec = o.postRender;
    const postRender: PostRenderHandler | undefined =
      spec === undefined
        ? undefined
        : (manifest) => {
            try {
              return { manifest: injectMetadata(manifest, spec) };
            } catch (err) {
              if (!(err instanceof PostRenderRefusal)) throw err;
              refusal = { message: err.message, unknownKinds: err.unknownKinds };
              return { error: err.message };
            }
          };
    const budget = remaining();
    const request: EngineRequest = { ...fields, ...connection, release: req.release, namespace: req.namespace, timeoutMs: helmTimeoutMs(budget) };
    let answer: EngineAnswer;
    try {
      answer = await this.bounded(engine, action, request, postRender, budget, req.signal);
    } catch (err) {
      if (gateRefusals().length > 0 && !(err instanceof HelmCallsStopped)) throw refusedError(action, gateRefusals(), err);
      throw err;
    }
    const refused = [...gateRefusals(), ...(answer.refusals ?? [])];
    if ('error' in answer) {
      const cause = answer.error.class === 'not-found' ? new HelmError('not-found', answer.error.message, action) : helmErrorFromStderr(`Error: ${answer.error.message}\n`, action, o.secrets);
      // What the layer refused explains the failure better than helm's words for it.
      if (refused.length > 0) throw refusedError(action, refused, cause);
      if (refusal !== undefined) throw new HelmError('render', refusal.message, action, { cause, unknownKinds: refusal.unknownKinds });
      throw cause;
    }
    // Helm went on past a refused request (it tolerates some failures): the call did not do what it meant.
    if (refused.length > 0) throw refusedError(action, refused);
    return answer;
  }

  /** client-go's discovery cache of the engine's confined calls: one directory per client, removed at close. */
  private cacheDir(): Promise<string> {
    this.kubeCache ??= makeProcessDir(this.opts.tempDir ?? tmpdir(), 'chartpilot-kubecache-');
    return this.kubeCache;
  }

  /** The call with its deadline and the caller's signal, as warm-pool.ts bounds a worker's call. */
  private async bounded(
    engine: HelmEngineProcess,
    action: string,
    request: EngineRequest,
    postRender: PostRenderHandler | undefined,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<EngineAnswer> {
    let id: number | undefined;
    // Set by the timers and the signal while the call is awaited.
    const ended = { timedOut: false, aborted: false };
    let graceTimer: NodeJS.Timeout | undefined;
    const stop = (): void => {
      if (id !== undefined) engine.cancel(id);
      graceTimer ??= setTimeout(() => {
        this.killed.add(engine);
        engine.kill();
      }, this.opts.killGraceMs ?? KILL_GRACE_MS);
    };
    const timer = setTimeout(() => {
      ended.timedOut = true;
      stop();
    }, timeoutMs);
    const onAbort = (): void => {
      ended.aborted = true;
      stop();
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      // Aborted while the engine was starting: a listener added now would never hear it.
      if (signal?.aborted === true) throw new HelmCallInterrupted(`helm ${action} was stopped before the engine got it: the operator is stopping`);
      const answer = await engine.call(request, postRender, (i) => {
        id = i;
      });
      if (ended.aborted) throw new HelmCallInterrupted(`helm ${action} was stopped (its context was cancelled): the operator is stopping`);
      if (ended.timedOut) throw new HelmKilledError(action, timeoutMs);
      return answer;
    } catch (err) {
      if (!(err instanceof WorkerGone)) throw err;
      if (ended.aborted) throw new HelmCallInterrupted(`helm ${action} was stopped (the helm engine was killed): the operator is stopping`);
      if (ended.timedOut) throw new HelmKilledError(action, timeoutMs);
      throw new HelmProcessDied(action, `helm ${action}: the helm engine (${this.opts.bin}) ended during the call (${describeExit(err.exit)}); a new one replaces it`);
    } finally {
      clearTimeout(timer);
      clearTimeout(graceTimer);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /** The running engine, started (again) when there is none or it has ended. */
  private running(): Promise<HelmEngineProcess> {
    if (this.closed) return Promise.reject(new HelmCallsStopped('the helm engine is closed: the operator is stopping'));
    const current = this.engine;
    if (current === undefined) return this.start();
    // Whoever finds it ended first starts the next one; the others wait for that.
    return current.then((e) => (e.alive ? e : this.engine === current ? this.start() : this.running()));
  }

  private start(): Promise<HelmEngineProcess> {
    const started = HelmEngineProcess.start({ bin: this.opts.bin, env: this.opts.env ?? process.env, readyTimeoutMs: this.opts.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS });
    this.engine = started;
    started.then(
      (e) => {
        this.current = e;
        this.starts++;
        this.report({ event: 'started', pid: e.pid, helmVersion: e.helmVersion, ...(this.lastPid === undefined ? {} : { replaces: this.lastPid }) });
        this.lastPid = e.pid;
        void e.exited.then((exit) => {
          const why = this.closed ? 'closed' : this.killed.has(e) ? 'killed' : 'died';
          this.report({ event: 'exited', pid: e.pid, how: describeExit(exit), why });
        });
      },
      (err: unknown) => {
        if (this.engine === started) this.engine = undefined; // the next call tries again
        this.report({ event: 'start-failed', error: err instanceof Error ? err.message : String(err) });
      },
    );
    return started;
  }

  private report(e: EngineEvent): void {
    try {
      this.opts.onEngine?.(e);
    } catch {
      // A broken log hook must not break helm calls.
    }
  }
}

function validate(req: ReleaseRequestBase): void {
  validateRequest(req.release, req.namespace, req.timeoutMs);
  validateUser(req.impersonate);
}

function toRelease(r: EngineRelease): Release {
  return {
    name: r.name,
    namespace: r.namespace,
    revision: r.revision,
    status: toReleaseStatus(r.status),
    chartName: r.chartName,
    chartVersion: r.chartVersion,
    appVersion: r.appVersion,
    notes: r.notes,
    manifest: r.manifest,
    description: r.description,
    ...(r.applyMethod === '' ? {} : { applyMethod: r.applyMethod }),
  };
}

function releaseOf(answer: EngineAnswer, action: string): Release {
  if (!('release' in answer)) throw new HelmError('failed', `the helm engine answered ${action} without a release`, action);
  return toRelease(answer.release);
}
