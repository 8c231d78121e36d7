/**
 * The private input directory of one ansible-runner run, laid out as ansible-runner reads it
 * (env/extravars, env/cmdline, inventory/hosts, project/) plus the run's kubeconfig. The extra
 * vars hold the CR's spec and the kubeconfig the run's proxy credentials, so the directory is
 * 0700 in a 0700 base, its files 0600, and it is removed when the run ends. The artifacts
 * (ansible-runner's record of a run: its events and output) live elsewhere, per CR, and are kept
 * for the newest `maxRunnerArtifacts` runs as ansible-operator keeps them.
 */
import { randomBytes } from 'node:crypto';
import { chmod, lstat, mkdir, mkdtemp, readdir, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface InputDirSpec {
  readonly extraVars: Readonly<Record<string, unknown>>;
  /** The kubeconfig's YAML text. */
  readonly kubeconfig: string;
  /** The venv's interpreter: Ansible's interpreter discovery would pick the system's Python. */
  readonly python: string;
  /** `--ansible-args`, already split; written to env/cmdline, which ansible-runner appends to ansible-playbook. */
  readonly extraArgs: readonly string[];
}

export interface InputDir {
  readonly dir: string;
  readonly kubeconfigPath: string;
  /** Removes the directory and everything in it; never throws. */
  readonly remove: () => Promise<void>;
}

/** Where run directories go by default: a per-user directory in $TMPDIR. */
export function defaultRunBase(): string {
  const uid = typeof process.getuid === 'function' ? String(process.getuid()) : 'user';
  return join(tmpdir(), `chartpilot-ansible-${uid}`);
}

export async function writeInputDir(spec: InputDirSpec, base: string = defaultRunBase()): Promise<InputDir> {
  await mkdir(base, { recursive: true, mode: 0o700 });
  // A base that already existed (another user's, or made by hand) must not be readable by others.
  const b = await lstat(base);
  if (!b.isDirectory()) throw new Error(`${base} is not a directory: remove it or set TMPDIR to a writable directory`);
  // One made by another user could be read or swapped by them.
  if (typeof process.getuid === 'function' && b.uid !== process.getuid()) {
    throw new Error(`${base} belongs to another user (uid ${String(b.uid)}): remove it or set TMPDIR to a directory of this user`);
  }
  if ((b.mode & 0o077) !== 0) await chmod(base, 0o700);
  const dir = await mkdtemp(join(base, 'run-'));
  const remove = async (): Promise<void> => {
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  };
  try {
    // tmp: the run's TMPDIR (runEnv), which must exist or Python falls back to /tmp.
    for (const sub of ['env', 'inventory', 'project', 'tmp']) await mkdir(join(dir, sub), { mode: 0o700 });
    const file = (rel: string, content: string): Promise<void> => writeFile(join(dir, rel), content, { mode: 0o600, flag: 'wx' });
    await file('env/extravars', JSON.stringify(spec.extraVars));
    if (spec.extraArgs.length > 0) await file('env/cmdline', spec.extraArgs.map(shellQuote).join(' '));
    await file('inventory/hosts', `localhost ansible_connection=local ansible_python_interpreter=${inventoryValue(spec.python)}\n`);
    await file('kubeconfig', spec.kubeconfig);
    return { dir, kubeconfigPath: join(dir, 'kubeconfig'), remove };
  } catch (err) {
    await remove();
    throw err;
  }
}

/** POSIX shell quoting, which ansible-runner's shlex.split of env/cmdline undoes. */
export function shellQuote(arg: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/u.test(arg) ? arg : `'${arg.replace(/'/gu, `'"'"'`)}'`;
}

function inventoryValue(v: string): string {
  // INI inventory values are shlex-split by Ansible: quote a path with spaces.
  return /\s/u.test(v) ? `"${v}"` : v;
}

/** A run's ident: sortable by time (the artifacts directory's name), unique among concurrent runs. */
export function newIdent(now: Date = new Date()): string {
  return `${now.toISOString().replace(/[-:]/gu, '').replace(/\.(\d+)Z$/u, '$1Z')}-${randomBytes(3).toString('hex')}`;
}

/** Creates a CR's artifacts directory (0700: runs' events and output show its spec values). */
export async function ensureArtifactsDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
}

/**
 * Keeps the newest `keep` runs' artifacts in `dir` (by modification time, then name) and points
 * `latest` at `current`, as ansible-operator does; `keep` ≤ 0 keeps all (ansible-runner's meaning
 * of 0, which the max-runner-artifacts annotation can ask for).
 */
export async function rotateArtifacts(dir: string, keep: number, current?: string): Promise<void> {
  if (current !== undefined) {
    const latest = join(dir, 'latest');
    await rm(latest, { force: true });
    await symlink(current, latest).catch(() => undefined);
  }
  if (keep <= 0) return;
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  const runs = await Promise.all(
    entries.filter((e) => e.isDirectory()).map(async (e) => ({ name: e.name, mtime: (await stat(join(dir, e.name)).catch(() => undefined))?.mtimeMs ?? 0 })),
  );
  // Newest first; the current run is kept whatever its time says (a clock may have stepped back).
  const rank = (r: { name: string; mtime: number }): number => (r.name === current ? Infinity : r.mtime);
  runs.sort((a, b) => rank(b) - rank(a) || (a.name < b.name ? 1 : a.name > b.name ? -1 : 0));
  for (const old of runs.slice(keep)) await rm(join(dir, old.name), { recursive: true, force: true });
}
