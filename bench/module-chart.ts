/**
 * A third-party chart the bench installs, fetched from the Go module proxy (one of this machine's
 * registries) as part of its project's module zip, checked against a pinned sha256 and unpacked
 * into the cache by version, outside the repository: nothing of it is committed, and every run
 * uses byte-for-byte the same chart.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { cacheDir } from '../devcluster/paths.js';
import { moduleProxy } from './helm-operator.js';

export interface ModuleChart {
  /** Go module path, e.g. github.com/stefanprodan/podinfo. */
  readonly module: string;
  /** Module (pseudo-)version as the proxy lists it. */
  readonly version: string;
  /** sha256 of the module zip as the proxy served it when the pin was taken. */
  readonly zipSha256: string;
  /** The chart's folder inside the module. */
  readonly path: string;
}

export function moduleChartUrl(c: ModuleChart, proxy = moduleProxy()): string {
  return `${proxy}/${c.module}/@v/${c.version}.zip`;
}

/** The unpacked chart folder, fetched and checked on first use. */
export async function moduleChartDir(c: ModuleChart, log: (line: string) => void): Promise<string> {
  const base = join(cacheDir(), `chart-${c.module.split('/').join('_')}-${c.version}`);
  const dir = join(base, c.path);
  if (existsSync(join(dir, 'Chart.yaml'))) return dir;
  const url = moduleChartUrl(c);
  log(`fetching ${url}`);
  const res = await fetch(url);
  if (!res.ok) throw new Error(`GET ${url}: ${String(res.status)} ${(await res.text()).trim()}`);
  const zip = Buffer.from(await res.arrayBuffer());
  const sum = createHash('sha256').update(zip).digest('hex');
  if (sum !== c.zipSha256) throw new Error(`${url}: sha256 ${sum}, expected ${c.zipSha256}: not the module zip the bench was pinned to`);
  const work = mkdtempSync(join(tmpdir(), 'bench-chart-'));
  try {
    writeFileSync(join(work, 'module.zip'), zip);
    const prefix = `${c.module}@${c.version}`;
    execFileSync('unzip', ['-q', join(work, 'module.zip'), `${prefix}/${c.path}/*`, '-d', join(work, 'out')], { stdio: 'pipe' });
    mkdirSync(base, { recursive: true });
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(join(dir, '..'), { recursive: true });
    renameSync(join(work, 'out', prefix, c.path), dir);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return dir;
}
