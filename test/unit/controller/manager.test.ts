import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it, type TestContext } from 'node:test';
import { pino } from 'pino';
import { chartDigest } from '../../../src/config/chart-digest.js';
import { gvkKey, type WatchEntry } from '../../../src/config/types.js';
import { CrController, type CrControllerOptions } from '../../../src/controller/cr-controller.js';
import { Manager, ownerKindOf, targetFor } from '../../../src/controller/manager.js';
import type { WorkQueueMetrics } from '../../../src/lib/work-queue.js';
import type { KubeClient, RequestOptions } from '../../../src/kube/rest.js';
import { resourcePath } from '../../../src/kube/resource.js';
import type { ApiResource } from '../../../src/kube/types.js';
import { FINALIZER, LEGACY_FINALIZER } from '../../../src/engines/helm/names.js';
import type { Condition, CrStatus, CustomResource } from '../../../src/core/model.js';
import { ReconcileFailure } from '../../../src/engines/helm/reconciler.js';
import { HelmError } from '../../../src/helm/types.js';
import { HelmWorld } from '../fakes/helm-world.js';
import { RecordingEvents } from '../fakes/reconcile-ports.js';
import { watchEntry } from './watch-entry-fixture.js';
import type { RemoteChart } from '../../../src/config/types.js';
import { sameTarget, type ReconcileTarget } from '../../../src/engines/helm/target.js';
import { ChartSourceError } from '../../../src/registry/errors.js';
import type { ResolvedChart } from '../../../src/registry/resolver.js';
import { FakeClock } from '../fakes/clock.js';
import { RecordKeys } from '../../../src/helm/record-mac.js';

const DEFAULT_PERIOD_MS = 600_000;
/** Where the managers of this file copy charts (most tests never stop theirs). */
const COPIES = mkdtempSync(join(tmpdir(), 'chartpilot-manager-copies-'));
after(() => {
  rmSync(COPIES, { recursive: true, force: true });
});
const DEFAULT_CONCURRENCY = 3;

const webApps: ApiResource = { group: 'apps.example.com', version: 'v1', apiVersion: 'apps.example.com/v1', kind: 'WebApp', plural: 'webapps', namespaced: true };
const caches: ApiResource = { group: 'apps.example.com', version: 'v1', apiVersion: 'apps.example.com/v1', kind: 'Cache', plural: 'caches', namespaced: true };

/** A controller that runs nothing: it records how the manager built and drove it. */
class RecordingController extends CrController {
  starts = 0;
  enqueuedAll = 0;
  readonly stops: number[] = [];
  /** What its cache holds, as list() answers. */
  cached: CustomResource[] = [];
  /** Keys enqueued one by one. */
  readonly enqueued: string[] = [];
  constructor(readonly options: CrControllerOptions) {
    super(options);
  }
  override list(): CustomResource[] {
    return this.cached;
  }
  override enqueue(key: string): void {
    this.enqueued.push(key);
  }
  override start(): void {
    this.starts++;
  }
  override stop(drainTimeoutMs: number): Promise<void> {
    this.stops.push(drainTimeoutMs);
    return Promise.resolve();
  }
  override enqueueAll(): void {
    this.enqueuedAll++;
  }
}

/** An API server with nothing in it: every LIST is empty, every write succeeds. */
class EmptyApi implements KubeClient {
  readonly writes: string[] = [];
  /** The last body written to each path. */
  readonly bodies = new Map<string, unknown>();
  request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    if (method !== 'GET') this.writes.push(`${method} ${path}`);
    if (method !== 'GET') this.bodies.set(path, opts.body);
    return Promise.resolve({ metadata: {}, items: [] } as T);
  }
  watch(): never {
    throw new Error('controllers are fakes here: nothing watches');
  }
  resourceFor(): Promise<ApiResource> {
    return Promise.reject(new Error('not used'));
  }
  forward(): never {
    throw new Error('not used');
  }
  pathFor = resourcePath;
}

