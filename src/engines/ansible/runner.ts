/**
 * One run of a role or playbook by ansible-runner, as ansible-operator runs it
 * (internal/ansible/runner/runner.go): `ansible-runner run <private dir>` with the role
 * (`--role`, `--roles-path`, `--hosts localhost`) or the playbook, an `ident` naming the run's
 * artifacts, `-v…` for the verbosity and `--ansible-args` in env/cmdline; the run's API access is
 * `K8S_AUTH_KUBECONFIG`/`KUBECONFIG`. Events are read from `--json` stdout as they come, rather
 * than from the artifacts' job_events directory: a line is complete when it is read, nothing has
 * to be polled, and the order is the run's. A run longer than `timeoutMs`, or aborted, is stopped
 * with its whole process tree (ansible-runner starts ansible-playbook in a session of its own,
 * so a process group would not reach it).
 */
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { basename, delimiter, dirname } from 'node:path';
import { execa } from 'execa';
import type { AnsibleRunnable } from '../../config/types.js';
import { errorMessage } from '../../lib/errors.js';
import { redactSecrets } from '../../lib/redact.js';
import { boundedLines, MAX_LINE_BYTES } from './bounded-lines.js';
import { EventTally, parseEventLine, type FailedTask, type RunnerEvent, type RunStats } from './events.js';
import { ensureArtifactsDir, newIdent, rotateArtifacts, writeInputDir } from './input-dir.js';
import { stopProcessTree } from './process-tree.js';
import { INSTALL_COMMAND } from './runtime.js';

export type { RunnerEvent } from './events.js';

export interface AnsibleRuntimePaths {
  readonly ansibleRunner: string;
  readonly python: string;
  readonly collectionsPath: readonly string[];
}

export interface RunRequest {
  readonly runtime: AnsibleRuntimePaths;
  /** Role dir or playbook file, absolute (config/types.ts). */
  readonly runnable: AnsibleRunnable;
  readonly extraVars: Readonly<Record<string, unknown>>;
  /** YAML text for K8S_AUTH_KUBECONFIG (the proxy's per-run kubeconfig). */
  readonly kubeconfig: string;
  /** 0-7 (--ansible-verbosity / annotation). */
  readonly verbosity: number;
  /** --ansible-args, already split. */
  readonly extraArgs: readonly string[];
  /** --ansible-roles-path. */
  readonly rolesPath: readonly string[];
  /** --ansible-collections-path (added before the runtime's). */
  readonly collectionsPath: readonly string[];
  /** Per CR: <base>/<namespace>/<name>; runs rotated to maxArtifacts. */
  readonly artifactsDir: string;
  readonly maxArtifacts: number;
  /** The run is killed (SIGTERM, then SIGKILL after 5 s) and reported 'timeout'. */
  readonly timeoutMs: number;
  /** Aborted → killed the same way, outcome 'canceled'. */
  readonly signal?: AbortSignal;
  /** Strings to redact from every message (spec values). */
  readonly secrets: readonly string[];
  /** Each event as it arrives (E2 may log task names). */
  readonly onEvent?: (e: RunnerEvent) => void;
  /** Where the private input directory is made (default: a per-user directory in $TMPDIR). */
  readonly runBase?: string;
}

export interface RunOutcome {
  readonly result: 'successful' | 'failed' | 'timeout' | 'canceled' | 'error';
  readonly stats: RunStats;
  /** Redacted. */
  readonly failedTasks: readonly FailedTask[];
  /** From operator_sdk.util.requeue_after. */
  readonly requeueAfterMs: number | undefined;
  /** A k8s_status task ran. */
  readonly statusWrittenByRole: boolean;
  /** One line for a condition/event, redacted; names the failed task(s). */
  readonly message: string;
  readonly durationMs: number;
  /** The process tree's CPU (user + system) when known. */
  readonly cpuMs?: number;
}

/** How long a stopped run has between SIGTERM and SIGKILL. */
export const KILL_GRACE_MS = 5000;
/** What is kept of ansible-runner's stderr to explain a run that failed to start. */
const MAX_STDERR = 8192;
const INSTALL_HINT = `install the Ansible runtime: ${INSTALL_COMMAND}`;
const NO_STATS: RunStats = { ok: 0, changed: 0, skipped: 0, failures: 0 };

/**
 * Runs its arguments as a child and waits for it with wait4, whose rusage holds the CPU of the
 * child and of every process it waited for (ansible-runner waits for ansible-playbook, which
 * waits for its workers): the run's CPU, which Node cannot get for a child. Signals are passed
 * on; the exit status is the child's. Builtin modules only, so it costs a bare interpreter start.
 */
