/**
 * Values reach helm only through a private file: never argv (visible in `ps` and in our own
 * logs) and never `--set` (whose comma/dot escaping mangles strings). JSON is valid YAML, so
 * helm reads the file with `-f`.
 */
import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeProcessDir } from '../lib/process-dirs.js';

/** Prefix of the temp directories; tests look for leftovers by it. */
export const VALUES_DIR_PREFIX = 'chartpilot-values-';

/**
 * Writes `values` to `<fresh 0700 dir>/values.json` (mode 0600), runs `fn` with the path, and
 * removes the directory afterwards, whether `fn` resolved, threw or its helm was killed.
 */
export async function withValuesFile<T>(
  values: Readonly<Record<string, unknown>>,
  fn: (path: string) => Promise<T>,
  baseDir: string = tmpdir(),
): Promise<T> {
  const dir = await makeProcessDir(baseDir, VALUES_DIR_PREFIX);
  try {
    const file = join(dir, 'values.json');
    // 'wx': the name is fresh in a directory only we can write; refuse to follow anything else.
    await writeFile(file, JSON.stringify(values), { mode: 0o600, flag: 'wx' });
    return await fn(file);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