async function chartDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'chartpilot-manager-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'Chart.yaml'), 'apiVersion: v2\nname: webapp\nversion: 0.1.0\n');
  await writeFile(join(dir, 'values.yaml'), 'replicas: 1\n');
  return dir;
}

function setup() {
  const world = new HelmWorld();
  const api = new EmptyApi();
  const events = new RecordingEvents();
  const built: RecordingController[] = [];
  const metricsFor: string[] = [];
  const reconciled: string[] = [];
  const manager = new Manager({
    client: api,
    recordKeys: new RecordKeys(Buffer.alloc(32, 7)),
    helm: world.helm,
    events,
    log: pino({ level: 'silent' }),
    watchNamespaces: ['ns1'],
    operatorNamespace: 'operators',
    defaultReconcilePeriodMs: DEFAULT_PERIOD_MS,
    defaultConcurrency: DEFAULT_CONCURRENCY,
    helmTimeoutMs: 300_000,
    historyMax: 10, chartCopiesDir: COPIES,
    server: { clock: { now: () => world.now }, startedAtRevision: '100' },
    queueMetrics: (controller): WorkQueueMetrics => {
      metricsFor.push(controller);
      return {};
    },
    onReconciled: (controller, result, ms) => reconciled.push(`${controller} ${result} ${ms}`),
    createController: (o) => {
      const c = new RecordingController(o);
      built.push(c);
      return c;
    },
  });
  return { world, api, events, manager, built, metricsFor, reconciled };
}

function only(built: RecordingController[]): RecordingController {
  assert.equal(built.length, 1);
  const [c] = built;
  assert.ok(c);
  return c;
}

/** A manager running WebApp and Cache, both on one chart. */
async function twoKinds(t: TestContext) {
  const s = setup();
  const chartPath = await chartDir(t);
  const web = watchEntry('WebApp', { chartPath });
  const cache = watchEntry('Cache', { chartPath });
  await s.manager.add(web, webApps);
  await s.manager.add(cache, caches);
  return { ...s, chartPath, web, cache };
}

describe('targetFor', () => {
  it('resolves the entry into a target: owner kind, chart digest, overrides, confinement', async (t) => {
    const chart = await chartDir(t);
    const entry = watchEntry('WebApp', {
      group: 'apps.example.com',
      chartPath: chart,
      overrideValues: { 'image.tag': '2' },
      reconcilePeriodMs: 30_000,
      watchDependentResources: false,
      allowClusterScoped: true,
    });
    assert.deepEqual(await targetFor(entry, DEFAULT_PERIOD_MS), {
      ownerKind: 'WebApp.apps.example.com',
      chartPath: chart,
      chartDigest: await chartDigest(chart),
      overrides: { 'image.tag': '2' },
      reconcilePeriodMs: 30_000,
      watchDependentResources: false,
      allowClusterScoped: true,
      allowCrossNamespace: false,
      serviceAccount: undefined,
    });
  });

  it('takes the operator’s period when the entry names none, and keeps an explicit 0', async (t) => {
    const chartPath = await chartDir(t);
    assert.equal((await targetFor(watchEntry('WebApp', { chartPath }), DEFAULT_PERIOD_MS)).reconcilePeriodMs, DEFAULT_PERIOD_MS);
    assert.equal((await targetFor(watchEntry('WebApp', { chartPath, reconcilePeriodMs: 0 }), DEFAULT_PERIOD_MS)).reconcilePeriodMs, 0);
  });

  it('carries the entry’s driftDetection, so a reload that changes it re-checks the kind’s CRs', async (t) => {
    const chartPath = await chartDir(t);
    const driftDetection = { mode: 'warn' as const, ignore: [{ paths: ['/spec/replicas'], target: { kind: 'Deployment' } }] };
    const before = await targetFor(watchEntry('WebApp', { chartPath }), DEFAULT_PERIOD_MS);
    const after = await targetFor(watchEntry('WebApp', { chartPath, driftDetection }), DEFAULT_PERIOD_MS);
    assert.equal(before.driftDetection, undefined);
    assert.deepEqual(after.driftDetection, driftDetection);
    assert.equal(sameTarget(before, after), false);
  });

  it('names a kind without a group by its kind alone', () => {
    assert.equal(ownerKindOf(watchEntry('WebApp', { group: '' })), 'WebApp');
    assert.equal(ownerKindOf(watchEntry('WebApp', { group: 'apps.example.com' })), 'WebApp.apps.example.com');
  });
});

