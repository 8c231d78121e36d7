import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { pino } from 'pino';
import { chartDigest } from '../../../src/config/chart-digest.js';
import { gvkKey, type WatchEntry } from '../../../src/config/types.js';
import { CrController, type CrControllerOptions } from '../../../src/controller/cr-controller.js';
import { Manager, ownerKindOf, targetFor } from '../../../src/controller/manager.js';
import type { WorkQueueMetrics } from '../../../src/controller/workqueue.js';
import type { KubeClient, RequestOptions } from '../../../src/kube/rest.js';
import { resourcePath } from '../../../src/kube/resource.js';
import type { ApiResource } from '../../../src/kube/types.js';
import { FINALIZER } from '../../../src/reconcile/names.js';
import { HelmWorld } from '../fakes/helm-world.js';
import { RecordingEvents } from '../fakes/reconcile-ports.js';
import { watchEntry } from './watch-entry-fixture.js';
import type { RemoteChart } from '../../../src/config/types.js';
import { sameTarget, type ReconcileTarget } from '../../../src/reconcile/target.js';
import { ChartSourceError } from '../../../src/registry/errors.js';
import type { ResolvedChart } from '../../../src/registry/resolver.js';
import { FakeClock } from '../fakes/clock.js';

const DEFAULT_PERIOD_MS = 600_000;
const DEFAULT_CONCURRENCY = 3;

const webApps: ApiResource = { group: 'apps.example.com', version: 'v1', apiVersion: 'apps.example.com/v1', kind: 'WebApp', plural: 'webapps', namespaced: true };
const caches: ApiResource = { group: 'apps.example.com', version: 'v1', apiVersion: 'apps.example.com/v1', kind: 'Cache', plural: 'caches', namespaced: true };

/** A controller that runs nothing: it records how the manager built and drove it. */
class RecordingController extends CrController {
  starts = 0;
  enqueuedAll = 0;
  readonly stops: number[] = [];
  constructor(readonly options: CrControllerOptions) {
    super(options);
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
  request<T>(method: string, path: string, _opts: RequestOptions = {}): Promise<T> {
    if (method !== 'GET') this.writes.push(`${method} ${path}`);
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
    masterKey: Buffer.alloc(32, 7),
    helm: world.helm,
    events,
    log: pino({ level: 'silent' }),
    watchNamespaces: ['ns1'],
    defaultReconcilePeriodMs: DEFAULT_PERIOD_MS,
    defaultConcurrency: DEFAULT_CONCURRENCY,
    helmTimeoutMs: 300_000,
    historyMax: 10,
    processStartedAt: world.now - 1_000,
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
    [
      'the chart’s content changes',
      async (chartPath) => {
        await writeFile(join(chartPath, 'values.yaml'), 'replicas: 2\n');
        return {};
      },
    ],
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
      masterKey: Buffer.alloc(32, 7),
      client: new EmptyApi(), helm: new HelmWorld().helm, events: new RecordingEvents(), log: pino({ level: 'silent' }),
      watchNamespaces: [], defaultReconcilePeriodMs: DEFAULT_PERIOD_MS, defaultConcurrency: 1, helmTimeoutMs: 300_000, historyMax: 10, processStartedAt: 0,
      charts: { resolver, defaultRefreshIntervalMs: 60_000, clock },
      createController: (o) => { const c = new RecordingController(o); built.push(c); return c; },
    });
    return { clock, calls, manager, built };
  }

  /** The target the kind's reconciler reads now. */
  const targetOf = (c: RecordingController): ReconcileTarget => (c.options.reconciler as unknown as { opts: { target: () => ReconcileTarget } }).opts.target();

  it('targets the pulled archive, and upgrades every CR of the kind on new content only, like a hot-reloaded chart', async () => {
    const s = withCharts([resolved('1.0.0'), resolved('1.0.0'), resolved('1.1.0')]);
    const entry = watchEntry('WebApp', { chartPath: '', remote });
    await s.manager.add(entry, webApps);
    const c = only(s.built);
    assert.deepEqual([targetOf(c).chartPath, targetOf(c).chartDigest], ['/cache/1.0.0.tgz', 'sha256:1.0.0']);
    await s.clock.advance(60_000);
    assert.equal(c.enqueuedAll, 0, 'an unchanged refresh re-checks nothing');
    await s.clock.advance(60_000);
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
    proxy: { openRun: () => { throw new Error('not run in this test'); } },
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
      masterKey: Buffer.alloc(32, 7),
      helm: new HelmWorld().helm,
      events: new RecordingEvents(),
      log: pino({ level: 'silent' }),
      watchNamespaces: ['ns1'],
      defaultReconcilePeriodMs: DEFAULT_PERIOD_MS,
      defaultConcurrency: DEFAULT_CONCURRENCY,
      helmTimeoutMs: 300_000,
      historyMax: 10,
      processStartedAt: 0,
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
