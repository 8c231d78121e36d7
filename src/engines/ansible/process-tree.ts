/**
 * Stopping a process with everything it started. ansible-runner runs ansible-playbook under a
 * pseudo-terminal in a session of its own, and ansible-playbook forks workers, so neither a
 * signal to ansible-runner nor one to its process group reaches them all: the tree is read from
 * /proc (Linux, where the operator runs) and every member signalled, SIGTERM first, SIGKILL to
 * what is left after the grace period. A process is recognised by its pid and start time, so a
 * pid reused in the meantime is never signalled.
 */
import { readdir, readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';

interface Proc {
  readonly pid: number;
  readonly ppid: number;
  /** Start time in clock ticks since boot: with the pid, names one process. */
  readonly start: string;
  readonly zombie: boolean;
}

async function readProc(pid: number): Promise<Proc | undefined> {
  try {
    const stat = await readFile(`/proc/${String(pid)}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: fields are counted after its last ')'.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { pid, ppid: Number(rest[1]), start: rest[19] ?? '', zombie: rest[0] === 'Z' || rest[0] === 'X' };
  } catch {
    return undefined;
  }
}

async function processTable(): Promise<Proc[]> {
  const names = await readdir('/proc').catch(() => [] as string[]);
  const procs = await Promise.all(names.filter((n) => /^\d+$/u.test(n)).map((n) => readProc(Number(n))));
  return procs.filter((p): p is Proc => p !== undefined);
}

/** `roots` and all their descendants that are alive now, keyed by pid. */
async function treeOf(roots: ReadonlyMap<number, string | undefined>): Promise<Map<number, Proc>> {
  const table = await processTable();
  const children = new Map<number, Proc[]>();
  for (const p of table) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p]);
  const byPid = new Map(table.map((p) => [p.pid, p]));
  const out = new Map<number, Proc>();
  const queue: Proc[] = [];
  for (const [pid, start] of roots) {
    const p = byPid.get(pid);
    if (p !== undefined && (start === undefined || p.start === start)) queue.push(p);
  }
  for (let p = queue.shift(); p !== undefined; p = queue.shift()) {
    if (out.has(p.pid)) continue;
    out.set(p.pid, p);
    queue.push(...(children.get(p.pid) ?? []));
  }
  return out;
}

function signal(procs: Iterable<Proc>, sig: NodeJS.Signals): void {
  for (const p of procs) {
    if (p.zombie) continue;
    try {
      process.kill(p.pid, sig);
    } catch {
      // Gone already.
    }
  }
}

/**
 * SIGTERM to `rootPid` and its descendants, SIGKILL after `graceMs` to any of them (or of their
 * children, also those orphaned meanwhile) still running; resolves when none runs.
 */
export async function stopProcessTree(rootPid: number, graceMs: number): Promise<void> {
  const known = new Map<number, string | undefined>([[rootPid, undefined]]);
  const refresh = async (): Promise<Proc[]> => {
    const tree = await treeOf(known);
    for (const p of tree.values()) known.set(p.pid, p.start);
    return [...tree.values()].filter((p) => !p.zombie);
  };
  signal(await refresh(), 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    await sleep(100);
    const alive = await refresh();
    if (alive.length === 0) return;
    // Children started after the first signal get theirs too.
    signal(alive, 'SIGTERM');
  }
  for (let i = 0; i < 50; i++) {
    const alive = await refresh();
    if (alive.length === 0) return;
    signal(alive, 'SIGKILL');
    await sleep(100);
  }
}