describe('Manager', () => {
  it('starts a controller per added kind, built from the entry and the operator’s defaults', async (t) => {
    const { manager, built, metricsFor } = setup();
    const entry = watchEntry('WebApp', { group: 'apps.example.com', chartPath: await chartDir(t), labelSelector: 'team=web' });
    await manager.add(entry, webApps);
    const c = only(built);
    assert.equal(c.starts, 1);
    assert.equal(c.options.name, 'webapp');
    assert.equal(c.options.resource, webApps);
    assert.deepEqual(c.options.namespaces, ['ns1']);
    assert.equal(c.options.labelSelector, 'team=web');
    // Two workers per helm slot, and as many follow-up workers as slots (helm itself is held to the slots).
    assert.equal(c.options.concurrency, 2 * DEFAULT_CONCURRENCY);
    assert.equal(c.options.followUpWorkers, DEFAULT_CONCURRENCY);
    assert.deepEqual(c.options.finalizers(), [FINALIZER, LEGACY_FINALIZER], 'a chart kind holds its CRs with Helm’s finalizers');
    assert.deepEqual(metricsFor, ['webapp']);
    assert.deepEqual(manager.entries(), [entry]);
    assert.deepEqual(manager.controllers(), [c]);
  });

  it('uses the entry’s concurrency when it names one, and reports reconciles under the controller’s name', async (t) => {
    const { manager, built, reconciled } = setup();
    await manager.add(watchEntry('Cache', { chartPath: await chartDir(t), maxConcurrentReconciles: 7 }), caches);
    const c = only(built);
    assert.equal(c.options.concurrency, 14);
    assert.equal(c.options.followUpWorkers, 7);
    c.options.onReconciled?.('requeue_after', 12);
    assert.deepEqual(reconciled, ['cache requeue_after 12']);
  });

  it('does not re-check any resource when a refresh leaves the target as it was', async (t) => {
    const { manager, built } = setup();
    const chartPath = await chartDir(t);
    const entry = watchEntry('WebApp', { chartPath });
    await manager.add(entry, webApps);
    assert.equal(await manager.refresh(gvkKey(entry), watchEntry('WebApp', { chartPath })), false);
    // An entry change that resolves to the same target (the default period, spelled out).
    const spelledOut = watchEntry('WebApp', { chartPath, reconcilePeriodMs: DEFAULT_PERIOD_MS, dryRunOption: 'server' });
    assert.equal(await manager.refresh(gvkKey(entry), spelledOut), false);
    assert.equal(only(built).enqueuedAll, 0);
    assert.deepEqual(manager.entries(), [spelledOut], 'the entry is still replaced');
  });

  const changes: [string, (chartPath: string) => Promise<Partial<WatchEntry>>][] = [
    ['the overrides change', () => Promise.resolve({ overrideValues: { 'image.tag': '2' } })],
    ['the period changes', () => Promise.resolve({ reconcilePeriodMs: 30_000 })],
    ['allowClusterScoped changes', () => Promise.resolve({ allowClusterScoped: true })],
    ['allowCrossNamespace changes', () => Promise.resolve({ allowCrossNamespace: true })],
  ];
  for (const [what, change] of changes) {
    it(`re-checks every resource of the kind when ${what}`, async (t) => {
      const { manager, built } = setup();
      const chartPath = await chartDir(t);
      const entry = watchEntry('WebApp', { chartPath });
      await manager.add(entry, webApps);
      const next = watchEntry('WebApp', { chartPath, ...(await change(chartPath)) });
      assert.equal(await manager.refresh(gvkKey(entry), next), true);
      assert.equal(only(built).enqueuedAll, 1);
      assert.deepEqual(manager.entries(), [next]);
    });
  }

  it('re-checks only the kind that changed', async (t) => {
    const { manager, built, chartPath, cache } = await twoKinds(t);
    assert.equal(await manager.refresh(gvkKey(cache), watchEntry('Cache', { chartPath, allowCrossNamespace: true })), true);
    assert.deepEqual(
      built.map((c) => `${c.options.name}:${c.enqueuedAll}`),
      ['webapp:0', 'cache:1'],
    );
  });

  it('refreshes nothing for a kind it does not run', async (t) => {
    const { manager } = setup();
    assert.equal(await manager.refresh('WebApp.v1.g.example.com', watchEntry('WebApp', { chartPath: await chartDir(t) })), false);
    assert.deepEqual(manager.entries(), []);
  });

  it('gives the reconciler the refreshed target from then on', async (t) => {
    const { manager, built, world, api, events } = setup();
    const chartPath = await chartDir(t);
    const entry = watchEntry('WebApp', { group: 'apps.example.com', chartPath });
    await manager.add(entry, webApps);
    const { reconciler, log } = only(built).options;
    const cr = { apiVersion: 'apps.example.com/v1', kind: 'WebApp', metadata: { name: 'demo', namespace: 'ns1', generation: 1, finalizers: [FINALIZER] }, spec: { replicas: 1 } };

    assert.deepEqual(await reconciler.reconcile(cr, log), { requeueAfterMs: DEFAULT_PERIOD_MS });
    await manager.refresh(gvkKey(entry), watchEntry('WebApp', { group: 'apps.example.com', chartPath, overrideValues: { replicas: '5' }, reconcilePeriodMs: 0 }));
    assert.deepEqual(await reconciler.reconcile(cr, log), {}, 'the new period: none');

    assert.deepEqual(
      world.history('ns1', 'demo').map((r) => [r.values, r.ownerKind]),
      [
        [{ replicas: 1 }, 'WebApp.apps.example.com'],
        [{ replicas: 5 }, 'WebApp.apps.example.com'],
      ],
    );
    assert.ok(events.events.some((e) => e.reason === 'OverrideValuesInUse' && e.message.includes('"replicas"')), 'events go to the manager’s sink');
    assert.ok(api.writes.includes('PATCH /apis/apps.example.com/v1/namespaces/ns1/webapps/demo/status'), 'status is written to the kind’s resource');
  });

  it('stops and forgets a removed kind, and ignores removing one it does not run', async (t) => {
    const { manager, built, web, cache } = await twoKinds(t);
    await manager.remove(gvkKey(web), 2_500);
    await manager.remove('Nope.v1.g.example.com', 2_500);
    assert.deepEqual(
      built.map((c) => c.stops),
      [[2_500], []],
    );
    assert.deepEqual(manager.entries(), [cache]);
    assert.equal(await manager.refresh(gvkKey(web), web), false, 'a removed kind is not refreshed');
  });

  it('stops every controller on stop', async (t) => {
    const { manager, built } = await twoKinds(t);
    await manager.stop(1_000);
    assert.deepEqual(
      built.map((c) => c.stops),
      [[1_000], [1_000]],
    );
    assert.deepEqual(manager.entries(), []);
  });
});

