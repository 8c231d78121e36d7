/**
 * CPU and memory of processes, read from /proc (Linux only, like the control plane itself).
 *
 * CPU: a process's utime+stime plus cutime+cstime, the CPU of its children that it has already
 * waited for. The kernel folds a reaped child's own cutime into the parent's, so an operator's
 * figure covers every helm process (and whatever helm spawned) once they have exited.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

let clockTicks: number | undefined;

/** USER_HZ, the unit of the /proc/<pid>/stat times (100 on practically every Linux). */
function ticksPerSecond(): number {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

export interface ProcStat {
  ppid: number;
  comm: string;
  /** utime + stime, seconds. */
  self: number;
  /** cutime + cstime (reaped descendants), seconds. */
  children: number;
}

/** Parses /proc/<pid>/stat; undefined when the process is gone. */
export function readStat(pid: number | 'self'): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${String(pid)}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // comm may contain spaces and parentheses: the fields start after the LAST ')'.
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  const f = text.slice(close + 2).split(' ');
  // f[0] is field 3 (state): field n is f[n - 3].
  const num = (n: number): number => Number(f[n - 3] ?? 0);
  const hz = ticksPerSecond();
  return {
    ppid: num(4),
    comm: text.slice(open + 1, close),
    self: (num(14) + num(15)) / hz,
    children: (num(16) + num(17)) / hz,
  };
}

/** utime+stime+cutime+cstime of pid in seconds, or undefined when it is gone. */
export function cpuSeconds(pid: number | 'self'): number | undefined {
  const s = readStat(pid);
  return s === undefined ? undefined : s.self + s.children;
}

/** A field of /proc/<pid>/status in KiB (VmRSS, VmHWM), or undefined. */
export function statusKiB(pid: number, field: 'VmRSS' | 'VmHWM'): number | undefined {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${String(pid)}/status`, 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A process's Rss and Pss from /proc/<pid>/smaps_rollup in KiB, or undefined when it is gone.
 * Pss divides each shared page among the processes mapping it: N warm helm workers share one
 * binary's text, which Rss counts N times and Pss once in all.
 */
export function smapsRollupKiB(pid: number): { rss: number; pss: number } | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${String(pid)}/smaps_rollup`, 'utf8');
  } catch {
    return undefined;
  }
  const field = (name: string): number | undefined => {
    const m = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text);
    return m ? Number(m[1]) : undefined;
  };
  const rss = field('Rss');
  const pss = field('Pss');
  return rss === undefined || pss === undefined ? undefined : { rss, pss };
}

/** Every live process whose parent chain leads to root (excluding root), with its comm. */
export function descendants(root: number): { pid: number; comm: string }[] {
  const parent = new Map<number, { ppid: number; comm: string }>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const s = readStat(Number(name));
    if (s !== undefined) parent.set(Number(name), { ppid: s.ppid, comm: s.comm });
  }
  const out: { pid: number; comm: string }[] = [];
  for (const [pid, info] of parent) {
    for (let p = info.ppid, hops = 0; p > 1 && hops < 64; hops++) {
      if (p === root) {
        out.push({ pid, comm: info.comm });
        break;
      }
      p = parent.get(p)?.ppid ?? 0;
    }
  }
  return out;
}

export interface RssPeaks {
  /** The operator process (null for the floor, which has none). */
  peakRssMiB: number | null;
  /** Operator plus its descendants (helm, post-renderers), summed at each sample. */
  peakTreeRssMiB: number;
  /**
   * The same tree's Pss summed (smaps_rollup): shared pages counted once in all, so N workers'
   * common binary text counts once, not N times. Absent in results from before it was sampled.
   */
  peakTreePssMiB?: number;
}

/**
 * Samples memory while a contender runs: the operator's own VmRSS every 250 ms and, once a
 * second, the summed RSS and PSS of its process tree (operator + helm children or warm workers)
 * from smaps_rollup. For the floor there is
 * no operator: `pid` is undefined and the tree is the bench's own helm children. Peaks are kept
 * per phase (takePhase) and overall (stop).
 */
export class RssSampler {
  private phase = { self: 0, tree: 0, treePss: 0 };
  private overall = { self: 0, tree: 0, treePss: 0 };
  private timer: NodeJS.Timeout | undefined;
  private ticks = 0;

  constructor(
    private readonly pid: number | undefined,
    /** Root of the tree to sum, and which of its descendants count. */
    private readonly tree: { root: number; include: (comm: string) => boolean },
  ) {}

  start(): void {
    this.sample();
    this.timer = setInterval(() => { this.sample(); }, 250);
    this.timer.unref();
  }

  private sample(): void {
    const self = this.pid === undefined ? 0 : (statusKiB(this.pid, 'VmRSS') ?? 0);
    let tree = self;
    let treePss = 0;
    // The /proc walk costs a few ms: once a second is enough to catch a wave of helm processes.
    if (this.ticks++ % 4 === 0) {
      const own = this.pid === undefined ? undefined : smapsRollupKiB(this.pid);
      tree = Math.max(self, own?.rss ?? 0);
      treePss = own?.pss ?? 0;
      for (const d of descendants(this.tree.root)) {
        if (d.pid === this.pid || !this.tree.include(d.comm)) continue;
        const m = smapsRollupKiB(d.pid);
        tree += m?.rss ?? 0;
        treePss += m?.pss ?? 0;
      }
    }
    for (const p of [this.phase, this.overall]) {
      p.self = Math.max(p.self, self);
      p.tree = Math.max(p.tree, tree);
      p.treePss = Math.max(p.treePss, treePss);
    }
  }

  private peaks(p: { self: number; tree: number; treePss: number }): RssPeaks {
    return { peakRssMiB: this.pid === undefined ? null : p.self / 1024, peakTreeRssMiB: p.tree / 1024, peakTreePssMiB: p.treePss / 1024 };
  }

  /** Peaks since the previous takePhase (or start), then starts a new phase. */
  takePhase(): RssPeaks {
    this.sample();
    const out = this.peaks(this.phase);
    this.phase = { self: 0, tree: 0, treePss: 0 };
    return out;
  }

  /** Overall peaks; the operator's VmHWM (the kernel's own peak) wins when larger than any sample. */
  stop(): RssPeaks {
    this.sample();
    clearInterval(this.timer);
    const hwm = this.pid === undefined ? undefined : statusKiB(this.pid, 'VmHWM');
    this.overall.self = Math.max(this.overall.self, hwm ?? 0);
    this.overall.tree = Math.max(this.overall.tree, this.overall.self);
    return this.peaks(this.overall);
  }
}

/**
 * CPU seconds the whole machine spent busy (all cores; /proc/stat user+nice+system+irq+softirq+
 * steal). Next to a contender's own CPU it shows how much else ran meanwhile: the control plane
 * reacting, the bench, and anything else on a shared machine.
 */
export function machineBusySeconds(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
  const [, user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).map(Number);
  return ((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0) + (steal ?? 0)) / ticksPerSecond();
}
