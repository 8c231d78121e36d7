/**
 * HelmClient backed by the helm binary (helm 4 is the target; helm 3 gets its own spelling of
 * the few flags that differ). One helm process per step, argument arrays only (never a shell),
 * values only through a private file, every call bounded by its timeout.
 */
import { randomBytes } from 'node:crypto';
import { delimiter } from 'node:path';

import { stringLeaves } from './errors.js';
import { HelmKilledError, runHelm } from './exec.js';
import { parseHistory, parseRelease, parseReleaseTemplate, releaseTemplate } from './parse.js';
import { installPostRenderPlugin, POSTRENDER_PLUGIN_NAME, type InstalledPlugin, type PreparedRender } from './postrender/plugin.js';
import {
  HelmError,
  type HelmClient,
  type HelmErrorKind,
  type Release,
  type PostRenderSpec,
  type RollbackRequest,
  type TemplateRequest,
  type UninstallRequest,
  type UpgradeInstallRequest,
} from './types.js';
import { withValuesFile } from './values-file.js';

export type HelmAction = 'upgrade' | 'uninstall' | 'rollback' | 'status' | 'history' | 'template';

/** One finished client call, for metrics and logs (never carries values). */
export interface HelmCallEvent {
  readonly action: HelmAction;
  readonly release: string;
  readonly namespace: string;
  readonly durationMs: number;
  readonly outcome: 'success' | 'error';
  readonly errorKind?: HelmErrorKind | undefined;
}

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
}

export interface CliHelmClient extends HelmClient {
  /** helm's version string, e.g. "v4.1.4" (asked once, then remembered). */
  version(timeoutMs?: number): Promise<string>;
  /** Removes the post-render plugin directory if one was written; the client stays usable. */
  close(): Promise<void>;
}

/**
 * helm's own `--timeout` for a call with `budgetMs` left: a little below our kill deadline, so
 * that when a hook hangs helm gives up by itself and records the release as failed. Our kill
 * (SIGTERM, which helm 4 also turns into a failed release, then SIGKILL, which leaves a
 * pending-* lock) is the backstop.
 */
export function helmTimeoutMs(budgetMs: number): number {
  return Math.max(1, budgetMs - Math.min(10_000, Math.floor(budgetMs / 5)));
}

/** The flags that differ between helm majors. */
export interface Dialect {
  readonly major: 3 | 4;
  /**
   * Helm 4 applies server-side by default and refuses `--force-replace` together with it
   * ("cannot use server-side apply and force replace together", recorded as a failed revision),
   * and refuses `--force-conflicts` on a release that used client-side apply. Forcing
   * server-side apply and taking over conflicting fields works for both kinds of release and is
   * the closest to helm 3's `--force` (overwrite whatever others changed).
   */
  readonly force: readonly string[];
  /**
   * Flags for install/upgrade that skip helm's client-side OpenAPI validation. Helm 4 fetches and
   * parses the API server's whole OpenAPI document in every process for it: 0.13 of the 0.20 CPU
   * seconds of an install of the sample chart, plus the API server's work serving it. It adds no
   * check there: with server-side apply the API server rejects unknown fields and wrong types
   * either way, and with client-side apply helm 4.1 let an unknown field through either way.
   * Helm 3 does reject unknown fields client-side, so it keeps its validation.
   */
  readonly install: readonly string[];
}

export function dialectFor(version: string): Dialect {
  const m = /^v?(\d+)\./.exec(version.trim());
  const major = Number(m?.[1] ?? NaN);
  if (major === 3) return { major: 3, force: ['--force'], install: [] };
  if (major >= 4) return { major: 4, force: ['--server-side=true', '--force-conflicts'], install: ['--disable-openapi-validation'] };
  throw new HelmError('failed', `unsupported helm version ${JSON.stringify(version.trim())}: chartpilot needs helm 3 or 4`, 'version');
}

const VERSION_TIMEOUT_MS = 30_000;