describe('Manager: a changed chart goes to one CR first', () => {
  const cond = (type: string, status: Condition['status'], reason: string): Condition => ({ type, status, reason, message: '', lastTransitionTime: '2026-01-01T00:00:00Z' });
  const READY: CrStatus = { conditions: [cond('Ready', 'True', 'AllResourcesReady')] };
  const FAILING: CrStatus = { conditions: [cond('ReleaseFailed', 'True', 'UpgradeError')] };
  const cr = (name: string, status?: CrStatus): CustomResource => ({
    apiVersion: 'apps.example.com/v1',
    kind: 'WebApp',
    metadata: { name, namespace: 'ns1', uid: `uid-${name}`, generation: 1, finalizers: [FINALIZER] },
    spec: { replicas: 1 },
    ...(status === undefined ? {} : { status }),
  });

  async function running(t: TestContext) {
    const s = setup();
    const chartPath = await chartDir(t);
    const entry = watchEntry('WebApp', { group: 'apps.example.com', chartPath });
    await s.manager.add(entry, webApps);
    t.after(() => s.manager.stop(0));
    const c = only(s.built);
    const { reconciler, log } = c.options;
    /** The chart helm was given in the last install or upgrade of `name`. */
    const chartOf = (name: string): string => (s.world.charts.filter((l) => l.startsWith(`ns1/${name} `)).at(-1) ?? '').split(' ')[1] ?? '';
    const statusOf = (name: string): CrStatus | undefined => (s.api.bodies.get(`/apis/apps.example.com/v1/namespaces/ns1/webapps/${name}/status`) as { status?: CrStatus } | undefined)?.status;
    const held = (name: string): Condition | undefined => statusOf(name)?.conditions?.find((x) => x.type === 'ChartChangeHeld');
    return { ...s, chartPath, entry, c, reconcile: (x: CustomResource) => reconciler.reconcile(x, log), chartOf, statusOf, held };
  }

  it('serves a private copy of the chart, tries a changed one on the healthiest CR, and upgrades the rest once helm deployed it there', async (t) => {
    const r = await running(t);
    r.c.cached = [cr('a', FAILING), cr('b', READY)];
    await r.reconcile(cr('a'));
    await r.reconcile(cr('b'));
    const good = r.chartOf('a');
    assert.notEqual(good, r.chartPath, 'helm is given a copy, not the path people edit');
    assert.equal(r.chartOf('b'), good);

    await writeFile(join(r.chartPath, 'values.yaml'), 'replicas: 2\n');
    assert.equal(await r.manager.refresh(gvkKey(r.entry), r.entry), true);
    assert.equal(r.c.enqueuedAll, 0, 'not every CR at once');
    assert.deepEqual(r.c.enqueued, ['ns1/b'], 'the Ready one tries it, not the failing one');
    await r.reconcile(cr('a'));
    assert.equal(r.chartOf('a'), good, 'the others keep the last good chart meanwhile');
    await r.reconcile(cr('b'));
    const next = r.chartOf('b');
    assert.notEqual(next, good);
    assert.equal(r.c.enqueuedAll, 1, 'deployed there: every CR follows');
    await r.reconcile(cr('a'));
    assert.equal(r.chartOf('a'), next);
  });

  it('holds a change that failed there: an Event on it, ChartChangeHeld on the others and new CRs, which get the last good chart; a fix is tried on it first', async (t) => {
    const r = await running(t);
    r.c.cached = [cr('a', READY), cr('b', READY)];
    await r.reconcile(cr('a'));
    await r.reconcile(cr('b'));
    const good = r.chartOf('a');

    await writeFile(join(r.chartPath, 'values.yaml'), 'replicas: {{ broken\n');
    await r.manager.refresh(gvkKey(r.entry), r.entry);
    assert.deepEqual(r.c.enqueued, ['ns1/a']);
    const error = 'parse error at (webapp/templates/cm.yaml:1): unclosed action';
    r.world.failNext = { error: new HelmError('render', error, 'install'), recorded: false };
    await assert.rejects(r.reconcile(cr('a')), ReconcileFailure);
    const i = r.events.events.findIndex((e) => e.reason === 'ChartChangeHeld');
    assert.equal(r.events.on[i], 'ns1/a', 'the Event is on the CR it failed on');
    assert.match(r.events.events[i]?.message ?? '', new RegExp(`^chart ${r.chartPath} changed and failed here, the first resource it was tried on \\(helm install failed: ${error.replace(/[()]/gu, '\\$&')}\\)`, 'u'));
    assert.equal(r.c.enqueuedAll, 1, 'the others are told');

    await r.reconcile(cr('b'));
    assert.equal(r.chartOf('b'), good);
    assert.equal(r.held('b')?.reason, 'CanaryFailed');
    assert.match(r.held('b')?.message ?? '', new RegExp(`^chart ${r.chartPath} changed, and the change is held: it failed on ns1/a`, 'u'));
    assert.match(r.held('b')?.message ?? '', /unclosed action/u);
    assert.equal((r.statusOf('b')?.['chartpilot'] as { summary?: { state?: string } } | undefined)?.summary?.state, 'Held');
    await r.reconcile(cr('c'));
    assert.equal(r.chartOf('c'), good, 'a new CR installs the last good chart');
    assert.ok(r.held('c') !== undefined);

    await writeFile(join(r.chartPath, 'values.yaml'), 'replicas: 3\n');
    await r.manager.refresh(gvkKey(r.entry), r.entry);
    assert.deepEqual(r.c.enqueued, ['ns1/a', 'ns1/a'], 'the fix is tried where the change failed');
    await r.reconcile(cr('a'));
    const fixed = r.chartOf('a');
    assert.notEqual(fixed, good);
    await r.reconcile(cr('b', r.statusOf('b')));
    assert.equal(r.chartOf('b'), fixed);
    assert.equal(r.held('b'), undefined, 'nothing is held any more');
  });
});

