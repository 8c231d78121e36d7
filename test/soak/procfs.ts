/**
 * Linux /proc helpers for fault and soak tests: the process tree below the operator (to find
 * leaked helm processes, or to kill the whole tree the way a container runtime does) and RSS.
 * Every kill here targets pids that descend from a process the test itself started.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

export interface ProcInfo {
  readonly pid: number;
  readonly ppid: number;
  /** One-letter state from /proc/<pid>/stat (R, S, D, T, Z, …). */
  readonly state: string;
  /** argv joined with spaces. */
  readonly cmdline: string;
}

function readProc(pid: number): ProcInfo | undefined {
  try {
    const stat = readFileSync(`/proc/${String(pid)}/stat`, 'utf8');
    // comm is in parentheses and may itself contain spaces or parentheses: split after the last ')'.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const cmdline = readFileSync(`/proc/${String(pid)}/cmdline`, 'utf8').split('\0').filter((s) => s !== '').join(' ');
    return { pid, ppid: Number(rest[1]), state: rest[0] ?? '?', cmdline };
  } catch {
    return undefined; // exited meanwhile
  }
}

/** Every live process (zombies excluded). */
export function processTable(): ProcInfo[] {
  const out: ProcInfo[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const p = readProc(Number(entry));
    if (p !== undefined && p.state !== 'Z') out.push(p);
  }
  return out;
}

/** Live descendants of `root` (not `root` itself), parents before children. */
export function descendants(root: number): ProcInfo[] {
  const table = processTable();
  const children = new Map<number, ProcInfo[]>();
  for (const p of table) {
    const list = children.get(p.ppid) ?? [];
    list.push(p);
    children.set(p.ppid, list);
  }
  const out: ProcInfo[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.shift() as number;
    for (const c of children.get(pid) ?? []) {
      out.push(c);
      queue.push(c.pid);
    }
  }
  return out;
}

/** True while pid names a live, non-zombie process. */
export function isAlive(pid: number): boolean {
  const p = readProc(pid);
  return p !== undefined && p.state !== 'Z';
}

/** VmRSS of pid in KiB, or undefined when it is gone. */
export function rssKiB(pid: number): number | undefined {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${String(pid)}/status`, 'utf8'));
    return m?.[1] === undefined ? undefined : Number(m[1]);
  } catch {
    return undefined;
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}

/**
 * Kills `root` and everything below it at once, the way a container runtime kills a pod's
 * processes: freeze the tree top-down with SIGSTOP (so nothing spawns new children while we look),
 * then SIGKILL every frozen pid. Resolves with the killed pids once none of them is alive.
 */
export async function killTree(root: number): Promise<number[]> {
  const frozen = new Set<number>([root]);
  signal(root, 'SIGSTOP');
  // A child forked just before its parent stopped shows up on the next look; three quiet looks in
  // a row mean the tree is complete.
  for (let quiet = 0; quiet < 3; ) {
    let found = false;
    for (const p of descendants(root)) {
      if (frozen.has(p.pid)) continue;
      frozen.add(p.pid);
      signal(p.pid, 'SIGSTOP');
      found = true;
    }
    quiet = found ? 0 : quiet + 1;
    await sleep(20);
  }
  for (const pid of frozen) signal(pid, 'SIGKILL');
  const deadline = Date.now() + 30_000;
  while ([...frozen].some(isAlive)) {
    if (Date.now() > deadline) throw new Error(`processes survived SIGKILL: ${[...frozen].filter(isAlive).join(', ')}`);
    await sleep(50);
  }
  return [...frozen];
}
