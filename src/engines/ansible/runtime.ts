/**
 * Which Ansible runtime runs the Ansible kinds: a directory that devcluster/ansible-runtime.sh
 * builds (docs/operations/ansible-runtime.md), laid out as
 *
 *   <dir>/venv/bin/{python,ansible-runner,ansible-playbook,...}
 *   <dir>/collections/ansible_collections/{kubernetes/core,operator_sdk/util}/
 *   <dir>/runtime.json    {hash, python, ansibleCore, ansibleRunner, kubernetes, collections}; marks it complete
 *
 * Looked for, in order: CHARTPILOT_ANSIBLE_RUNTIME (a runtime directory); the image's
 * /opt/chartpilot/ansible; the project's cache (`${CHARTPILOT_CACHE:-${XDG_CACHE_HOME:-~/.cache}/chartpilot}`),
 * the `ansible-<hash>` whose hash is that of this checkout's inputs (the script prints it), or,
 * in an installed package without the script, the newest complete one. So `chartpilot run` on a
 * machine where the project provisioned its runtime finds it without any variable, as it finds
 * the project's helm (src/helm/find-helm.ts).
 */
import { constants } from 'node:fs';
import { access, readFile, readdir, stat } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { execa } from 'execa';
import { errorMessage } from '../../lib/errors.js';
import { packageRoot } from '../../lib/package-root.js';
import { chartpilotCacheDir } from '../../helm/find-helm.js';

type Env = Readonly<Record<string, string | undefined>>;

export type AnsibleRuntimeSource = 'CHARTPILOT_ANSIBLE_RUNTIME' | 'image' | 'cache';

/** runtime.json: what the runtime holds. */
export interface AnsibleRuntimeVersions {
  /** The inputs' hash (the cache directory's suffix). */
  readonly hash: string;
  readonly python: string;
  readonly ansibleCore: string;
  readonly ansibleRunner: string;
  /** The kubernetes Python client. */
  readonly kubernetes: string;
  /** Collection name → version (kubernetes.core, operator_sdk.util). */
  readonly collections: Readonly<Record<string, string>>;
}

export interface AnsibleRuntime {
  readonly dir: string;
  readonly source: AnsibleRuntimeSource;
  /** The venv's interpreter: ansible_python_interpreter of every run (discovery picks the wrong one). */
  readonly python: string;
  readonly ansibleRunner: string;
  /** The venv's bin dir: first on a run's PATH, since ansible-runner starts `ansible-playbook` from PATH. */
  readonly binDir: string;
  /** ANSIBLE_COLLECTIONS_PATH entries (kubernetes.core and operator_sdk.util live there). */
  readonly collectionsPath: readonly string[];
  readonly versions: AnsibleRuntimeVersions;
}

/** The command that installs the runtime, for error messages. */
export const INSTALL_COMMAND = 'npm run cluster:provision (or bash devcluster/ansible-runtime.sh)';
/** Where the chartpilot-ansible image has its runtime. */
export const IMAGE_RUNTIME_DIR = '/opt/chartpilot/ansible';
const SCRIPT = 'devcluster/ansible-runtime.sh';

/** No usable runtime; the message is one line naming how to get one. */
export class AnsibleRuntimeMissingError extends Error {
  override readonly name = 'AnsibleRuntimeMissingError';
}

export interface FindOptions {
  /** Where to look for devcluster/ansible-runtime.sh (default: this package's root). */
  readonly packageRoot?: string;
  /** The image's runtime directory (default /opt/chartpilot/ansible). */
  readonly imageDir?: string;
}

