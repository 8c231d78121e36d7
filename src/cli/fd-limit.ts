/**
 * The soft `RLIMIT_NOFILE`, raised to the hard limit at start as Go programs do: container
 * runtimes commonly start processes with a soft limit of 1024, and every helm process, API
 * connection, watch and scrape costs a descriptor. Node's own start-up already raises it (node.cc,
 * PlatformInit; measured: started under `prlimit --nofile=1024:4096` it runs at 4096), so normally
 * this only reads and logs both limits. Should anything keep it low (another runtime, a wrapper),
 * it is raised from outside with util-linux's `prlimit --pid <own pid>`, Node having no
 * setrlimit (Debian's util-linux is essential, so prlimit is in the image); failing that, a
 * warning says so and the operator runs on.
 */
import { readFile } from 'node:fs/promises';
import { execa } from 'execa';
import type { Logger } from 'pino';
import { errorMessage } from '../lib/errors.js';

export type Limit = number | 'unlimited';

export interface FdLimits {
  readonly soft: Limit;
  readonly hard: Limit;
}

/** The `Max open files` line of /proc/<pid>/limits; undefined when it has none. */
export function parseFdLimits(procLimits: string): FdLimits | undefined {
  const m = /^Max open files\s+(\d+|unlimited)\s+(\d+|unlimited)\s/mu.exec(procLimits);
  if (m?.[1] === undefined || m[2] === undefined) return undefined;
  const limit = (s: string): Limit => (s === 'unlimited' ? 'unlimited' : Number(s));
  return { soft: limit(m[1]), hard: limit(m[2]) };
}

export interface RaiseOptions {
  readonly log: Logger;
  /** The prlimit binary; default `prlimit` on PATH. */
  readonly prlimit?: string;
  /** Reads the process's limits (tests substitute it); default /proc/self/limits. */
  readonly read?: () => Promise<string>;
  readonly pid?: number;
}

/** Raises the soft limit to the hard one if it is lower; logs both either way; never throws. */
export async function raiseFdLimit(opts: RaiseOptions): Promise<FdLimits | undefined> {
  const read = opts.read ?? (() => readFile('/proc/self/limits', 'utf8'));
  let before: FdLimits | undefined;
  try {
    before = parseFdLimits(await read());
  } catch {
    before = undefined;
  }
  if (before === undefined) {
    opts.log.info('file descriptor limit not known (no /proc/self/limits); left as it is');
    return undefined;
  }
  if (before.soft === before.hard) {
    opts.log.info({ soft: before.soft, hard: before.hard }, 'file descriptor limit');
    return before;
  }
  try {
    await execa(opts.prlimit ?? 'prlimit', ['--pid', String(opts.pid ?? process.pid), `--nofile=${String(before.hard)}:${String(before.hard)}`], {
      stdin: 'ignore',
      timeout: 5_000,
    });
    const after = parseFdLimits(await read()) ?? before;
    opts.log.info({ soft: after.soft, hard: after.hard, softBefore: before.soft }, 'file descriptor limit raised to the hard limit');
    return after;
  } catch (err) {
    opts.log.warn(
      { soft: before.soft, hard: before.hard, err: errorMessage(err) },
      'cannot raise the file descriptor soft limit to the hard limit (needs prlimit from util-linux); running with the soft limit',
    );
    return before;
  }
}
