/**
 * HelmClient backed by the helm binary (helm 4 is the target; helm 3 gets its own spelling of
 * the few flags that differ). One helm process per step, argument arrays only (never a shell),
 * values only through a private file, every call bounded by its timeout.
 *
 * The pieces: argv.ts builds each action's command line, dialect.ts knows the helm majors,
 * exec.ts runs helm with its deadline, parse.ts reads its output, call-log.ts times and reports
 * each call, postrender/wiring.ts points helm at our post-renderer. This file puts them in order.
 */
import { randomBytes } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeProcessDir } from '../lib/process-dirs.js';

import { HELM_CONNECTION_ENV, type ApiGate, type GatedCall, type GateSession } from './api-gate.js';

import { getManifestArgs, historyArgs, releaseLabelFlags, rollbackArgs, statusArgs, templateArgs, uninstallArgs, upgradeArgs, VERSION_ARGS } from './argv.js';
import { timedCall, type CallScope, type HelmCallEvent } from './call-log.js';
import { dialectFor, type Dialect } from './dialect.js';
import { stringLeaves } from './errors.js';
import { runHelm, type HelmRunner, type RunResult } from './exec.js';
import { parseHistory, parseRelease, parseReleaseTemplate } from './parse.js';
import type { PreparedRender } from './postrender/plugin.js';
import { PostRenderWiring } from './postrender/wiring.js';
import {
  HelmError,
  type HelmClient,
  type Release,
  type ReleaseRequestBase,
  type RollbackRequest,
  type StatusRequest,
  type TemplateRequest,
  type UninstallRequest,
  type UpgradeInstallRequest,
} from './types.js';
import { withValuesFile } from './values-file.js';

export { helmTimeoutMs, releaseLabelFlags } from './argv.js';
export type { HelmAction, HelmCallEvent } from './call-log.js';
export { dialectFor, type Dialect } from './dialect.js';

export interface CliHelmClientOptions {
  /** Path (or PATH-resolvable name) of the helm binary. */
  readonly helmBin: string;
  /** Added to (and overriding) the operator's own environment for every helm process. */
  readonly env?: Readonly<Record<string, string>> | undefined;
  /** KUBECONFIG for helm; unset → whatever `env` or the process environment says. */
  readonly kubeconfig?: string | undefined;
  /** Called once per client call (not per helm process); must not throw (errors are ignored). */
  readonly log?: ((event: HelmCallEvent) => void) | undefined;
  /** Node binary that runs the post-render script; default: the one running chartpilot. */
  readonly nodeBin?: string | undefined;
  /**
   * curl, which posts manifests to the operator's own render server (plugin.ts); default: curl on
   * PATH. null, or no curl, runs the post-render script as a Node process per call instead.
   */
  readonly curlBin?: string | null | undefined;
  /** After a timeout, how long helm gets between SIGTERM and SIGKILL; default 5 s. */
  readonly killGraceMs?: number | undefined;
  /** Where values files and the plugin directory go; default os.tmpdir() (must be writable). */
  readonly tempDir?: string | undefined;
  /** What runs each helm call; default runHelm, a process per call (a warm pool's `run` instead: warm-pool.ts). */
  readonly runner?: HelmRunner | undefined;
  /**
   * The confining API layer (src/apiproxy): every helm process then talks to the API server only
   * through a session of its own, as the request's identity, confined to its owner, and every
   * request needs an `owner`. Without it helm uses `kubeconfig`/the environment directly (tools
   * such as `generate` that do not act on a CR's release).
   */
  readonly gate?: ApiGate | undefined;
}

export interface CliHelmClient extends HelmClient {
  /** helm's version string, e.g. "v4.1.4" (asked once, then remembered). */
  version(timeoutMs?: number): Promise<string>;
  /** Removes the post-render plugin directory if one was written; the client stays usable. */
  close(): Promise<void>;
}

const VERSION_TIMEOUT_MS = 30_000;

export function createHelmClient(opts: CliHelmClientOptions): CliHelmClient {
  validateOptions(opts);
  return new CliHelm(opts);
}

