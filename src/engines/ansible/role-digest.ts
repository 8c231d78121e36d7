/**
 * A digest of what an Ansible kind runs, the counterpart of config/chart-digest.ts: for a role,
 * every file under its directory; for a playbook, the playbook and every file under its
 * directory (its roles/, vars files, library/ and includes live there). Editing any of them
 * changes the digest, so a CR is re-run when its role changed and not otherwise.
 *
 * Bounded: hidden entries (.git, editor files) are skipped; a symlink is followed only while it
 * stays inside the directory (one pointing out is hashed as its target's name, never read); past
 * MAX_CONTENT_BYTES files count by size and modification time instead of content; more than
 * MAX_FILES files is an error, since such a directory is not a role.
 */
import { createHash, type Hash } from 'node:crypto';
import { lstat, readdir, readFile, readlink, realpath, stat } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, sep } from 'node:path';
import type { AnsibleRunnable } from '../../config/types.js';

export const MAX_FILES = 5000;
export const MAX_CONTENT_BYTES = 64 * 1024 * 1024;

export class RoleDigestError extends Error {
  override readonly name = 'RoleDigestError';
}

interface Entry {
  /** Path relative to the root, `/`-separated. */
  readonly rel: string;
  readonly full: string;
  /** Set for a symlink that points out of the root: hashed as this text. */
  readonly linkOut?: string;
}

function isInside(root: string, p: string): boolean {
  const r = relative(root, p);
  return r !== '..' && !r.startsWith(`..${sep}`) && !isAbsolute(r);
}

async function filesUnder(rootReal: string, dir: string, out: Entry[], seen: Set<string>): Promise<void> {
  const entries = await readdir(dir, { withFileTypes: true });
  for (const e of entries) {
    if (e.name.startsWith('.')) continue;
    const full = join(dir, e.name);
    const rel = relative(rootReal, full).split(sep).join('/');
    let isDir = e.isDirectory();
    let isFile = e.isFile();
    if (e.isSymbolicLink()) {
      const target = await realpath(full).catch(() => undefined);
      if (target === undefined || !isInside(rootReal, target)) {
        out.push({ rel, full, linkOut: await readlink(full).catch(() => '') });
        continue;
      }
      const s = await stat(target);
      isDir = s.isDirectory();
      isFile = s.isFile();
      // A link back up the tree would recurse forever.
      if (isDir && seen.has(target)) continue;
      if (isDir) seen.add(target);
    }
    if (isDir) await filesUnder(rootReal, full, out, seen);
    else if (isFile) out.push({ rel, full });
    if (out.length > MAX_FILES) {
      throw new RoleDigestError(`${rootReal} holds more than ${String(MAX_FILES)} files: point the watches entry at the role's own directory (or a playbook in a directory of its own)`);
    }
  }
}

async function hashTree(hash: Hash, root: string, budget: { bytes: number }): Promise<void> {
  const rootReal = await realpath(root);
  const files: Entry[] = [];
  await filesUnder(rootReal, rootReal, files, new Set([rootReal]));
  files.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
  for (const f of files) {
    hash.update(f.rel).update('\u0000');
    if (f.linkOut !== undefined) {
      hash.update('link:').update(f.linkOut).update('\u0000');
      continue;
    }
    const s = await stat(f.full);
    if (s.size <= budget.bytes) {
      budget.bytes -= s.size;
      hash.update(await readFile(f.full)).update('\u0000');
    } else {
      hash.update(`size:${String(s.size)} mtime:${String(s.mtimeMs)}`).update('\u0000');
    }
  }
}

/**
 * sha256 (hex) of the role's or playbook's files, plus those under `extraDirs` (e.g. the
 * --ansible-roles-path directories a playbook's roles come from).
 */
export async function roleDigest(runnable: AnsibleRunnable, extraDirs: readonly string[] = []): Promise<string> {
  const hash = createHash('sha256');
  const budget = { bytes: MAX_CONTENT_BYTES };
  if (runnable.role !== undefined) {
    hash.update('role\u0000');
    await hashTree(hash, runnable.role, budget);
  } else if (runnable.playbook !== undefined) {
    const s = await lstat(runnable.playbook);
    if (!s.isFile() && !s.isSymbolicLink()) throw new RoleDigestError(`playbook ${runnable.playbook} is not a file: fix playbook in watches.yaml`);
    hash.update('playbook\u0000').update(await readFile(runnable.playbook)).update('\u0000');
    await hashTree(hash, dirname(runnable.playbook), budget);
  } else {
    throw new RoleDigestError('an Ansible entry needs exactly one of role and playbook: set one in watches.yaml');
  }
  for (const dir of extraDirs) {
    hash.update(`dir\u0000${dir}\u0000`);
    await hashTree(hash, dir, budget).catch((err: unknown) => {
      // A configured roles path that does not exist holds no roles; anything else is an error.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    });
  }
  return hash.digest('hex');
}
