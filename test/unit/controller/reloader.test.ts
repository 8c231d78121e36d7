import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { gvkKey, type WatchEntry } from '../../../src/config/types.js';
import { loadWatches } from '../../../src/config/watches.js';
import type { Manager } from '../../../src/controller/manager.js';
import { ConfigReloader, localCharts, type ReloaderOptions } from '../../../src/controller/reloader.js';
import { watchEntry } from './watch-entry-fixture.js';
import type { ApiResource } from '../../../src/kube/types.js';
import { capturingLogger } from '../fakes/reconcile-ports.js';

const WEB_KEY = 'WebApp.v1.apps.example.com';
const CACHE_KEY = 'Cache.v1.apps.example.com';
const QUEUE_KEY = 'Queue.v1.apps.example.com';

/** Records what the reloader asks of the running controllers. */
class FakeManager implements Pick<Manager, 'entries' | 'add' | 'remove' | 'refresh'> {
  readonly calls: string[] = [];
  readonly running = new Map<string, WatchEntry>();
  /** What refresh answers: whether the kind's target changed. */
  refreshChanged = true;

  entries(): WatchEntry[] {
    return [...this.running.values()];
  }
  add(entry: WatchEntry, resource: ApiResource): Promise<void> {
    this.calls.push(`add ${gvkKey(entry)} as ${resource.plural}`);
    this.running.set(gvkKey(entry), entry);
    return Promise.resolve();
  }
  remove(key: string, drainTimeoutMs: number, restarting = false): Promise<void> {
    this.calls.push(`remove ${key} draining ${drainTimeoutMs}${restarting ? ' to restart' : ''}`);
    this.running.delete(key);
    return Promise.resolve();
  }
  refresh(key: string, entry: WatchEntry): Promise<boolean> {
    this.calls.push(`refresh ${key} ${JSON.stringify(entry.overrideValues)}`);
    this.running.set(key, entry);
    return Promise.resolve(this.refreshChanged);
  }
}

function kindEntry(kind: string, extra = ''): string {
  return `- group: apps.example.com\n  version: v1\n  kind: ${kind}\n  chart: ./charts/${kind.toLowerCase()}\n${extra}`;
}

const WEB = kindEntry('WebApp');
const CACHE = kindEntry('Cache');
const QUEUE = kindEntry('Queue');

interface Setup {
  readonly dir: string;
  readonly file: string;
  readonly manager: FakeManager;
  readonly reloader: ConfigReloader;
  readonly resolved: string[][];
  readonly results: { ok: boolean; problems: readonly string[] }[];
  readonly logged: () => string;
  /** Rewrites watches.yaml. */
  write(text: string): Promise<void>;
  /** Fails resolving new kinds with this error. */
  failResolve(err: Error): void;
}

/**
 * A watches.yaml with `initial` (charts for WebApp, Cache and Queue exist beside it), a manager
 * already running what it names, and a reloader on it.
 */