class CliHelm implements CliHelmClient {
  private readonly baseEnv: Record<string, string>;
  private readonly postRender: PostRenderWiring;
  private versionPromise: Promise<string> | undefined;

  constructor(private readonly opts: CliHelmClientOptions) {
    this.baseEnv = { ...opts.env };
    if (opts.kubeconfig !== undefined) this.baseEnv['KUBECONFIG'] = opts.kubeconfig;
    this.postRender = new PostRenderWiring({ nodeBin: opts.nodeBin, curlBin: opts.curlBin, baseDir: opts.tempDir });
  }

  async version(timeoutMs = VERSION_TIMEOUT_MS): Promise<string> {
    this.versionPromise ??= this.run(VERSION_ARGS, 'version', timeoutMs).then((r) => r.stdout.trim());
    try {
      return await this.versionPromise;
    } catch (err) {
      this.versionPromise = undefined; // let the next call try again
      throw err;
    }
  }

  async close(): Promise<void> {
    await this.postRender.close();
  }

  async upgradeInstall(req: UpgradeInstallRequest): Promise<Release> {
    this.validate(req);
    validateChart(req.chart);
    const labelFlags = releaseLabelFlags(req.releaseLabels);
    if (req.historyMax !== undefined && (!Number.isInteger(req.historyMax) || req.historyMax < 0)) {
      throw new RangeError(`historyMax must be a non-negative integer, got ${String(req.historyMax)}`);
    }
    return await this.call(scope('upgrade', req, req.timeoutMs), async (remaining) => {
      const d = dialectFor(await this.version(remaining()));
      const out = await withValuesFile(req.values, (file) => this.upgradeWith(file, req, d, labelFlags, remaining), this.opts.tempDir);
      const release = parseRelease(out.stdout, 'upgrade');
      // helm 4.1 prints the manifest in the release JSON (verified), unless the chart renders
      // nothing; fetching it again then is harmless and keeps older helms covered.
      if (release.manifest !== '') return release;
      return { ...release, manifest: await this.getManifest(req, release.revision, remaining()) };
    });
  }

  async uninstall(req: UninstallRequest): Promise<'uninstalled' | 'not-found'> {
    this.validate(req);
    return await this.call(scope('uninstall', req, req.timeoutMs), async (remaining) => {
      const args = uninstallArgs(this.asSent(req), remaining());
      const found = await whenFound(this.run(args, 'uninstall', remaining(), { call: req }));
      return found === undefined ? 'not-found' : 'uninstalled';
    });
  }

  async rollback(req: RollbackRequest): Promise<void> {
    this.validate(req);
    if (req.revision !== undefined && (!Number.isInteger(req.revision) || req.revision < 1)) {
      throw new RangeError(`rollback revision must be a positive integer, got ${String(req.revision)}`);
    }
    await this.call(scope('rollback', req, req.timeoutMs), async (remaining) => {
      const d = dialectFor(await this.version(remaining()));
      await this.run(rollbackArgs(this.asSent(req), d, remaining()), 'rollback', remaining(), { call: req });
    });
  }

  async status(req: StatusRequest): Promise<Release | undefined> {
    this.validate(req);
    return await this.call(scope('status', req, req.timeoutMs), async (remaining) => {
      // Fresh per call, so no chart's notes or manifest can contain the field separator.
      const boundary = `@@chartpilot-${randomBytes(12).toString('hex')}@@`;
      const out = await whenFound(this.run(statusArgs(req.release, req.namespace, boundary, this.asSent(req).impersonate), 'status', remaining(), { call: req }));
      return out === undefined ? undefined : parseReleaseTemplate(out.stdout, boundary);
    });
  }

  async history(req: StatusRequest): Promise<readonly Release[]> {
    this.validate(req);
    return await this.call(scope('history', req, req.timeoutMs), async (remaining) => {
      const out = await whenFound(this.run(historyArgs(req.release, req.namespace, this.asSent(req).impersonate), 'history', remaining(), { call: req }));
      return out === undefined ? [] : parseHistory(out.stdout, req.release, req.namespace);
    });
  }

