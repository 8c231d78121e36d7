// Where the local control plane's pieces live. The cache formula must match provision.sh.
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The repository root: the nearest ancestor holding chartpilot's package.json. Searched rather
 * than computed, because this module runs both as devcluster/*.ts and as dist/devcluster/*.js.
 */
export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: unknown }).name === 'chartpilot') {
      return dir;
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`no chartpilot package.json above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
}

/** Version-keyed binary cache outside the repository (same formula as provision.sh; empty = unset, as in bash `:-`). */
export function cacheDir(): string {
  const xdg = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return process.env.CHARTPILOT_CACHE || join(xdg, 'chartpilot');
}

/** The directory provision.sh fills with symlinks to every binary. */
export function defaultBinDir(): string {
  return join(cacheDir(), 'bin');
}
