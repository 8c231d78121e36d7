// Starting and stopping the control plane's daemons so that none of them can outlive its owner.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync, readlinkSync, realpathSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/** A daemon we spawned, plus how it ended if it already did (to fail fast instead of timing out). */
export interface Daemon {
  pid: number;
  child: ChildProcess;
  exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
}

/**
 * Spawns `bin args` detached (its own session), with stdout and stderr appended to logFile.
 * Detached because a terminal's Ctrl-C goes to the whole foreground process group: the daemons
 * must instead be stopped in order by their owner, or by the reaper when the owner is gone.
 * unref() so the daemon never keeps the spawning Node process alive.
 */
export function spawnDaemon(bin: string, args: string[], logFile: string, env: NodeJS.ProcessEnv = process.env): Daemon {
  const fd = openSync(logFile, 'a');
  try {
    const child = spawn(bin, args, { detached: true, stdio: ['ignore', fd, fd], env });
    if (child.pid === undefined) throw new Error(`could not start ${bin} (is it executable?)`);
    const daemon: Daemon = { pid: child.pid, child, exited: undefined };
    child.on('exit', (code, signal) => { daemon.exited = { code, signal }; });
    // A failing exec (ENOENT, EACCES) arrives as 'error', not 'exit'.
    child.on('error', () => { daemon.exited ??= { code: null, signal: null }; });
    child.unref();
    return daemon;
  } finally {
    closeSync(fd);
  }
}

// Runs detached next to the daemons. Once the owner pid is gone (test runner killed, Ctrl-C, a
// crash that skipped teardown) it stops every pid listed in $dir/pids (re-read at that moment,
// so restarted components are covered) and deletes the state dir. A pid is only signalled if
// its command line mentions the state dir, so a recycled pid is never hit.
const REAPER_SCRIPT = `
owner=$1 dir=$2
while kill -0 "$owner" 2>/dev/null; do sleep 1; done
ours() { [ -r "/proc/$1/cmdline" ] && tr '\\0' '\\n' < "/proc/$1/cmdline" | grep -qF -- "$dir/"; }
pids=$(cat "$dir/pids" 2>/dev/null) || exit 0
for p in $pids; do ours "$p" && kill -TERM "$p" 2>/dev/null; done
for _ in 1 2 3 4 5 6 7 8 9 10; do
  alive=0
  for p in $pids; do ours "$p" && alive=1; done
  [ "$alive" = 0 ] && break
  sleep 0.5
done
for p in $pids; do ours "$p" && kill -KILL "$p" 2>/dev/null; done
rm -rf -- "$dir"
`;

/** Starts the reaper for the daemons listed in dir/pids; returns its pid (also its process group). */
export function spawnReaper(ownerPid: number, dir: string): number {
  const child = spawn('bash', ['-c', REAPER_SCRIPT, 'chartpilot-reaper', String(ownerPid), dir], {
    detached: true,
    stdio: 'ignore',
  });
  if (child.pid === undefined) throw new Error('could not start the reaper (bash missing?)');
  child.unref();
  return child.pid;
}

/** Whether pid is alive and was started for the control plane in dir (guards against pid reuse). */
export function isOurs(pid: number, dir: string): boolean {
  let cmdline: string;
  let stat: string;
  try {
    cmdline = readFileSync(`/proc/${String(pid)}/cmdline`, 'utf8');
    stat = readFileSync(`/proc/${String(pid)}/stat`, 'utf8');
  } catch {
    return false;
  }
  // A zombie (state Z after the last ')') has exited already; it only awaits its parent's wait().
  if (/\)\s+Z\s/.test(stat)) return false;
  return cmdline.split('\0').some((arg) => arg.includes(`${dir}/`) || arg === dir);
}

/**
 * Live processes running one of `binaries` (name -> path, symlinks allowed) whose command line
 * mentions dir: a second line of defence next to the pid files, so that a pid that never made it
 * into them (a crash between spawn and write) is still stopped. Matching the executable as well
 * keeps a developer's `tail -f <dir>/logs/...` out of it.
 */
export function findProcesses(dir: string, binaries: Record<string, string>): Map<string, number[]> {
  const byExe = new Map<string, string>();
  for (const [name, path] of Object.entries(binaries)) {
    try {
      byExe.set(realpathSync(path), name);
    } catch {
      // Binary gone (cache cleared): nothing can be running it under that path.
    }
  }
  const found = new Map<string, number[]>();
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return found;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    let exe: string;
    try {
      exe = readlinkSync(`/proc/${entry}/exe`);
    } catch {
      continue;
    }
    const name = byExe.get(exe);
    const pid = Number(entry);
    if (name !== undefined && isOurs(pid, dir)) found.set(name, [...(found.get(name) ?? []), pid]);
  }
  return found;
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // Already gone: that is what we want.
  }
}

/** TERM each of our pids, wait up to graceMs for them to exit, then KILL the rest. */
export async function terminate(pids: number[], dir: string, graceMs = 5000): Promise<void> {
  const ours = pids.filter((pid) => isOurs(pid, dir));
  for (const pid of ours) signal(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (ours.some((pid) => isOurs(pid, dir)) && Date.now() < deadline) await sleep(50);
  for (const pid of ours) if (isOurs(pid, dir)) signal(pid, 'SIGKILL');
  // SIGKILL is not instantaneous: wait until the kernel has really taken them down, so ports and
  // the etcd data dir are free when we return (restartComponent depends on it).
  const killDeadline = Date.now() + 5000;
  while (ours.some((pid) => isOurs(pid, dir)) && Date.now() < killDeadline) await sleep(20);
}

/** Kills the reaper's whole process group (bash and its `sleep 1`). */
export function killReaper(pid: number, dir: string): void {
  if (!isOurs(pid, dir)) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    signal(pid, 'SIGKILL');
  }
}

/** The last n lines of a log file, for error messages. */
export function tail(file: string, n = 30): string {
  try {
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    return lines.slice(-n).join('\n');
  } catch {
    return '(no log written)';
  }
}
