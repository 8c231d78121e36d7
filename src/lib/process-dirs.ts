/**
 * Temporary directories named after the process that made them, so that the next process removes
 * those of one killed before it could clean up (SIGKILL, an OOM kill). In a pod, /tmp is an
 * emptyDir that outlives a container restart, and these directories hold values files (a CR's
 * values), per-call kubeconfigs and chart copies: without this they pile up there, crash after crash.
 *
 * A name carries the pid and the process's start time (Linux /proc/<pid>/stat), because in a
 * container the restarted operator usually gets the same pid as the killed one. A directory is an
 * orphan when its pid is not running, or is running but started at another time (a reused pid).
 * Anything else — a live process's directory, a name in another form — is left alone.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';

/** `<prefix><pid>.<start>-XXXXXX`: a fresh 0700 directory in `parent`, after one sweep of `parent` per process. */
export async function makeProcessDir(parent: string, prefix: string): Promise<string> {
  if (!/^chartpilot-[a-z-]+-$/u.test(prefix)) throw new TypeError(`a process directory prefix is chartpilot-<words>-, got ${JSON.stringify(prefix)}`);
  await sweepOnce(parent);
  ownTag ??= processTag(process.pid) ?? String(process.pid);
  return mkdtemp(join(parent, `${prefix}${ownTag}-`));
}

/** This process's tag, read once: its start time does not change. */
let ownTag: string | undefined;

const swept = new Map<string, Promise<void>>();

function sweepOnce(parent: string): Promise<void> {
  const known = swept.get(parent);
  if (known !== undefined) return known;
  const done = removeOrphanDirs(parent).then(
    () => undefined,
    () => undefined,
  );
  swept.set(parent, done);
  return done;
}

const NAME = /^chartpilot-[a-z-]+-(\d+)\.(\d+)-[^/]+$/u;

/** Removes the directories of `parent` that processes no longer running made; returns their names. */
export async function removeOrphanDirs(parent: string, isRunning: (pid: number, start: string) => boolean = runningAsTagged): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(parent);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const m = NAME.exec(name);
    if (m === null) continue;
    const pid = Number(m[1]);
    const start = m[2] ?? '';
    if (isRunning(pid, start)) continue;
    await rm(join(parent, name), { recursive: true, force: true }).then(
      () => removed.push(name),
      () => undefined,
    );
  }
  return removed;
}

/** `<pid>.<start time in clock ticks since boot>`, or undefined where /proc does not say (not Linux, gone). */
export function processTag(pid: number): string | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${String(pid)}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may hold spaces or ')': fields after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const start = fields[19]; // field 22 of the whole line
  return start !== undefined && /^\d+$/u.test(start) ? `${String(pid)}.${start}` : undefined;
}

function runningAsTagged(pid: number, start: string): boolean {
  if (pid === process.pid) return processTag(pid) === `${String(pid)}.${start}`;
  const tag = processTag(pid);
  if (tag !== undefined) return tag === `${String(pid)}.${start}`;
  // No /proc entry: gone, unless /proc is not there at all (then the signal decides).
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as { code?: unknown }).code === 'EPERM';
  }
}