  async template(req: TemplateRequest): Promise<string> {
    validateRequest(req.release, req.namespace, req.timeoutMs);
    validateChart(req.chart);
    return await this.call(scope('template', req, req.timeoutMs), async (remaining) => {
      const secrets = stringLeaves(req.values);
      // No session: `helm template` renders without the cluster.
      const out = await withValuesFile(
        req.values,
        (file) => this.run(templateArgs(req, file), 'template', remaining(), { secrets }),
        this.opts.tempDir,
      );
      return out.stdout;
    });
  }

  /** `helm upgrade` with the values in `file`, through our post-renderer when the request has a spec. */
  private async upgradeWith(file: string, req: UpgradeInstallRequest, d: Dialect, labelFlags: readonly string[], remaining: () => number): Promise<RunResult> {
    const secrets = stringLeaves(req.values);
    let env = this.baseEnv;
    let postRenderFlags: readonly string[] = [];
    let render: PreparedRender | undefined;
    if (req.postRender !== undefined) {
      const helmPlugins = this.baseEnv['HELM_PLUGINS'] ?? process.env['HELM_PLUGINS'] ?? '';
      // A refusal file (script transport) sits beside the values file, in its private directory.
      const pr = await this.postRender.setup(req.postRender, d, helmPlugins, `${file}.refusal`);
      postRenderFlags = pr.flags;
      env = { ...this.baseEnv, ...pr.env };
      render = pr.render;
    }
    const args = upgradeArgs(this.asSent(req), d, { labelFlags, postRenderFlags, budgetMs: remaining(), valuesFile: file });
    try {
      return await this.run(args, 'upgrade', remaining(), { env, secrets, call: req });
    } catch (err) {
      const refusal = await render?.refusal();
      if (refusal !== undefined) throw new HelmError('render', refusal.message, 'upgrade', { cause: err, unknownKinds: refusal.unknownKinds });
      throw err;
    } finally {
      render?.done();
    }
  }

  private async getManifest(req: UpgradeInstallRequest, revision: number, timeoutMs: number): Promise<string> {
    return (await this.run(getManifestArgs(req.release, req.namespace, revision, this.asSent(req).impersonate), 'get manifest', timeoutMs, { call: req })).stdout;
  }

  private call<T>(s: CallScope, fn: (remaining: () => number) => Promise<T>): Promise<T> {
    return timedCall(s, this.opts.log, fn);
  }

  private validate(req: ReleaseRequestBase): void {
    validateRequest(req.release, req.namespace, req.timeoutMs);
    validateUser(req.impersonate);
    // Fail closed: a confined client never runs helm for nobody in particular.
    if (this.opts.gate !== undefined && (req.owner === undefined || req.owner.uid === '')) {
      throw new TypeError(`helm calls of release ${req.namespace}/${req.release} need the owner they act for (the CR's uid and confinement)`);
    }
  }

  /**
   * The request as helm's flags should say it: through the gate, identity is the session's
   * (the layer impersonates), so helm itself is not asked to.
   */
  private asSent<T extends ReleaseRequestBase>(req: T): T {
    return this.opts.gate === undefined ? req : { ...req, impersonate: undefined };
  }

  /** One helm process; through its own gate session when the client confines and `call` says for whom. */
  private async run(
    args: readonly string[],
    action: string,
    timeoutMs: number,
    o: { env?: Record<string, string>; secrets?: readonly string[]; call?: ReleaseRequestBase } = {},
  ): Promise<RunResult> {
    const runner = this.opts.runner ?? runHelm;
    const env = o.env ?? this.baseEnv;
    const options = { helmBin: this.opts.helmBin, timeoutMs, action, secrets: o.secrets, killGraceMs: this.opts.killGraceMs, signal: o.call?.signal };
    const gate = this.opts.gate;
    if (gate === undefined || o.call?.owner === undefined) return await runner(args, { ...options, env });
    const call: GatedCall = { release: o.call.release, namespace: o.call.namespace, owner: o.call.owner, impersonate: o.call.impersonate, action };
    return await withSession(gate, call, this.opts.tempDir, async (kubeconfig, session) => {
      const refusals = (): readonly string[] => session.refusals();
      try {
        const result = await runner(args, { ...options, env: { ...env, ...gatedEnv(kubeconfig, session.cacheDir) } });
        // Helm went on past a refused request (it tolerates some failures): the call did not do what it meant.
        const refused = refusals();
        if (refused.length > 0) throw refusedError(action, refused);
        return result;
      } catch (err) {
        const refused = refusals();
        if (refused.length > 0 && !(err instanceof HelmError && err.kind === 'refused')) throw refusedError(action, refused, err);
        throw err;
      }
    });
  }
}