export function createHelmClient(opts: CliHelmClientOptions): CliHelmClient {
  validateOptions(opts);
  const baseEnv: Record<string, string> = { ...opts.env };
  if (opts.kubeconfig !== undefined) baseEnv['KUBECONFIG'] = opts.kubeconfig;

  let versionPromise: Promise<string> | undefined;
  let pluginPromise: Promise<InstalledPlugin> | undefined;

  const emit = (event: HelmCallEvent): void => {
    try {
      opts.log?.(event);
    } catch {
      // A broken metrics hook must not turn a helm result into a failure.
    }
  };

  /**
   * Runs `fn` as one logged call. `remaining()` is what is left of the call's budget: a call may
   * run several helm processes (version probe, the action, get manifest) and all share it.
   */
  async function call<T>(
    action: HelmAction,
    release: string,
    namespace: string,
    budgetMs: number,
    fn: (remaining: () => number) => Promise<T>,
  ): Promise<T> {
    const started = performance.now();
    const remaining = (): number => Math.max(1, Math.round(started + budgetMs - performance.now()));
    const finish = (outcome: 'success' | 'error', errorKind?: HelmErrorKind): void => {
      const durationMs = Math.round(performance.now() - started);
      emit({ action, release, namespace, durationMs, outcome, ...(errorKind === undefined ? {} : { errorKind }) });
    };
    try {
      const result = await fn(remaining);
      finish('success');
      return result;
    } catch (err) {
      finish('error', err instanceof HelmError ? err.kind : 'failed');
      // Our kill was given what was left of the budget; the caller wants to hear the budget.
      if (err instanceof HelmKilledError) throw new HelmKilledError(action, budgetMs);
      throw err;
    }
  }

  const run = (args: string[], action: string, timeoutMs: number, env: Record<string, string> = baseEnv, secrets?: readonly string[]) =>
    runHelm(args, { helmBin: opts.helmBin, env, timeoutMs, action, secrets, killGraceMs: opts.killGraceMs });

  async function version(timeoutMs = VERSION_TIMEOUT_MS): Promise<string> {
    versionPromise ??= run(['version', '--template={{.Version}}'], 'version', timeoutMs).then((r) => r.stdout.trim());
    try {
      return await versionPromise;
    } catch (err) {
      versionPromise = undefined; // let the next call try again
      throw err;
    }
  }

  async function plugin(): Promise<InstalledPlugin> {
    pluginPromise ??= installPostRenderPlugin({ nodeBin: opts.nodeBin, curlBin: opts.curlBin, baseDir: opts.tempDir });
    try {
      return await pluginPromise;
    } catch (err) {
      pluginPromise = undefined;
      throw err;
    }
  }

  /** Flags and environment that make helm run our post-renderer with `spec`, and its refusal if any. */
  async function postRenderSetup(spec: PostRenderSpec, d: Dialect, errorFile: string): Promise<{ flags: string[]; env: Record<string, string>; render: PreparedRender }> {
    const p = await plugin();
    const userPlugins = baseEnv['HELM_PLUGINS'] ?? process.env['HELM_PLUGINS'] ?? '';
    const render = p.prepare(spec, errorFile);
    return {
      flags: [
        // Helm 4 names a postrenderer/v1 plugin; helm 3 runs an executable.
        `--post-renderer=${d.major >= 4 ? POSTRENDER_PLUGIN_NAME : p.wrapper}`,
        `--post-renderer-args=${render.arg}`,
      ],
      env: {
        ...p.env,
        // Ours first; helm splits HELM_PLUGINS like PATH, so the user's plugins stay visible.
        HELM_PLUGINS: userPlugins === '' ? p.pluginsDir : `${p.pluginsDir}${delimiter}${userPlugins}`,
      },
      render,
    };
  }

  async function getManifest(release: string, namespace: string, revision: number, timeoutMs: number): Promise<string> {
    const args = ['get', 'manifest', `--namespace=${namespace}`, `--revision=${String(revision)}`, '--', release];
    return (await run(args, 'get manifest', timeoutMs)).stdout;
  }

  return {
    version,

    async close(): Promise<void> {
      const p = pluginPromise;
      pluginPromise = undefined;
      if (p !== undefined) await (await p.catch(() => undefined))?.remove();
    },

    async upgradeInstall(req: UpgradeInstallRequest): Promise<Release> {
      validateRequest(req.release, req.namespace, req.timeoutMs);
      validateChart(req.chart);
      const labelFlags = releaseLabelFlags(req.releaseLabels);
      if (req.historyMax !== undefined && (!Number.isInteger(req.historyMax) || req.historyMax < 0)) {
        throw new RangeError(`historyMax must be a non-negative integer, got ${String(req.historyMax)}`);
      }
      return await call('upgrade', req.release, req.namespace, req.timeoutMs, async (remaining) => {
        const d = dialectFor(await version(remaining()));
        // No --wait: helm 4's default strategy (hookOnly) waits for hooks only; workload
        // readiness is the operator's job. No --atomic/--rollback-on-failure either: recovery
        // from a failed upgrade is the reconciler's decision.
        const flags = ['--install', `--namespace=${req.namespace}`, '--output=json', ...d.install, ...labelFlags];
        if (req.historyMax !== undefined) flags.push(`--history-max=${String(req.historyMax)}`);
        if (req.description !== undefined) flags.push(`--description=${req.description}`);
        if (req.force === true) flags.push(...d.force);
        if (req.disableHooks === true) flags.push('--no-hooks');
        const secrets = stringLeaves(req.values);
        const out = await withValuesFile(
          req.values,
          async (file) => {
            let env = baseEnv;
            const runFlags = [...flags];
            let render: PreparedRender | undefined;
            if (req.postRender !== undefined) {
              // A refusal file (script transport) sits beside the values file, in its private directory.
              const pr = await postRenderSetup(req.postRender, d, `${file}.refusal`);
              runFlags.push(...pr.flags);
              env = { ...baseEnv, ...pr.env };
              render = pr.render;
            }
            const args = ['upgrade', ...runFlags, `--timeout=${String(helmTimeoutMs(remaining()))}ms`, `--values=${file}`, '--', req.release, req.chart];
            try {
              return await run(args, 'upgrade', remaining(), env, secrets);
            } catch (err) {
              const refusal = await render?.refusal();
              if (refusal !== undefined) throw new HelmError('render', refusal, 'upgrade', { cause: err });
              throw err;
            } finally {
              render?.done();
            }
          },
          opts.tempDir,
        );
        const release = parseRelease(out.stdout, 'upgrade');
        // helm 4.1 prints the manifest in the release JSON (verified), unless the chart renders
        // nothing; fetching it again then is harmless and keeps older helms covered.
        if (release.manifest !== '') return release;
        return { ...release, manifest: await getManifest(req.release, req.namespace, release.revision, remaining()) };
      });
    },

    async uninstall(req: UninstallRequest): Promise<'uninstalled' | 'not-found'> {
      validateRequest(req.release, req.namespace, req.timeoutMs);
      return await call('uninstall', req.release, req.namespace, req.timeoutMs, async (remaining) => {
        const flags = [`--namespace=${req.namespace}`, `--timeout=${String(helmTimeoutMs(remaining()))}ms`];
        if (req.wait === true) flags.push('--wait'); // helm 4: the watcher strategy; helm 3: a boolean
        if (req.disableHooks === true) flags.push('--no-hooks');
        if (req.description !== undefined) flags.push(`--description=${req.description}`);
        try {
          await run(['uninstall', ...flags, '--', req.release], 'uninstall', remaining());
          return 'uninstalled';
        } catch (err) {
          if (err instanceof HelmError && err.kind === 'not-found') return 'not-found';
          throw err;
        }
      });
    },

    async rollback(req: RollbackRequest): Promise<void> {
      validateRequest(req.release, req.namespace, req.timeoutMs);
      if (req.revision !== undefined && (!Number.isInteger(req.revision) || req.revision < 1)) {
        throw new RangeError(`rollback revision must be a positive integer, got ${String(req.revision)}`);
      }
      await call('rollback', req.release, req.namespace, req.timeoutMs, async (remaining) => {
        const d = dialectFor(await version(remaining()));
        // `helm rollback` has no --description: helm records "Rollback to N" itself.
        const flags = [`--namespace=${req.namespace}`];
        if (req.force === true) flags.push(...d.force);
        if (req.disableHooks === true) flags.push('--no-hooks');
        flags.push(`--timeout=${String(helmTimeoutMs(remaining()))}ms`);
        // Without a revision helm rolls back to the one before the current.
        const positional = req.revision === undefined ? [req.release] : [req.release, String(req.revision)];
        await run(['rollback', ...flags, '--', ...positional], 'rollback', remaining());
      });
    },

    async status(release: string, namespace: string, timeoutMs: number): Promise<Release | undefined> {
      validateRequest(release, namespace, timeoutMs);
      return await call('status', release, namespace, timeoutMs, async (remaining) => {
        // Fresh per call, so no chart's notes or manifest can contain the field separator.
        const boundary = `@@chartpilot-${randomBytes(12).toString('hex')}@@`;
        try {
          const args = ['get', 'all', `--namespace=${namespace}`, `--template=${releaseTemplate(boundary)}`, '--', release];
          const out = await run(args, 'status', remaining());
          return parseReleaseTemplate(out.stdout, boundary);
        } catch (err) {
          if (err instanceof HelmError && err.kind === 'not-found') return undefined;
          throw err;
        }
      });
    },

    async history(release: string, namespace: string, timeoutMs: number): Promise<readonly Release[]> {
      validateRequest(release, namespace, timeoutMs);
      return await call('history', release, namespace, timeoutMs, async (remaining) => {
        try {
          // --max: helm's default (256) would silently drop the oldest revisions.
          const args = ['history', `--namespace=${namespace}`, '--output=json', `--max=${String(2 ** 31 - 1)}`, '--', release];
          const out = await run(args, 'history', remaining());
          return parseHistory(out.stdout, release, namespace);
        } catch (err) {
          if (err instanceof HelmError && err.kind === 'not-found') return [];
          throw err;
        }
      });
    },

    async template(req: TemplateRequest): Promise<string> {
      validateRequest(req.release, req.namespace, req.timeoutMs);
      validateChart(req.chart);
      return await call('template', req.release, req.namespace, req.timeoutMs, async (remaining) => {
        const secrets = stringLeaves(req.values);
        const out = await withValuesFile(
          req.values,
          (file) => run(['template', `--namespace=${req.namespace}`, `--values=${file}`, '--', req.release, req.chart], 'template', remaining(), baseEnv, secrets),
          opts.tempDir,
        );
        return out.stdout;
      });
    },
  };
}