const CPU_WRAPPER = `
import os, sys, signal
pid = os.fork()
if pid == 0:
    try:
        os.execv(sys.argv[1], sys.argv[1:])
    finally:
        os._exit(127)
def forward(sig, frame):
    try:
        os.kill(pid, sig)
    except OSError:
        pass
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(s, forward)
_, status, ru = os.wait4(pid, 0)
sys.stderr.write("\\nchartpilot-run-cpu-ms %d\\n" % round((ru.ru_utime + ru.ru_stime) * 1000))
sys.stderr.flush()
code = os.waitstatus_to_exitcode(status)
os._exit(code if code >= 0 else 128 - code)
`;
const CPU_LINE = /\n?chartpilot-run-cpu-ms (\d+)\n?/u;

/** How the run is named in messages: `role memcached` or `playbook site.yml`. */
export function runnableName(r: AnsibleRunnable): string {
  if (r.role !== undefined) return `role ${basename(r.role)}`;
  return `playbook ${basename(r.playbook ?? '')}`;
}

/** The arguments of `ansible-runner run` after the input directory (ansible-operator's, plus --json). */
export function runnerArgs(opts: {
  readonly inputDir: string;
  readonly ident: string;
  readonly artifactsDir: string;
  readonly runnable: AnsibleRunnable;
  readonly rolesPath: readonly string[];
  readonly verbosity: number;
  readonly skipFacts: boolean;
}): string[] {
  const args = ['run', opts.inputDir, '--json', '-i', opts.ident, '--artifact-dir', opts.artifactsDir];
  if (opts.runnable.role !== undefined) {
    // ansible-runner sets ANSIBLE_ROLES_PATH to --roles-path: the role's parent first, then the configured ones.
    const roles = [dirname(opts.runnable.role), ...opts.rolesPath].join(delimiter);
    args.push('--role', basename(opts.runnable.role), '--roles-path', roles, '--hosts', 'localhost');
    // As in ansible-operator: ansible-runner ignores ANSIBLE_GATHERING for a role run.
    if (opts.skipFacts) args.push('--role-skip-facts');
  } else {
    // The playbook runs where it is, so its relative roles/, vars files and includes resolve.
    const playbook = opts.runnable.playbook ?? '';
    args.push('--project-dir', dirname(playbook), '-p', basename(playbook));
  }
  const v = Math.min(Math.max(Math.trunc(opts.verbosity), 0), 7);
  if (v > 0) args.push(`-${'v'.repeat(v)}`);
  return args;
}

type Env = Record<string, string | undefined>;

/**
 * What of the operator's environment a run gets: the process basics, proxies and CAs, the
 * operator author's Ansible settings (`ANSIBLE_*`) and image references (`RELATED_IMAGE_*`), and
 * the names ansible-operator's roles read. Nothing else: not the operator's API access
 * (`KUBERNETES_SERVICE_*`, which kubernetes.core would use with the pod's token, `KUBECONFIG`,
 * `K8S_AUTH_*`), nor `CHARTPILOT_*`, `HELM_*` or cloud credentials.
 */
const PASSED_ENV = /^(?:PATH|HOME|USER|LOGNAME|HOSTNAME|LANG|LANGUAGE|LC_[A-Z_]+|TZ|TMPDIR|TERM|(?:HTTPS?|NO|ALL)_PROXY|(?:https?|no|all)_proxy|SSL_CERT_(?:FILE|DIR)|REQUESTS_CA_BUNDLE|WATCH_NAMESPACE|POD_NAME|POD_NAMESPACE|OPERATOR_NAME|OPERATOR_NAMESPACE|ANSIBLE_[A-Z0-9_]+|RELATED_IMAGE_[A-Za-z0-9_]+)$/u;