export async function findAnsibleRuntime(env: Env, opts: FindOptions = {}): Promise<AnsibleRuntime> {
  const fromEnv = env['CHARTPILOT_ANSIBLE_RUNTIME']?.trim() ?? '';
  if (fromEnv !== '') {
    const found = await open(fromEnv, 'CHARTPILOT_ANSIBLE_RUNTIME');
    if (typeof found === 'string') {
      throw new AnsibleRuntimeMissingError(`CHARTPILOT_ANSIBLE_RUNTIME=${fromEnv} is not an Ansible runtime (${found}): point it at a directory ${SCRIPT} built, or unset it`);
    }
    return found;
  }
  const imageDir = opts.imageDir ?? IMAGE_RUNTIME_DIR;
  const image = await open(imageDir, 'image');
  if (typeof image !== 'string') return image;

  const cache = chartpilotCacheDir(env);
  // The package's root is where devcluster/ is in a checkout (the image has none).
  const script = join(opts.packageRoot ?? packageRoot(), SCRIPT);
  if (await exists(script)) {
    const hash = await inputsHash(script, env);
    const dir = join(cache, `ansible-${hash}`);
    const found = await open(dir, 'cache');
    if (typeof found !== 'string') return found;
    throw new AnsibleRuntimeMissingError(`no Ansible runtime for this checkout in ${dir}: run ${INSTALL_COMMAND}`);
  }
  const newest = await newestComplete(cache);
  if (newest !== undefined) return newest;
  throw new AnsibleRuntimeMissingError(
    `no Ansible runtime (CHARTPILOT_ANSIBLE_RUNTIME unset, none in ${imageDir} or ${cache}): run ${INSTALL_COMMAND} in a chartpilot checkout, or use the chartpilot-ansible image`,
  );
}

/** The environment a run needs from the runtime: its venv first on PATH and its collections. */
export function runtimeEnv(runtime: AnsibleRuntime, env: Env): Record<string, string> {
  return {
    PATH: [runtime.binDir, env['PATH'] ?? ''].filter((p) => p !== '').join(delimiter),
    ANSIBLE_COLLECTIONS_PATH: runtime.collectionsPath.join(delimiter),
  };
}

async function inputsHash(script: string, env: Env): Promise<string> {
  const r = await execa('bash', [script, '--hash'], { env: { PATH: process.env['PATH'], ...env }, extendEnv: false, reject: false, stdin: 'ignore', timeout: 30_000 });
  const hash = r.stdout.trim();
  if (r.exitCode !== 0 || !/^[0-9a-f]{16}$/.test(hash)) {
    throw new AnsibleRuntimeMissingError(`bash ${script} --hash failed (${r.stderr.trim().split('\n').at(-1) ?? `exit ${String(r.exitCode)}`}): run ${INSTALL_COMMAND}`);
  }
  return hash;
}

async function newestComplete(cache: string): Promise<AnsibleRuntime | undefined> {
  let names: string[];
  try {
    names = (await readdir(cache)).filter((n) => /^ansible-[0-9a-f]{16}$/.test(n));
  } catch {
    return undefined;
  }
  const complete: { runtime: AnsibleRuntime; mtimeMs: number }[] = [];
  for (const name of names) {
    const runtime = await open(join(cache, name), 'cache');
    if (typeof runtime === 'string') continue;
    complete.push({ runtime, mtimeMs: (await stat(join(runtime.dir, 'runtime.json'))).mtimeMs });
  }
  return complete.sort((a, b) => b.mtimeMs - a.mtimeMs)[0]?.runtime;
}

/** The runtime in dir, or why it is not one. */
async function open(dir: string, source: AnsibleRuntimeSource): Promise<AnsibleRuntime | string> {
  let versions: AnsibleRuntimeVersions;
  try {
    versions = parseVersions(JSON.parse(await readFile(join(dir, 'runtime.json'), 'utf8')));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ENOTDIR' ? 'no runtime.json: missing or half built' : `runtime.json: ${errorMessage(err)}`;
  }
  const binDir = join(dir, 'venv', 'bin');
  const runtime: AnsibleRuntime = {
    dir,
    source,
    python: join(binDir, 'python'),
    ansibleRunner: join(binDir, 'ansible-runner'),
    binDir,
    collectionsPath: [join(dir, 'collections')],
    versions,
  };
  for (const bin of [runtime.python, runtime.ansibleRunner, join(binDir, 'ansible-playbook')]) {
    if (!(await executable(bin))) return `${bin} is missing or not executable`;
  }
  return runtime;
}

function parseVersions(raw: unknown): AnsibleRuntimeVersions {
  const o = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
  const str = (key: string): string => {
    const v = o[key];
    if (typeof v !== 'string' || v === '') throw new Error(`${key} is missing`);
    return v;
  };
  const collections = o['collections'];
  if (typeof collections !== 'object' || collections === null) throw new Error('collections is missing');
  return {
    hash: str('hash'),
    python: str('python'),
    ansibleCore: str('ansibleCore'),
    ansibleRunner: str('ansibleRunner'),
    kubernetes: str('kubernetes'),
    collections: Object.fromEntries(Object.entries(collections).filter((e): e is [string, string] => typeof e[1] === 'string')),
  };
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

async function executable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
