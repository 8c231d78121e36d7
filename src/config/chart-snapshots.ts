/**
 * Private copies of local charts, one per content digest, which is what helm is given instead of
 * the watches.yaml path. The path is where people edit; a copy is what a digest names. So the last
 * good chart can still be served while an edit of the path is being tried on one CR (or is held
 * because it failed there), and the content a fingerprint's digest stands for is exactly what
 * helm installs — an edit landing between the digest and helm's read can no longer deploy files
 * the digest never saw.
 *
 * The copies live in a private directory of this process (0700, named with its pid, removed on
 * dispose, and by the next operator on the machine if this one was killed): two operators on one
 * machine never share or prune each other's.
 */
import { randomBytes } from 'node:crypto';
import { cp, mkdir, rename, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { chartDigest } from './chart-digest.js';
import { makeProcessDir } from '../lib/process-dirs.js';

export interface ChartSnapshot {
  /** The copy: a chart directory or a packaged chart, named as the original. */
  readonly path: string;
  /** chartDigest of the copy (the same as of the original it was taken from when that did not change meanwhile). */
  readonly digest: string;
}

/**
 * Copies no longer served are kept this many per original, newest first, for the reconciles
 * still running with them (a reconcile reads its target once, at its start, and may wait at a
 * helm slot before its helm call reads the chart).
 */
const SPARE_COPIES = 2;

interface Copy {
  /** The original's path. */
  readonly live: string;
  readonly path: string;
  readonly digest: string;
  /** When it was last handed out (a counter): the newest spares are kept. */
  taken: number;
}

export class ChartSnapshots {
  private root: Promise<string> | undefined;
  private readonly copies = new Map<string, Copy>();
  private taken = 0;

  /** `parent`: where the private directory is made (the system's temporary directory by default). */
  constructor(private readonly parent: string = tmpdir()) {}

  /**
   * A copy of the chart at `live` as it is now. The original's digest first: unchanged content
   * is the copy already made, with no new copy.
   */
  async take(live: string): Promise<ChartSnapshot> {
    const known = this.copies.get(await chartDigest(live));
    if (known !== undefined) return this.use(known);
    const root = await this.dir();
    const scratch = join(root, `incoming-${randomBytes(6).toString('hex')}`);
    await mkdir(scratch, { mode: 0o700 });
    try {
      const copy = join(scratch, basename(live));
      // dereference: a symlinked subchart is copied as the digest read it.
      await cp(live, copy, { recursive: true, dereference: true, preserveTimestamps: false });
      const digest = await chartDigest(copy);
      const again = this.copies.get(digest);
      if (again !== undefined) return this.use(again);
      const home = join(root, digest.slice(0, 32));
      await rm(home, { recursive: true, force: true });
      await rename(scratch, home);
      const entry: Copy = { live, path: join(home, basename(live)), digest, taken: 0 };
      this.copies.set(digest, entry);
      return this.use(entry);
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  }

  /**
   * Removes the copies not in `inUse` (paths), except the newest spares of each original: what a
   * reload replaced is gone after a few more reloads, never while a reconcile may just have read it.
   */
  async prune(inUse: ReadonlySet<string>): Promise<void> {
    const spares = new Map<string, number>();
    const newestFirst = [...this.copies.entries()].sort(([, a], [, b]) => b.taken - a.taken);
    for (const [digest, entry] of newestFirst) {
      if (inUse.has(entry.path)) continue;
      const n = spares.get(entry.live) ?? 0;
      spares.set(entry.live, n + 1);
      if (n < SPARE_COPIES) continue;
      this.copies.delete(digest);
      await rm(join(entry.path, '..'), { recursive: true, force: true });
    }
  }

  /** Removes every copy (the operator is stopping). */
  async dispose(): Promise<void> {
    const root = this.root;
    this.root = undefined;
    this.copies.clear();
    if (root !== undefined) await rm(await root, { recursive: true, force: true });
  }

  private use(entry: Copy): ChartSnapshot {
    entry.taken = ++this.taken;
    return { path: entry.path, digest: entry.digest };
  }

  private dir(): Promise<string> {
    if (this.root === undefined) {
      const made = (async () => {
        await stat(this.parent);
        return makeProcessDir(this.parent, PREFIX);
      })();
      this.root = made;
      made.catch(() => {
        if (this.root === made) this.root = undefined;
      });
    }
    return this.root;
  }
}

const PREFIX = 'chartpilot-chart-copies-';