async function setup(t: TestContext, initial: string, options: Partial<ReloaderOptions> = {}): Promise<Setup> {
  const dir = await mkdtemp(join(tmpdir(), 'chartpilot-reloader-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  for (const chart of ['webapp', 'cache', 'queue']) {
    await mkdir(join(dir, 'charts', chart), { recursive: true });
    await writeFile(join(dir, 'charts', chart, 'Chart.yaml'), `apiVersion: v2\nname: ${chart}\nversion: 0.1.0\n`);
  }
  const file = join(dir, 'watches.yaml');
  await writeFile(file, initial);
  const loaded = await loadWatches(file, {});
  assert.ok(loaded.ok, `the initial watches.yaml is valid: ${loaded.ok ? '' : loaded.problems.join('; ')}`);
  const manager = new FakeManager();
  for (const e of loaded.entries) manager.running.set(gvkKey(e), e);

  const resolved: string[][] = [];
  const results: { ok: boolean; problems: readonly string[] }[] = [];
  let resolveError: Error | undefined;
  const { log, text } = capturingLogger();
  const reloader = new ConfigReloader({
    watchesFile: file,
    env: {},
    manager,
    log,
    resolve: (entries) => {
      resolved.push(entries.map((e) => e.kind));
      if (resolveError !== undefined) return Promise.reject(resolveError);
      const plural = (e: WatchEntry): ApiResource => ({ group: e.group, version: e.version, apiVersion: `${e.group}/${e.version}`, kind: e.kind, plural: `${e.kind.toLowerCase()}s`, namespaced: true });
      return Promise.resolve(new Map(entries.map((e) => [e, plural(e)])));
    },
    onResult: (r) => results.push(r),
    ...options,
  });
  t.after(() => reloader.stop());
  return {
    dir,
    file,
    manager,
    reloader,
    resolved,
    results,
    logged: text,
    write: (content) => writeFile(file, content),
    failResolve: (err) => {
      resolveError = err;
    },
  };
}

describe('ConfigReloader.reload', () => {
  it('starts a kind added to watches.yaml and refreshes the kinds that stay', async (t) => {
    const s = await setup(t, WEB);
    await s.write(WEB + CACHE);
    await s.reloader.reload();
    assert.deepEqual(s.resolved, [['Cache']], 'only the new kind is looked up');
    assert.deepEqual(s.manager.calls, [`refresh ${WEB_KEY} {}`, `add ${CACHE_KEY} as caches`]);
    assert.deepEqual(s.results, [{ ok: true, problems: [] }]);
    assert.match(s.logged(), /"changes":2,"msg":"configuration reloaded"/);
  });

  it('stops a kind removed from watches.yaml, draining for the configured time', async (t) => {
    const s = await setup(t, WEB + CACHE, { drainTimeoutMs: 1_500, removeDrainTimeoutMs: 700 });
    await s.write(WEB);
    await s.reloader.reload();
    assert.deepEqual(s.manager.calls, [`remove ${CACHE_KEY} draining 700`, `refresh ${WEB_KEY} {}`]);
    assert.match(s.logged(), /"key":"Cache.v1.apps.example.com","msg":"controller stopped: its watches entry was removed"/);
  });

  it('stops a removed kind’s helm calls at once when no drain time is configured', async (t) => {
    const s = await setup(t, WEB + CACHE);
    await s.write(WEB);
    await s.reloader.reload();
    assert.equal(s.manager.calls[0], `remove ${CACHE_KEY} draining 0`);
  });

  it('restarts a kind whose selector changed: stops it, then starts it anew', async (t) => {
    const s = await setup(t, WEB);
    await s.write(kindEntry('WebApp', '  selector:\n    matchLabels:\n      team: web\n'));
    await s.reloader.reload();
    assert.deepEqual(s.resolved, [['WebApp']]);
    assert.deepEqual(s.manager.calls, [`remove ${WEB_KEY} draining 20000 to restart`, `add ${WEB_KEY} as webapps`]);
    assert.equal(s.manager.running.get(WEB_KEY)?.labelSelector, 'team=web');
  });

  it('refreshes a kind whose overrides changed, saying its resources will be upgraded', async (t) => {
    const s = await setup(t, WEB);
    await s.write(kindEntry('WebApp', '  overrideValues:\n    image.tag: "2"\n'));
    await s.reloader.reload();
    assert.deepEqual(s.resolved, [[]]);
    assert.deepEqual(s.manager.calls, [`refresh ${WEB_KEY} {"image.tag":"2"}`]);
    assert.match(s.logged(), /"kind":"WebApp","msg":"chart or settings changed: a changed chart is tried on one resource of this kind first, then every resource is upgraded; changed settings re-check every one at once"/);
  });

  it('counts no change when a refresh leaves the target as it was', async (t) => {
    const s = await setup(t, WEB);
    s.manager.refreshChanged = false;
    await s.reloader.reload();
    assert.deepEqual(s.manager.calls, [`refresh ${WEB_KEY} {}`]);
    assert.doesNotMatch(s.logged(), /chart or settings changed/);
    assert.match(s.logged(), /"changes":0,"msg":"configuration reloaded"/);
  });

  it('keeps the last good configuration on an invalid edit and logs what is wrong', async (t) => {
    const s = await setup(t, WEB);
    const before = s.manager.entries();
    await s.write(`${CACHE}  reconcilePeriod: soon\n`);
    await s.reloader.reload();
    assert.deepEqual(s.manager.calls, [], 'nothing is stopped, started or refreshed');
    assert.deepEqual(s.resolved, []);
    assert.deepEqual(s.manager.entries(), before);
    assert.equal(s.results.length, 1);
    assert.equal(s.results[0]?.ok, false);
    const [problem] = s.results[0].problems;
    assert.equal(problem, `${s.file} entry 1 (Cache.v1.apps.example.com), line 5: reconcilePeriod "soon" is not a Go duration (expected a number at "soon"); write a number followed by a unit (ns, us, ms, s, m, h), such as 30s, 1m30s, 2h or 500ms`);
    const line = JSON.stringify({ problem, msg: 'invalid watches.yaml edit ignored; the last good configuration keeps running' }).slice(1, -1);
    assert.ok(s.logged().includes(line), `logged: ${line}`);
  });

  it('keeps running what it has when watches.yaml is not even YAML', async (t) => {
    const s = await setup(t, WEB);
    await s.write('- group: [unclosed\n');
    await s.reloader.reload();
    assert.deepEqual(s.manager.calls, []);
    assert.deepEqual(s.results, [{ ok: false, problems: [`${s.file}:2:1: invalid YAML: Flow sequence in block collection must be sufficiently indented and end with a ]`] }]);
  });

  it('starts no kind the cluster does not serve, keeps the controller a restart would replace, applies the rest', async (t) => {
    const s = await setup(t, WEB + CACHE);
    const missing = new Error('the cluster does not serve Queue.v1.apps.example.com: install its CRD first');
    s.failResolve(missing);
    await s.write(kindEntry('WebApp', '  maxConcurrentReconciles: 4\n') + QUEUE);
    await s.reloader.reload();
    assert.deepEqual(s.resolved, [['WebApp', 'Queue']]);
    assert.deepEqual(s.manager.calls, [`remove ${CACHE_KEY} draining 0`], 'the removal still applies; WebApp keeps running as it was');
    assert.equal(s.manager.running.get(WEB_KEY)?.maxConcurrentReconciles, undefined);
    assert.equal(s.manager.running.has(QUEUE_KEY), false);
    assert.deepEqual(s.results, [{ ok: false, problems: [missing.message] }]);
    assert.match(s.logged(), /watches.yaml names a kind the cluster does not serve; that entry is not started/);
  });
});

/** Resolves once a reload result beyond the first `seen` arrived, or after `ms` either way. */
async function waitForResult(s: Setup, seen: number, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (s.results.length === seen && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
}

/** Resolves with the next reload result, or fails after `ms`. */
function nextResult(s: Setup, ms = 10_000): Promise<{ ok: boolean; problems: readonly string[] }> {
  const seen = s.results.length;
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const poll = setInterval(() => {
      const r = s.results[seen];
      if (r !== undefined) {
        clearInterval(poll);
        resolve(r);
      } else if (Date.now() - started > ms) {
        clearInterval(poll);
        reject(new Error(`no reload within ${ms} ms (calls: ${JSON.stringify(s.manager.calls)})`));
      }
    }, 10);
  });
}