/** Kubernetes label syntax; helm stores these on the release Secret, whose API would reject others. */
const LABEL_KEY = /^(?:[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?\/)?[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;
/** Helm refuses these ("user supplied labels contains system reserved label name"). */
const RESERVED_RELEASE_LABELS = new Set(['name', 'owner', 'status', 'version', 'createdAt', 'modifiedAt']);

/**
 * One `--labels=k=v` per label: helm's flag is a stringToString that would split a joined list
 * on commas; single pairs are taken whole. Helm merges them with the previous revision's labels.
 */
export function releaseLabelFlags(labels: Readonly<Record<string, string>> | undefined): string[] {
  const flags: string[] = [];
  for (const [k, v] of Object.entries(labels ?? {})) {
    if (!LABEL_KEY.test(k) || RESERVED_RELEASE_LABELS.has(k)) throw new TypeError(`invalid release label key ${JSON.stringify(k)}`);
    if (!LABEL_VALUE.test(v)) throw new TypeError(`invalid value for release label ${k}`);
    flags.push(`--labels=${k}=${v}`);
  }
  return flags;
}

function validateRequest(release: string, namespace: string, timeoutMs: number): void {
  // Empty strings would shift helm's positional arguments; everything else helm validates
  // itself ("release name is invalid"), and `--` keeps a leading '-' from reading as a flag.
  if (release === '') throw new TypeError('release name must not be empty');
  if (namespace === '') throw new TypeError('namespace must not be empty');
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) throw new RangeError(`timeoutMs must be a positive integer, got ${String(timeoutMs)}`);
}

function validateChart(chart: string): void {
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