/** The run's environment: an allow-list of the operator's (PASSED_ENV), with the run's own API access. */
export function runEnv(base: Readonly<Env>, req: Pick<RunRequest, 'runtime' | 'collectionsPath' | 'rolesPath'>, inputDir: string, kubeconfigPath: string): Env {
  const env: Env = {};
  for (const [k, v] of Object.entries(base)) {
    if (PASSED_ENV.test(k)) env[k] = v;
  }
  const list = (...parts: (readonly string[] | string | undefined)[]): string =>
    parts.flatMap((p) => (p === undefined ? [] : typeof p === 'string' ? p.split(delimiter) : p)).filter((p) => p !== '').join(delimiter);
  // ansible-runner starts ansible-playbook from PATH: the runtime's venv first.
  env['PATH'] = list(dirname(req.runtime.ansibleRunner), base['PATH']);
  env['K8S_AUTH_KUBECONFIG'] = kubeconfigPath;
  env['KUBECONFIG'] = kubeconfigPath;
  env['ANSIBLE_COLLECTIONS_PATH'] = list(req.collectionsPath, req.runtime.collectionsPath, base['ANSIBLE_COLLECTIONS_PATH'] ?? base['ANSIBLE_COLLECTIONS_PATHS']);
  env['ANSIBLE_ROLES_PATH'] = list(req.rolesPath, base['ANSIBLE_ROLES_PATH']);
  // Ansible's temporary files (module payloads) stay in the private directory, removed with it.
  env['ANSIBLE_LOCAL_TEMP'] = base['ANSIBLE_LOCAL_TEMP'] ?? `${inputDir}/tmp`;
  env['ANSIBLE_REMOTE_TEMP'] = base['ANSIBLE_REMOTE_TEMP'] ?? `${inputDir}/tmp`;
  // So do Python's: AnsiballZ unpacks a module into tempfile.mkdtemp() and leaves it behind when the
  // run is stopped mid-task (a timeout or a deleted CR), which in $TMPDIR would pile up.
  env['TMPDIR'] = `${inputDir}/tmp`;
  env['ANSIBLE_NOCOLOR'] = '1';
  return env;
}

export async function runAnsible(req: RunRequest): Promise<RunOutcome> {
  const started = performance.now();
  const name = runnableName(req.runnable);
  const done = (result: RunOutcome['result'], message: string, rest: Partial<RunOutcome> = {}): RunOutcome => ({
    result,
    stats: NO_STATS,
    failedTasks: [],
    requeueAfterMs: undefined,
    statusWrittenByRole: false,
    message: oneLine(redactSecrets(message, req.secrets)),
    durationMs: Math.round(performance.now() - started),
    ...rest,
  });
  if (req.signal?.aborted === true) return done('canceled', `the run of ${name} was canceled before it started`);

  const problem = await checkInputs(req);
  if (problem !== undefined) return done('error', problem);

  const ident = newIdent();
  let input;
  try {
    await ensureArtifactsDir(req.artifactsDir);
    input = await writeInputDir(
      { extraVars: req.extraVars, kubeconfig: req.kubeconfig, python: req.runtime.python, extraArgs: req.extraArgs },
      req.runBase,
    );
  } catch (err) {
    return done('error', `cannot prepare the run of ${name}: ${errorMessage(err)}; check that $TMPDIR and the artifacts directory are writable`);
  }

  const tally = new EventTally();
  let lastTask = '';
  let stderr = '';
  let stopped: 'timeout' | 'canceled' | undefined;
  let stopping: Promise<void> | undefined;
  try {
    const env = runEnv(process.env, req, input.dir, input.kubeconfigPath);
    const args = runnerArgs({
      inputDir: input.dir,
      ident,
      artifactsDir: req.artifactsDir,
      runnable: req.runnable,
      rolesPath: req.rolesPath,
      verbosity: req.verbosity,
      skipFacts: env['ANSIBLE_GATHERING'] === 'explicit',
    });
    // Started through CPU_WRAPPER (in the runtime's Python), which reports the tree's CPU time.
    const child = execa(req.runtime.python, ['-I', '-S', '-c', CPU_WRAPPER, req.runtime.ansibleRunner, ...args], {
      env,
      extendEnv: false,
      stdin: 'ignore',
      buffer: false,
      reject: false,
      cleanup: true,
      cwd: input.dir,
    });
    const stop = (why: 'timeout' | 'canceled'): void => {
      if (stopped !== undefined || child.pid === undefined) return;
      stopped = why;
      stopping = stopProcessTree(child.pid, KILL_GRACE_MS);
    };
    const timer = setTimeout(() => {
      stop('timeout');
    }, Math.max(req.timeoutMs, 0));
    const onAbort = (): void => {
      stop('canceled');
    };
    req.signal?.addEventListener('abort', onAbort, { once: true });
    // Aborted while the input was written (the check above was before those awaits): the
    // listener added now would never hear it.
    if (abortedNow(req.signal)) onAbort();

    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-MAX_STDERR);
    });
    // Each line bounded: a role can print a line as long as a spec value multiplies it to.
    const stdout = boundedLines(child.stdout);
    for await (const line of stdout.lines) {
      const event = parseEventLine(line);
      if (event === undefined) {
        tally.addOutput(line);
        continue;
      }
      tally.add(event);
      const task = event.event_data?.['task'];
      if (event.event === 'playbook_on_task_start' && typeof task === 'string') lastTask = task;
      try {
        req.onEvent?.(event);
      } catch {
        // A caller's logging must not end the run.
      }
    }
    if (stdout.skipped() > 0) tally.addOutput(`${String(stdout.skipped())} line(s) of ansible-runner's output longer than ${String(MAX_LINE_BYTES)} bytes were skipped`);
    const exit = await child;
    const cpu = CPU_LINE.exec(stderr);
    const cpuMs = cpu?.[1] === undefined ? undefined : Number(cpu[1]);
    stderr = stderr.replace(CPU_LINE, '');
    clearTimeout(timer);
    req.signal?.removeEventListener('abort', onAbort);
    if (stopping !== undefined) await stopping;

    const summary = tally.summary(req.secrets);
    const common = {
      ...(cpuMs === undefined ? {} : { cpuMs }),
      stats: summary.stats,
      failedTasks: summary.failedTasks,
      requeueAfterMs: summary.requeueAfterMs,
      statusWrittenByRole: summary.statusWrittenByRole,
    };
    const during = lastTask === '' ? '' : ` (task "${lastTask}" was running)`;
    if (stopped === 'timeout') {
      return done('timeout', `${name} did not finish within ${seconds(req.timeoutMs)}${during} and was stopped; make its tasks finish sooner or raise the run timeout`, common);
    }
    if (stopped === 'canceled') return done('canceled', `the run of ${name} was canceled${during}`, common);
    if (!summary.finished) {
      const why = summary.outputError !== '' ? summary.outputError : lastLine(stderr) || `ansible-runner exited with code ${String(exit.exitCode ?? exit.signal ?? '?')}`;
      return done('error', `${name} could not run: ${why}; ${fixFor(why)}`, common);
    }
    if (summary.stats.failures > 0 || summary.failedTasks.length > 0 || exit.exitCode !== 0) {
      const tasks = summary.failedTasks.map((t) => `task "${t.task}": ${t.message}`).join('; ');
      const what = tasks !== '' ? tasks : `ansible-playbook exited with code ${String(exit.exitCode ?? '?')}${stderr.trim() === '' ? '' : `: ${lastLine(stderr)}`}`;
      return done('failed', `${name} failed: ${what}`, common);
    }
    const s = summary.stats;
    return done('successful', `${name} ran: ok=${String(s.ok)} changed=${String(s.changed)} skipped=${String(s.skipped)} failures=0`, common);
  } catch (err) {
    return done('error', `${name} could not run: ${errorMessage(err)}; check the Ansible runtime, or ${INSTALL_HINT}`);
  } finally {
    await input.remove();
    await rotateArtifacts(req.artifactsDir, req.maxArtifacts, ident).catch(() => undefined);
  }
}

