/**
 * Hot reload: watches watches.yaml and every chart, role and playbook it names; after a burst of edits settles, the
 * new configuration is loaded and applied kind by kind. An invalid edit keeps the last good
 * configuration running and says what is wrong (log line and the reload-result callback). A
 * changed chart that loads reaches its kind's CRs through the manager's rollout: one CR first,
 * the rest once helm deployed it there (chart-rollout.ts).
 */
import { dirname } from 'node:path';
import { watch, type FSWatcher } from 'chokidar';
import type { Logger } from 'pino';
import { gvkKey, type WatchEntry } from '../config/types.js';
import { loadWatches } from '../config/watches.js';
import type { ApiResource } from '../kube/types.js';
import type { Manager } from './manager.js';
import { diffEntries } from './reload-plan.js';
import { errorMessage } from '../lib/errors.js';

export interface ReloaderOptions {
  readonly watchesFile: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The running controllers; only these methods are used (unit tests pass a recording fake). */
  readonly manager: Pick<Manager, 'entries' | 'add' | 'remove' | 'refresh'>;
  readonly log: Logger;
  /** Finds the API resource of each new kind (throws a PreflightError when a CRD is missing). */
  readonly resolve: (entries: readonly WatchEntry[]) => Promise<Map<WatchEntry, ApiResource>>;
  /** Edits closer together than this are one reload. */
  readonly debounceMs?: number;
  /** How long a restarted kind's running reconciles may finish before their helm calls are stopped; default 20 s. */
  readonly drainTimeoutMs?: number;
  /**
   * The same for a kind removed from watches.yaml; default 0: its helm calls are stopped at once
   * (SIGTERM, SIGKILL after the kill grace), so a reload never waits for a hook that may hang.
   */
  readonly removeDrainTimeoutMs?: number;
  /** Told about every reload attempt (for metrics and tests). */
  readonly onResult?: (result: { ok: boolean; problems: readonly string[] }) => void;
}

export class ConfigReloader {
  private watcher: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private watchedCharts = new Set<string>();
  private watching: Promise<void> = Promise.resolve();

  constructor(private readonly opts: ReloaderOptions) {}

  start(): void {
    this.watchedCharts = localCharts(this.opts.manager.entries());
    // atomic: editors and ConfigMap mounts replace files by rename; treat that as a change.
    this.watcher = watch([this.opts.watchesFile, ...this.watchedCharts], { ignoreInitial: true, atomic: true });
    const watcher = this.watcher;
    this.watching = new Promise((resolve) => watcher.once('ready', () => { resolve(); }));
    this.watcher.on('all', (_event, path) => {
      this.opts.log.debug({ path }, 'configuration file changed');
      this.schedule();
    });
    this.watcher.on('error', (err) => {
      this.opts.log.warn({ err: errorMessage(err) }, 'file watcher error');
    });
  }

  /** Resolves once the initial scan is done: edits from then on are noticed. */
  ready(): Promise<void> {
    return this.watching;
  }

  async stop(): Promise<void> {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    await this.watcher?.close();
    this.watcher = undefined;
    await this.running;
  }

  private schedule(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.trigger();
    }, this.opts.debounceMs ?? 500);
    this.timer.unref();
  }

  /** Runs one reload at a time; edits during a reload cause exactly one more. */
  private trigger(): void {
    if (this.running !== undefined) {
      this.again = true;
      return;
    }
    this.running = this.reload()
      .catch((err: unknown) => {
        this.opts.log.error({ err: errorMessage(err) }, 'reload failed; keeping the running configuration');
        this.opts.onResult?.({ ok: false, problems: [String(err)] });
      })
      .finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.trigger();
        }
      });
  }

  /** Loads the files now and applies them (also used directly by tests). */
  async reload(): Promise<void> {
    const { opts } = this;
    const loaded = await loadWatches(opts.watchesFile, opts.env);
    if (!loaded.ok) {
      for (const problem of loaded.problems) opts.log.error({ problem }, 'invalid watches.yaml edit ignored; the last good configuration keeps running');
      opts.onResult?.({ ok: false, problems: loaded.problems });
      return;
    }

    const changes = diffEntries(opts.manager.entries(), loaded.entries);
    const toStart = changes.flatMap((c) => (c.kind === 'add' || c.kind === 'restart' ? [c.entry] : []));
    // Resolve new kinds before stopping anything, so a missing CRD leaves the old controller running.
    const problems: string[] = [];
    let resources = new Map<WatchEntry, ApiResource>();
    try {
      resources = await opts.resolve(toStart);
    } catch (err) {
      const message = errorMessage(err);
      problems.push(message);
      opts.log.error({ problem: message }, 'watches.yaml names a kind the cluster does not serve; that entry is not started');
    }

    let changed = 0;
    for (const change of changes) {
      switch (change.kind) {
        case 'remove':
          await opts.manager.remove(change.key, opts.removeDrainTimeoutMs ?? 0);
          opts.log.info({ key: change.key }, 'controller stopped: its watches entry was removed');
          changed++;
          break;
        case 'add':
        case 'restart': {
          const resource = resources.get(change.entry);
          if (resource === undefined) break;
          // A restart keeps the kind's last good chart: a chart changed with it is still tried on one CR first.
          if (change.kind === 'restart') await opts.manager.remove(gvkKey(change.entry), opts.drainTimeoutMs ?? 20_000, true);
          await opts.manager.add(change.entry, resource);
          changed++;
          break;
        }
        case 'refresh':
          if (await opts.manager.refresh(gvkKey(change.entry), change.entry)) {
            opts.log.info({ kind: change.entry.kind }, change.entry.ansible === undefined ? 'chart or settings changed: a changed chart is tried on one resource of this kind first, then every resource is upgraded; changed settings re-check every one at once' : 'role or settings changed: every resource of this kind will be checked, and run where its inputs changed');
            changed++;
          }
          break;
      }
    }
    this.rewatchCharts();
    opts.log.info({ changes: changed }, 'configuration reloaded');
    opts.onResult?.({ ok: problems.length === 0, problems });
  }

  private rewatchCharts(): void {
    const next = localCharts(this.opts.manager.entries());
    const gone = [...this.watchedCharts].filter((p) => !next.has(p));
    const added = [...next].filter((p) => !this.watchedCharts.has(p));
    if (gone.length > 0) this.watcher?.unwatch(gone);
    if (added.length > 0) this.watcher?.add(added);
    this.watchedCharts = next;
  }
}

/**
 * Files on disk to watch: charts, and the roles and playbooks of Ansible kinds (with a playbook's
 * directory, where its roles/ and vars files are); charts from registries are refreshed by their
 * trackers instead.
 */
export function localCharts(entries: readonly WatchEntry[]): Set<string> {
  const out = new Set<string>();
  for (const e of entries) {
    const a = e.ansible;
    if (a === undefined) {
      if (e.remote === undefined) out.add(e.chartPath);
      continue;
    }
    const runnables: { readonly role?: string | undefined; readonly playbook?: string | undefined }[] = [a, a.finalizer ?? {}];
    for (const r of runnables) {
      if (r.role !== undefined) out.add(r.role);
      if (r.playbook !== undefined) out.add(dirname(r.playbook));
    }
  }
  return out;
}
