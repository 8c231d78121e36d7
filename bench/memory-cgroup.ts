/**
 * A memory cgroup with a hard limit, for running an operator the way a pod's memory limit runs it
 * (`--memory-limit-mib`): the kernel, not the bench, enforces the limit — page cache is reclaimed
 * under pressure and the process is OOM-killed when what it holds cannot be — exactly what a
 * kubelet's container limit does. cgroup v2 (`memory.max`) and v1 (`memory.limit_in_bytes`) both
 * work; the cgroup is made below the bench's own, so it needs write access there (root here).
 */
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface CgroupFigures {
  readonly limitMiB: number;
  /** The most memory charged to the cgroup at any time (v2 memory.peak, v1 memory.max_usage_in_bytes). */
  readonly peakMiB: number | undefined;
  /** Charged now minus inactive page cache: what kubelet and `kubectl top` call the working set. */
  readonly workingSetMiB: number | undefined;
  /** Processes the kernel killed for the limit. */
  readonly oomKills: number;
}

export interface MemoryCgroup {
  readonly dir: string;
  /** argv that runs `command args…` inside the cgroup (a shell that moves itself in, then execs). */
  wrap(command: string, args: readonly string[]): { command: string; args: string[] };
  figures(): CgroupFigures;
  /** Removes the cgroup; its processes must have exited. */
  remove(): void;
}

interface Hierarchy {
  readonly version: 1 | 2;
  /** The bench's own cgroup directory in the memory hierarchy. */
  readonly own: string;
}

/** The memory hierarchy's directory of the process whose /proc/<pid>/cgroup text this is. */
export function memoryHierarchyOf(procCgroup: string, mounts: { v1Memory: string | undefined; v2: string | undefined }): Hierarchy | undefined {
  const lines = procCgroup.split('\n').filter((l) => l !== '');
  for (const line of lines) {
    const [, controllers, path] = /^\d+:([^:]*):(.*)$/.exec(line) ?? [];
    if (controllers === undefined || path === undefined) continue;
    if (mounts.v1Memory !== undefined && controllers.split(',').includes('memory')) return { version: 1, own: join(mounts.v1Memory, path) };
  }
  const unified = lines.map((l) => /^0::(.*)$/.exec(l)?.[1]).find((p) => p !== undefined);
  if (unified !== undefined && mounts.v2 !== undefined) return { version: 2, own: join(mounts.v2, unified) };
  return undefined;
}

/** A `key value` file (memory.stat, memory.events, memory.oom_control) as numbers. */
export function keyedCounts(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const [key, value] = line.trim().split(/\s+/, 2);
    if (key === undefined || key === '' || value === undefined) continue;
    const n = Number(value);
    if (Number.isFinite(n)) out.set(key, n);
  }
  return out;
}

const MiB = 2 ** 20;

/** The figures from the files' texts (undefined: the file could not be read). */
export function figuresOf(version: 1 | 2, limitBytes: number, files: (name: string) => string | undefined): CgroupFigures {
  const num = (name: string): number | undefined => {
    const t = files(name)?.trim();
    return t === undefined || t === '' || !Number.isFinite(Number(t)) ? undefined : Number(t);
  };
  const stat = keyedCounts(files('memory.stat') ?? '');
  if (version === 2) {
    const usage = num('memory.current');
    const events = keyedCounts(files('memory.events') ?? '');
    const inactive = stat.get('inactive_file') ?? 0;
    const peak = num('memory.peak');
    return {
      limitMiB: limitBytes / MiB,
      peakMiB: peak === undefined ? undefined : peak / MiB,
      workingSetMiB: usage === undefined ? undefined : Math.max(0, usage - inactive) / MiB,
      oomKills: events.get('oom_kill') ?? 0,
    };
  }
  const usage = num('memory.usage_in_bytes');
  const peak = num('memory.max_usage_in_bytes');
  const inactive = stat.get('total_inactive_file') ?? stat.get('inactive_file') ?? 0;
  return {
    limitMiB: limitBytes / MiB,
    peakMiB: peak === undefined ? undefined : peak / MiB,
    workingSetMiB: usage === undefined ? undefined : Math.max(0, usage - inactive) / MiB,
    // Not memory.failcnt: on this machine's kernel it stayed 0 through an OOM kill.
    oomKills: keyedCounts(files('memory.oom_control') ?? '').get('oom_kill') ?? 0,
  };
}

function mountsOf(mountsText: string): { v1Memory: string | undefined; v2: string | undefined } {
  let v1Memory: string | undefined;
  let v2: string | undefined;
  for (const line of mountsText.split('\n')) {
    const [, dir, type, options] = line.split(' ');
    if (dir === undefined || options === undefined) continue;
    if (type === 'cgroup' && options.split(',').includes('memory')) v1Memory = dir;
    if (type === 'cgroup2' && v2 === undefined) v2 = dir;
  }
  return { v1Memory, v2 };
}

/** A new cgroup below the bench's own, limited to `limitMiB` (no swap on top where swap accounting exists). */
export function createMemoryCgroup(name: string, limitMiB: number): MemoryCgroup {
  const hierarchy = memoryHierarchyOf(readFileSync('/proc/self/cgroup', 'utf8'), mountsOf(readFileSync('/proc/self/mounts', 'utf8')));
  if (hierarchy === undefined) throw new Error('--memory-limit-mib: no memory cgroup hierarchy is mounted here');
  const dir = join(hierarchy.own, name);
  const limitBytes = Math.round(limitMiB * MiB);
  try {
    mkdirSync(dir);
    if (hierarchy.version === 2) {
      writeFileSync(join(dir, 'memory.max'), String(limitBytes));
      if (existsSync(join(dir, 'memory.swap.max'))) writeFileSync(join(dir, 'memory.swap.max'), '0');
    } else {
      writeFileSync(join(dir, 'memory.limit_in_bytes'), String(limitBytes));
      if (existsSync(join(dir, 'memory.memsw.limit_in_bytes'))) writeFileSync(join(dir, 'memory.memsw.limit_in_bytes'), String(limitBytes));
    }
  } catch (err) {
    throw new Error(`--memory-limit-mib: cannot make the memory cgroup ${dir} (the bench needs write access to its own cgroup): ${(err as Error).message}`, { cause: err });
  }
  const read = (file: string): string | undefined => {
    try {
      return readFileSync(join(dir, file), 'utf8');
    } catch {
      return undefined;
    }
  };
  return {
    dir,
    wrap: (command, args) => ({
      command: '/bin/sh',
      // $0 is the cgroup; the shell joins it, then becomes the operator (whose children stay inside).
      args: ['-c', 'echo $$ > "$0/cgroup.procs" && exec "$@"', dir, command, ...args],
    }),
    figures: () => figuresOf(hierarchy.version, limitBytes, read),
    remove: () => {
      try {
        rmdirSync(dir);
      } catch {
        // Still populated (a process outlived its stop) or already gone: leave it to the machine.
      }
    },
  };
}
