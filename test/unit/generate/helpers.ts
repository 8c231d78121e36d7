/** Shared bits of the generator tests: the repository root, temp charts, a captured CLI io. */
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CommandIo } from '../../../src/generate/cli.js';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');

/** Writes `files` (path → text) under a new temp directory and returns it. */
export async function tempTree(prefix: string, files: Readonly<Record<string, string>>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `chartpilot-${prefix}-`));
  for (const [name, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, name)), { recursive: true });
    await writeFile(join(dir, name), text);
  }
  return dir;
}

export interface CapturedIo extends CommandIo {
  out(): string;
  err(): string;
}

export function captureIo(env: Record<string, string | undefined> = {}): CapturedIo {
  let out = '';
  const err: string[] = [];
  return {
    stdout: (text) => { out += text; },
    stderr: (line) => { err.push(line); },
    env,
    out: () => out,
    err: () => err.join('\n'),
  };
}