describe('Manager: charts from registries', () => {
  const remote = { type: 'oci', reference: 'oci://r/c/webapp', location: 'r', name: 'c/webapp', version: '^1', digest: undefined, refreshIntervalMs: undefined, pullSecret: undefined } as const;
  const resolved = (version: string): ResolvedChart => ({ reference: remote.reference, version, digest: `sha256:${version}`, announced: undefined, path: `/cache/${version}.tgz` });

  function withCharts(answers: (ResolvedChart | ChartSourceError)[]) {
    const clock = new FakeClock();
    const calls: { version: string | undefined; current: string | undefined }[] = [];
    const resolver = {
      resolve: (r: RemoteChart, current?: ResolvedChart): Promise<ResolvedChart> => {
        calls.push({ version: r.version, current: current?.version });
        const a = answers[Math.min(calls.length - 1, answers.length - 1)];
        return a instanceof ChartSourceError || a === undefined ? Promise.reject(a ?? new Error('none')) : Promise.resolve(a);
      },
      cached: () => Promise.resolve(undefined),
    };
    const built: RecordingController[] = [];
    const manager = new Manager({
      recordKeys: new RecordKeys(Buffer.alloc(32, 7)),
      client: new EmptyApi(), helm: new HelmWorld().helm, events: new RecordingEvents(), log: pino({ level: 'silent' }),
      watchNamespaces: [], operatorNamespace: 'operators', defaultReconcilePeriodMs: DEFAULT_PERIOD_MS, defaultConcurrency: 1, helmTimeoutMs: 300_000, historyMax: 10, chartCopiesDir: COPIES, server: { clock: { now: () => 0 }, startedAtRevision: '100' },
      charts: { resolver, defaultRefreshIntervalMs: 60_000, clock },
      createController: (o) => { const c = new RecordingController(o); built.push(c); return c; },
    });
    return { clock, calls, manager, built };
  }

  /** The target the kind's reconciler reads now. */
  const targetOf = (c: RecordingController): ReconcileTarget => (c.options.reconciler as unknown as { opts: { target: () => ReconcileTarget } }).opts.target();

  it('targets the pulled archive, and rolls out new content only, one CR first, like a hot-reloaded chart', async () => {
    const s = withCharts([resolved('1.0.0'), resolved('1.0.0'), resolved('1.1.0')]);
    const entry = watchEntry('WebApp', { chartPath: '', remote });
    await s.manager.add(entry, webApps);
    const c = only(s.built);
    assert.deepEqual([targetOf(c).chartPath, targetOf(c).chartDigest], ['/cache/1.0.0.tgz', 'sha256:1.0.0']);
    await s.clock.advance(60_000);
    assert.equal(c.enqueuedAll, 0, 'an unchanged refresh re-checks nothing');
    await s.clock.advance(60_000);
    assert.equal(c.enqueuedAll, 0, 'new content goes to one CR first');
    assert.equal(targetOf(c).chartPath, '/cache/1.0.0.tgz', 'the others keep the last good archive');
    // No CR to try it on yet: the first one reconciled tries it; helm deploying it there rolls it out.
    const opts = (c.options.reconciler as unknown as { opts: { target: (cr?: CustomResource) => ReconcileTarget; onChartTrial: (cr: CustomResource, t: ReconcileTarget, trial: { kind: 'deployed' }) => void } }).opts;
    const first: CustomResource = { metadata: { name: 'first', namespace: 'ns1' } };
    const tried = opts.target(first);
    assert.equal(tried.chartPath, '/cache/1.1.0.tgz');
    opts.onChartTrial(first, tried, { kind: 'deployed' });
    assert.equal(c.enqueuedAll, 1);
    assert.deepEqual([targetOf(c).chartPath, targetOf(c).chartDigest], ['/cache/1.1.0.tgz', 'sha256:1.1.0']);
    // A reload that leaves the entry alone asks the registry nothing.
    const before = s.calls.length;
    assert.equal(await s.manager.refresh(gvkKey(entry), entry), false);
    assert.equal(s.calls.length, before);
    await s.manager.stop(0);
    assert.equal(s.clock.pending, 0, 'no refresh is left scheduled');
  });

  it('an unavailable chart: the target says why; a reload with another range resolves anew', async () => {
    const s = withCharts([new ChartSourceError('NoMatchingVersion', 'no version matches ^1'), resolved('2.0.0')]);
    const entry = watchEntry('WebApp', { chartPath: '', remote });
    await s.manager.add(entry, webApps);
    const c = only(s.built);
    assert.deepEqual(targetOf(c).chartUnavailable, { reason: 'NoMatchingVersion', message: 'no version matches ^1' });
    const next = { ...entry, remote: { ...remote, version: '^2' } };
    assert.equal(await s.manager.refresh(gvkKey(entry), next), true);
    assert.deepEqual(s.calls.at(-1), { version: '^2', current: undefined });
    assert.equal(targetOf(c).chartUnavailable, undefined);
    assert.equal(targetOf(c).chartPath, '/cache/2.0.0.tgz');
    await s.manager.stop(0);
  });
});