async function checkInputs(req: RunRequest): Promise<string | undefined> {
  try {
    await access(req.runtime.ansibleRunner, constants.X_OK);
  } catch {
    return `ansible-runner is not at ${req.runtime.ansibleRunner} (or not executable): ${INSTALL_HINT}`;
  }
  try {
    await access(req.runtime.python, constants.X_OK);
  } catch {
    return `the Ansible runtime's Python is not at ${req.runtime.python} (or not executable): ${INSTALL_HINT}`;
  }
  const { role, playbook } = req.runnable;
  if ((role === undefined) === (playbook === undefined)) return 'an Ansible entry needs exactly one of role and playbook: set one in watches.yaml';
  const path = role ?? playbook ?? '';
  const s = await stat(path).catch(() => undefined);
  if (role !== undefined && s?.isDirectory() !== true) return `role ${role} is not a directory: fix role in watches.yaml or add the role`;
  if (playbook !== undefined && s?.isFile() !== true) return `playbook ${playbook} is not a file: fix playbook in watches.yaml or add the playbook`;
  return undefined;
}

/** The fix to name for Ansible's own error before a playbook ran. */
function fixFor(why: string): string {
  if (/couldn't resolve module\/action|No module named 'ansible_collections/u.test(why)) {
    return 'install the collection into a path of --ansible-collections-path, or fix the module name';
  }
  if (/the role '[^']*' was not found/u.test(why)) return 'add the role, or list its directory in --ansible-roles-path';
  if (/ansible-playbook|No such file or directory/u.test(why) && !/\.ya?ml/u.test(why)) return `check the Ansible runtime, or ${INSTALL_HINT}`;
  return 'fix the role or playbook (run it with ansible-playbook --syntax-check to see the error)';
}

function lastLine(s: string): string {
  return s.split('\n').map((l) => l.trim()).filter((l) => l !== '').at(-1) ?? '';
}

function oneLine(s: string): string {
  return s.replace(/\s*\n\s*/gu, ' ').trim();
}

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${String(ms / 1000)}s` : `${(ms / 1000).toFixed(1)}s`;
}

/** Read through a call so that TypeScript does not carry a check made before an await past it. */
function abortedNow(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}
