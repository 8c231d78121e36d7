/**
 * Where an Ansible entry's role or playbook is, looked for as operator-sdk's ansible-operator looks
 * (absolute path; a collection role `ns.coll.role` in the collections paths; `ANSIBLE_ROLES_PATH`;
 * `roles/<name>`), except that relative paths start at the watches file's directory first — as a
 * chart's do — and then at the working directory (ansible-operator's only base), so files written
 * for ansible-operator load unchanged.
 */
import { stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';

type Env = Readonly<Record<string, string | undefined>>;

export interface AnsibleBase {
  /** The watches file's directory. */
  readonly baseDir: string;
  /** The operator's working directory (ansible-operator resolves against it). */
  readonly cwd: string;
  readonly env: Env;
}

/** What is on disk at a path: the only side effect, so the rules are testable without a disk. */
export type PathKind = (absPath: string) => Promise<'file' | 'directory' | undefined>;

export const diskPathKind: PathKind = async (p) => {
  try {
    const s = await stat(p);
    return s.isDirectory() ? 'directory' : s.isFile() ? 'file' : undefined;
  } catch {
    return undefined;
  }
};

function pathList(value: string | undefined): string[] {
  return (value ?? '').split(':').filter((p) => p !== '');
}

function bases(base: AnsibleBase): string[] {
  return base.cwd === base.baseDir ? [base.baseDir] : [base.baseDir, base.cwd];
}

/** Every place a role named `name` may be, in the order they are tried. */
export function roleCandidates(name: string, base: AnsibleBase): string[] {
  if (isAbsolute(name)) return [name];
  const out: string[] = [];
  const fqcn = name.split('.');
  if (fqcn.length === 3 && fqcn.every((p) => p !== '')) {
    const [ns = '', coll = '', role = ''] = fqcn;
    const configured = pathList(base.env['ANSIBLE_COLLECTIONS_PATH'] ?? base.env['ANSIBLE_COLLECTIONS_PATHS']);
    const home = base.env['HOME'] ?? homedir();
    const collections = configured.length > 0 ? configured : ['/usr/share/ansible/collections', join(home, '.ansible/collections')];
    for (const c of collections) out.push(join(c, 'ansible_collections', ns, coll, 'roles', role));
  }
  for (const r of pathList(base.env['ANSIBLE_ROLES_PATH'])) out.push(join(r, name), join(r, 'roles', name));
  for (const b of bases(base)) out.push(join(b, 'roles', name));
  return out;
}

/** Every place a playbook written as `path` may be. */
export function playbookCandidates(path: string, base: AnsibleBase): string[] {
  return isAbsolute(path) ? [path] : bases(base).map((b) => join(b, path));
}

export type Located = { readonly ok: true; readonly path: string } | { readonly ok: false; readonly problem: string };

/** The role's directory, or a problem naming every place looked at and the fix. */
export async function locateRole(name: string, base: AnsibleBase, kindOf: PathKind): Promise<Located> {
  const candidates = roleCandidates(name, base);
  for (const c of candidates) {
    const kind = await kindOf(c);
    if (kind === 'directory') {
      const hasTasks = (await kindOf(join(c, 'tasks'))) === 'directory' || (await kindOf(join(c, 'meta'))) === 'directory';
      if (hasTasks) return { ok: true, path: c };
      return { ok: false, problem: `role "${name}" (${c}) has neither tasks/ nor meta/; a role needs tasks/main.yml` };
    }
  }
  return {
    ok: false,
    problem: `role "${name}" was not found (looked in ${candidates.join(', ')}); give an absolute path, put the role in roles/${name} next to the watches file, or set ANSIBLE_ROLES_PATH`,
  };
}

/** The playbook's file, or a problem naming where it was looked for. */
export async function locatePlaybook(path: string, base: AnsibleBase, kindOf: PathKind): Promise<Located> {
  const candidates = playbookCandidates(path, base);
  for (const c of candidates) {
    const kind = await kindOf(c);
    if (kind === 'file') return { ok: true, path: c };
    if (kind === 'directory') return { ok: false, problem: `playbook "${path}" (${c}) is a directory; name the playbook's YAML file` };
  }
  return {
    ok: false,
    problem: `playbook "${path}" was not found (looked for ${candidates.join(', ')}); relative paths start at the watches file's directory`,
  };
}