describe('Manager: Ansible kinds', () => {
  const ansibleSource = {
    role: '/roles/webapp',
    vars: {},
    finalizer: undefined,
    manageStatus: true,
    watchClusterScopedResources: false,
    snakeCaseParameters: true,
    watchAnnotationsChanges: false,
    markUnsafe: false,
    blacklist: [],
    maxRunnerArtifacts: 20,
  };
  const engine = (digests: string[]) => ({
    runs: { run: () => Promise.reject(new Error('not run in this test')) },
    proxy: { openSession: () => { throw new Error('not run in this test'); } },
    extraVars: () => ({}),
    runtime: () => Promise.reject(new Error('not run in this test')),
    settings: { verbosity: 2, extraArgs: [], rolesPath: [], collectionsPath: [], injectOwnerRef: true, timeoutMs: 60_000, artifactsDir: '/tmp/a' },
    digest: (r: { role?: string | undefined }) => {
      digests.push(r.role ?? '');
      return Promise.resolve(`digest-${String(digests.length)}`);
    },
  });

  function ansibleSetup(withEngine: boolean | 'lazy', digests: string[] = [], starts: { n: number } = { n: 0 }) {
    const built: RecordingController[] = [];
    const manager = new Manager({
      client: new EmptyApi(),
      recordKeys: new RecordKeys(Buffer.alloc(32, 7)),
      helm: new HelmWorld().helm,
      events: new RecordingEvents(),
      log: pino({ level: 'silent' }),
      watchNamespaces: ['ns1'],
      operatorNamespace: 'operators',
      defaultReconcilePeriodMs: DEFAULT_PERIOD_MS,
      defaultConcurrency: DEFAULT_CONCURRENCY,
      helmTimeoutMs: 300_000,
      historyMax: 10, chartCopiesDir: COPIES,
      server: { clock: { now: () => 0 }, startedAtRevision: '100' },
      createController: (o) => {
        const c = new RecordingController(o);
        built.push(c);
        return c;
      },
      ...(withEngine === 'lazy'
        ? {
            ansible: () => {
              starts.n++;
              return Promise.resolve(engine(digests));
            },
          }
        : withEngine
          ? { ansible: engine(digests) }
          : {}),
    });
    return { manager, built, digests };
  }

  it('gives an Ansible entry the Ansible reconciler, digesting its role (never a chart at "")', async () => {
    const s = ansibleSetup(true);
    await s.manager.add(watchEntry('WebApp', { chartPath: '', ansible: ansibleSource }), webApps);
    const c = only(s.built);
    assert.equal(c.options.reconciler.constructor.name, 'AnsibleReconciler');
    assert.deepEqual(s.digests, ['/roles/webapp']);
    assert.equal(c.options.concurrency, DEFAULT_CONCURRENCY);
  });

  it('tells the controller the entry’s finalizer (a status write to a CR being deleted keeps it held), and the reloaded one after a reload', async () => {
    const s = ansibleSetup(true);
    const entry = watchEntry('WebApp', { chartPath: '', ansible: { ...ansibleSource, finalizer: { name: 'cache.example.com/finalizer', role: '/roles/memfin', vars: {} } } });
    await s.manager.add(entry, webApps);
    const c = only(s.built);
    assert.deepEqual(c.options.finalizers(), ['cache.example.com/finalizer']);
    const renamed = watchEntry('WebApp', { chartPath: '', ansible: { ...ansibleSource, finalizer: { name: 'cache.example.com/cleanup', vars: { state: 'absent' } } } });
    await s.manager.refresh(gvkKey(renamed), renamed);
    assert.deepEqual(c.options.finalizers(), ['cache.example.com/cleanup']);
    const none = watchEntry('WebApp', { chartPath: '', ansible: ansibleSource });
    await s.manager.refresh(gvkKey(none), none);
    assert.deepEqual(c.options.finalizers(), [], 'an entry without a finalizer holds no CR');
  });

  it('a changed role re-checks every CR of the kind; an unchanged one none', async () => {
    const s = ansibleSetup(true);
    const entry = watchEntry('WebApp', { chartPath: '', ansible: ansibleSource });
    await s.manager.add(entry, webApps);
    assert.equal(await s.manager.refresh(gvkKey(entry), entry), true, 'the fake digest changes on every call');
    assert.equal(only(s.built).enqueuedAll, 1);
  });

  it('starts a lazily given engine when an Ansible kind is added (a hot reload may add the first)', async () => {
    const starts = { n: 0 };
    const s = ansibleSetup('lazy', [], starts);
    await s.manager.add(watchEntry('WebApp', { chartPath: '', ansible: ansibleSource }), webApps);
    assert.equal(starts.n >= 1, true);
    assert.equal(only(s.built).options.reconciler.constructor.name, 'AnsibleReconciler');
  });

  it('refuses an Ansible entry when the engine is not set up, saying so', async () => {
    const s = ansibleSetup(false);
    await assert.rejects(s.manager.add(watchEntry('WebApp', { chartPath: '', ansible: ansibleSource }), webApps), /Ansible kinds are not enabled/u);
  });
});
