/**
 * Which watches file `run` reads when `--watches-file` is not given. operator-sdk's default is
 * `./watches.yaml`, relative to the working directory, and its Dockerfiles put the file at
 * `${HOME}/watches.yaml` with `WORKDIR ${HOME}` (HOME=/opt/helm for helm-operator, /opt/ansible
 * for ansible-operator): an image built from such a Dockerfile with only its `FROM` changed must
 * find it there. chartpilot's own layout puts it at /opt/chartpilot/watches.yaml. So the places,
 * in order: the working directory's, $HOME's (a Dockerfile that set HOME but left the working
 * directory to the base image), then chartpilot's image layout's. The first that exists is read;
 * none existing is one message naming every place looked at.
 */
import { stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';

type Env = Readonly<Record<string, string | undefined>>;

/** Where chartpilot's own images (and `chartpilot new` scaffolds) put the watches file. */
export const IMAGE_WATCHES_FILE = '/opt/chartpilot/watches.yaml';

/** Whether a regular file is at an absolute path: the one side effect, so the order is testable. */
export type IsFile = (absPath: string) => Promise<boolean>;

export const diskIsFile: IsFile = async (p) => {
  try {
    return (await stat(p)).isFile();
  } catch {
    return false;
  }
};

/** Every place looked at, absolute, without repeats, in the order tried. */
export function watchesCandidates(cwd: string, env: Env): string[] {
  const home = env['HOME']?.trim() ?? '';
  const all = [resolve(cwd, 'watches.yaml'), ...(home === '' ? [] : [resolve(cwd, join(home, 'watches.yaml'))]), IMAGE_WATCHES_FILE];
  return [...new Set(all)];
}

export type WatchesLocation = { readonly ok: true; readonly path: string } | { readonly ok: false; readonly problem: string };

/** The default watches file, or a problem naming every place looked at and the flag that names another. */
export async function defaultWatchesFile(cwd: string, env: Env, isFile: IsFile = diskIsFile): Promise<WatchesLocation> {
  const candidates = watchesCandidates(cwd, env);
  for (const c of candidates) {
    if (await isFile(c)) return { ok: true, path: c };
  }
  return {
    ok: false,
    problem: `no watches file: looked for ${candidates.join(', ')}; give its path with --watches-file=<path> (operator-sdk images: COPY watches.yaml \${HOME}/watches.yaml with WORKDIR \${HOME})`,
  };
}