/** The environment that points one helm process at its session's kubeconfig, and nowhere else. */
function gatedEnv(kubeconfig: string, cacheDir: string): Record<string, string> {
  const env: Record<string, string> = { KUBECONFIG: kubeconfig, KUBECACHEDIR: cacheDir };
  for (const name of HELM_CONNECTION_ENV) env[name] = '';
  return env;
}

export function refusedError(action: string, refused: readonly string[], cause?: unknown): HelmError {
  const more = refused.length > 1 ? ` (and ${String(refused.length - 1)} more refusal${refused.length > 2 ? 's' : ''})` : '';
  return new HelmError('refused', `chartpilot's API gate stopped helm ${action}: ${refused[0] ?? ''}${more}`, action, { cause });
}

/** A session for one helm process, its kubeconfig in a private 0600 file; both gone afterwards. */
export async function withSession<T>(gate: ApiGate, call: GatedCall, baseDir: string | undefined, fn: (kubeconfigPath: string, session: GateSession) => Promise<T>): Promise<T> {
  const session = gate.open(call);
  let dir: string | undefined;
  try {
    dir = await makeProcessDir(baseDir ?? tmpdir(), SESSION_DIR_PREFIX);
    const path = join(dir, 'kubeconfig');
    await writeFile(path, session.kubeconfig, { mode: 0o600, flag: 'wx' });
    return await fn(path, session);
  } finally {
    session.close();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  }
}

/** Prefix of the per-call kubeconfig directories; tests look for leftovers by it. */
export const SESSION_DIR_PREFIX = 'chartpilot-session-';

export function scope(action: CallScope['action'], at: { readonly release: string; readonly namespace: string }, budgetMs: number): CallScope {
  return { action, release: at.release, namespace: at.namespace, budgetMs };
}

/** `run`'s result, or undefined when helm said the release does not exist. */
export async function whenFound<T>(run: Promise<T>): Promise<T | undefined> {
  try {
    return await run;
  } catch (err) {
    if (err instanceof HelmError && err.kind === 'not-found') return undefined;
    throw err;
  }
}

export function validateRequest(release: string, namespace: string, timeoutMs: number): void {
  // Empty strings would shift helm's positional arguments; everything else helm validates
  // itself ("release name is invalid"), and `--` keeps a leading '-' from reading as a flag.
  if (release === '') throw new TypeError('release name must not be empty');
  if (namespace === '') throw new TypeError('namespace must not be empty');
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) throw new RangeError(`timeoutMs must be a positive integer, got ${String(timeoutMs)}`);
}

export function validateUser(user: string | undefined): void {
  // A flag value of ours (never a CR's value), but an empty one would mean "the operator" to helm.
  if (user === '') throw new TypeError('the user to impersonate must not be empty when given');
}

export function validateChart(chart: string): void {
  if (chart === '') throw new TypeError('chart must not be empty');
}

function validateOptions(opts: CliHelmClientOptions): void {
  if (typeof opts.helmBin !== 'string' || opts.helmBin === '') throw new TypeError('helmBin must be a non-empty string');
  for (const [k, v] of Object.entries(opts.env ?? {})) {
    if (typeof v !== 'string') throw new TypeError(`env.${k} must be a string`);
  }
  if (opts.kubeconfig === '') throw new TypeError('kubeconfig must not be empty when given');
  if (opts.tempDir === '') throw new TypeError('tempDir must not be empty when given');
  if (opts.killGraceMs !== undefined && (!Number.isInteger(opts.killGraceMs) || opts.killGraceMs < 0)) {
    throw new RangeError(`killGraceMs must be a non-negative integer, got ${String(opts.killGraceMs)}`);
  }
}