describe('ConfigReloader watching files', () => {
  it('applies edits of watches.yaml and of the charts it names on its own', async (t) => {
    const s = await setup(t, WEB, { debounceMs: 50 });
    s.reloader.start();
    await s.reloader.ready();

    const added = nextResult(s);
    await s.write(WEB + CACHE);
    assert.deepEqual(await added, { ok: true, problems: [] });
    assert.ok(s.manager.calls.includes(`add ${CACHE_KEY} as caches`), JSON.stringify(s.manager.calls));

    // The new kind's chart is watched from now on: editing it refreshes.
    s.manager.calls.length = 0;
    // Watching a path added at run time starts with a scan of its own (chokidar has no "ready" for
    // it): edit until the edit is noticed, as a user saving again would.
    const before = s.results.length;
    for (let size = 2; s.results.length === before; size++) {
      assert.ok(size < 12, 'the new chart\'s edits were never noticed');
      await writeFile(join(s.dir, 'charts', 'cache', 'values.yaml'), `size: ${size}\n`);
      await waitForResult(s, before, 2_000);
    }
    assert.deepEqual(s.results[before], { ok: true, problems: [] });
    assert.ok(s.manager.calls.includes(`refresh ${CACHE_KEY} {}`), JSON.stringify(s.manager.calls));

    // An invalid edit: reported, nothing applied.
    s.manager.calls.length = 0;
    const rejected = nextResult(s);
    await s.write('- kind: [\n');
    assert.equal((await rejected).ok, false);
    assert.deepEqual(s.manager.calls, []);
    assert.deepEqual(
      s.manager.entries().map((e) => e.kind),
      ['WebApp', 'Cache'],
    );
  });
});

describe('localCharts: the files hot reload watches', () => {
  it('charts on disk, and the roles, playbook directories and finalizer roles of Ansible kinds', () => {
    const ansible = { vars: {}, finalizer: undefined, manageStatus: true, watchClusterScopedResources: false, snakeCaseParameters: true, watchAnnotationsChanges: false, markUnsafe: false, blacklist: [], maxRunnerArtifacts: 20 };
    const files = localCharts([
      watchEntry('A', { chartPath: '/charts/a' }),
      watchEntry('B', { chartPath: '', ansible: { ...ansible, role: '/roles/b', finalizer: { name: 'x.io/f', role: '/roles/cleanup', vars: {} } } }),
      watchEntry('C', { chartPath: '', ansible: { ...ansible, playbook: '/project/site.yml' } }),
    ]);
    assert.deepEqual([...files].sort(), ['/charts/a', '/project', '/roles/b', '/roles/cleanup']);
  });
});
