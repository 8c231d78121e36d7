/**
 * The helm command line of each action, built from a request: argument arrays only (never a
 * shell), `--` before positionals so a leading '-' cannot read as a flag. Pure, so what is passed
 * how is decided here and nowhere else.
 */
import type { Dialect } from './dialect.js';
import { releaseTemplate } from './parse.js';
import type { RollbackRequest, TemplateRequest, UninstallRequest, UpgradeInstallRequest } from './types.js';

/**
 * helm's own `--timeout` for a call with `budgetMs` left: a little below our kill deadline, so
 * that when a hook hangs helm gives up by itself and records the release as failed. Our kill
 * (SIGTERM, which helm 4 also turns into a failed release, then SIGKILL, which leaves a
 * pending-* lock) is the backstop.
 */
export function helmTimeoutMs(budgetMs: number): number {
  return Math.max(1, budgetMs - Math.min(10_000, Math.floor(budgetMs / 5)));
}

function timeoutFlag(budgetMs: number): string {
  return `--timeout=${String(helmTimeoutMs(budgetMs))}ms`;
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

/** helm's impersonation flag: the API server adds the groups of a ServiceAccount user itself. */
function asUser(user: string | undefined): string[] {
  return user === undefined ? [] : [`--kube-as-user=${user}`];
}

export const VERSION_ARGS: readonly string[] = ['version', '--template={{.Version}}'];

export interface UpgradeArgs {
  /** From `releaseLabelFlags`, checked before the call starts. */
  readonly labelFlags: readonly string[];
  /** Flags that wire in the post-renderer; [] without one. */
  readonly postRenderFlags: readonly string[];
  readonly budgetMs: number;
  readonly valuesFile: string;
}

export function upgradeArgs(req: UpgradeInstallRequest, d: Dialect, a: UpgradeArgs): string[] {
  // No --wait: helm 4's default strategy (hookOnly) waits for hooks only; workload readiness is
  // the operator's job. No --atomic/--rollback-on-failure either: recovery from a failed upgrade
  // is the reconciler's decision.
  const flags = ['--install', `--namespace=${req.namespace}`, ...asUser(req.impersonate), '--output=json', ...d.install, ...a.labelFlags];
  if (req.historyMax !== undefined) flags.push(`--history-max=${String(req.historyMax)}`);
  if (req.description !== undefined) flags.push(`--description=${req.description}`);
  if (req.force === true) flags.push(...d.force);
  if (req.disableHooks === true) flags.push('--no-hooks');
  return ['upgrade', ...flags, ...a.postRenderFlags, timeoutFlag(a.budgetMs), `--values=${a.valuesFile}`, '--', req.release, req.chart];
}

export function getManifestArgs(release: string, namespace: string, revision: number, impersonate?: string): string[] {
  return ['get', 'manifest', `--namespace=${namespace}`, ...asUser(impersonate), `--revision=${String(revision)}`, '--', release];
}

export function uninstallArgs(req: UninstallRequest, budgetMs: number): string[] {
  const flags = [`--namespace=${req.namespace}`, ...asUser(req.impersonate), timeoutFlag(budgetMs)];
  if (req.wait === true) flags.push('--wait'); // helm 4: the watcher strategy; helm 3: a boolean
  if (req.disableHooks === true) flags.push('--no-hooks');
  if (req.description !== undefined) flags.push(`--description=${req.description}`);
  return ['uninstall', ...flags, '--', req.release];
}

export function rollbackArgs(req: RollbackRequest, d: Dialect, budgetMs: number): string[] {
  // `helm rollback` has no --description: helm records "Rollback to N" itself.
  const flags = [`--namespace=${req.namespace}`, ...asUser(req.impersonate)];
  if (req.force === true) flags.push(...d.force);
  if (req.disableHooks === true) flags.push('--no-hooks');
  flags.push(timeoutFlag(budgetMs));
  // Without a revision helm rolls back to the one before the current.
  const positional = req.revision === undefined ? [req.release] : [req.release, String(req.revision)];
  return ['rollback', ...flags, '--', ...positional];
}

/** `helm get all` printing the fields of parse.ts's template, separated by `boundary`. */
export function statusArgs(release: string, namespace: string, boundary: string, impersonate?: string): string[] {
  return ['get', 'all', `--namespace=${namespace}`, ...asUser(impersonate), `--template=${releaseTemplate(boundary)}`, '--', release];
}

export function historyArgs(release: string, namespace: string, impersonate?: string): string[] {
  // --max: helm's default (256) would silently drop the oldest revisions.
  return ['history', `--namespace=${namespace}`, ...asUser(impersonate), '--output=json', `--max=${String(2 ** 31 - 1)}`, '--', release];
}

export function templateArgs(req: TemplateRequest, valuesFile: string): string[] {
  return ['template', `--namespace=${req.namespace}`, `--values=${valuesFile}`, '--', req.release, req.chart];
}
