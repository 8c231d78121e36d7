import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import type { AnsibleSource } from '../../../../src/config/types.js';
import type { RunOutcome, RunRequest } from '../../../../src/engines/ansible/runner.js';
import type { CrWriter } from '../../../../src/core/ports.js';
import { AnsibleReconciler } from '../../../../src/engines/ansible/reconciler.js';
import type { DependentsView, LiveObject, RunContext } from '../../../../src/engines/ansible/ports.js';
import type { AnsibleTarget } from '../../../../src/engines/ansible/target.js';
import type { KubeObject } from '../../../../src/kube/types.js';
import { ReconcileFailure } from '../../../../src/core/outcome.js';
import type { CustomResource, ObjectRef } from '../../../../src/core/model.js';
import { summarizeSpec } from '../../../../src/core/spec-summary.js';
import { RecordingEvents } from '../../fakes/reconcile-ports.js';
import { FakeDependencies, FakeSources } from '../../fakes/composition-ports.js';

const log = pino({ level: 'silent' });
const FINALIZER = 'demo.example.com/finalizer';

function source(over: Partial<AnsibleSource> = {}): AnsibleSource {
  return {
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
    ...over,
  };
}

function target(over: Partial<AnsibleTarget> = {}, src: AnsibleSource = source()): AnsibleTarget {
  return {
    ownerKind: 'WebApp.demo.example.com',
    gvk: { group: 'demo.example.com', version: 'v1', kind: 'WebApp' },
    apiVersion: 'demo.example.com/v1',
    source: src,
    finalizerRunnable: undefined,
    inputs: {
      runnableDigest: 'role-digest',
      finalizerDigest: undefined,
      vars: src.vars,
      finalizer: src.finalizer === undefined ? undefined : { name: src.finalizer.name, vars: src.finalizer.vars },
      snakeCaseParameters: true,
      markUnsafe: false,
      allowClusterScoped: false,
      allowCrossNamespace: false,
      serviceAccount: undefined,
      rolesPath: [],
      collectionsPath: [],
      ansibleArgs: [],
      injectOwnerRef: true,
    },
    runPeriodMs: undefined,
    recheckPeriodMs: 60_000,
    watchDependentResources: true,
    allowClusterScoped: false,
    allowCrossNamespace: false,
    serviceAccount: undefined,
    bookkeeping: 'status',
    ...over,
  };
}

const CM: ObjectRef = { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns', name: 'web' };

/** The API server, for one CR: merge patches applied, resourceVersion bumped. */
class FakeCluster implements CrWriter {
  cr: CustomResource & { spec?: unknown };
  statusWrites: Record<string, unknown>[] = [];
  annotationWrites = 0;
  finalizerWrites: (readonly string[])[] = [];
  /** Dependents by refKey-like name → object (content). */
  dependents = new Map<string, KubeObject>();

  constructor(spec: unknown, meta: Partial<CustomResource['metadata']> = {}) {
    this.cr = { apiVersion: 'demo.example.com/v1', kind: 'WebApp', metadata: { name: 'web', namespace: 'ns', uid: 'uid-1', generation: 1, resourceVersion: '1', ...meta }, spec };
  }
  private bump(): void {
    this.cr = { ...this.cr, metadata: { ...this.cr.metadata, resourceVersion: String(Number(this.cr.metadata.resourceVersion) + 1) } };
  }
  /** What the informer cache holds: no spec, its summary instead. */
  cached(): CustomResource {
    const { spec, ...rest } = this.cr;
    return { ...rest, specSummary: summarizeSpec(spec) };
  }
  setSpec(spec: unknown): void {
    this.cr = { ...this.cr, spec, metadata: { ...this.cr.metadata, generation: (this.cr.metadata.generation ?? 0) + 1 } };
    this.bump();
  }
  read(): Promise<CustomResource> {
    return Promise.resolve(structuredClone(this.cr));
  }
  patchStatus(_cr: CustomResource, patch: Readonly<Record<string, unknown>>): Promise<string | undefined> {
    this.statusWrites.push(structuredClone(patch));
    this.cr = { ...this.cr, status: { ...(this.cr.status ?? {}), ...structuredClone(patch) } };
    this.bump();
    return Promise.resolve(this.cr.metadata.resourceVersion);
  }
  patchAnnotations(_cr: CustomResource, annotations: Readonly<Record<string, string>>): Promise<void> {
    this.annotationWrites++;
    this.cr = { ...this.cr, metadata: { ...this.cr.metadata, annotations: { ...(this.cr.metadata.annotations ?? {}), ...annotations } } };
    this.bump();
    return Promise.resolve();
  }
  setFinalizers(cr: CustomResource, finalizers: readonly string[]): Promise<CustomResource> {
    if (cr.metadata.resourceVersion !== this.cr.metadata.resourceVersion) return Promise.reject(new Error('409 Conflict'));
    this.finalizerWrites.push(finalizers);
    this.cr = { ...this.cr, metadata: { ...this.cr.metadata, finalizers: [...finalizers] } };
    this.bump();
    return Promise.resolve(structuredClone(this.cr));
  }
  condition(type: string): { status: string; reason: string; message: string } | undefined {
    return ((this.cr.status?.conditions ?? []) as unknown as { type: string; status: string; reason: string; message: string }[]).find((c) => c.type === type);
  }
  view(): DependentsView {
    const look = (refs: readonly ObjectRef[]): LiveObject[] => refs.map((ref) => ({ ref, live: this.dependents.get(`${ref.kind}/${ref.name}`) }));
    return { cached: (refs) => Promise.resolve(look(refs)), fresh: (refs) => Promise.resolve(look(refs)) };
  }
}

function outcome(over: Partial<RunOutcome> = {}): RunOutcome {
  return {
    result: 'successful',
    stats: { ok: 2, changed: 1, skipped: 0, failures: 0 },
    failedTasks: [],
    requeueAfterMs: undefined,
    statusWrittenByRole: false,
    message: '',
    durationMs: 1500,
    ...over,
  };
}

/** A role that "creates" ConfigMap web through the proxy: the run writes it to the fake cluster. */
class FakeEngine {
  requests: RunRequest[] = [];
  contexts: RunContext[] = [];
  next: RunOutcome[] = [];
  written: { apiVersion: string; kind: string; namespace?: string; name: string; action?: string }[] = [];
  constructor(private readonly cluster: FakeCluster) {}
  runs = {
    run: (req: RunRequest): Promise<RunOutcome> => {
      this.requests.push(req);
      const o = this.next.shift() ?? outcome();
      if (o.result === 'successful' && !this.cluster.dependents.has('ConfigMap/web')) {
        this.cluster.dependents.set('ConfigMap/web', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'web', namespace: 'ns' }, data: { k: 'v' } });
        this.written = [{ ...CM, namespace: 'ns', action: 'created' }];
      } else this.written = [];
      return Promise.resolve(o);
    },
  };
  proxy = {
    openSession: (ctx: RunContext) => {
      this.contexts.push(ctx);
      return { token: 't', kubeconfig: 'kubeconfig-yaml', objects: () => this.written, close: () => undefined };
    },
  };
}

function setup(opts: { target?: AnsibleTarget; spec?: unknown; meta?: Partial<CustomResource['metadata']>; now?: () => number; valuesSources?: FakeSources; dependencies?: FakeDependencies } = {}) {
  const cluster = new FakeCluster(opts.spec ?? { size: 1, password: 'hunter2secret' }, opts.meta);
  const engine = new FakeEngine(cluster);
  const events = new RecordingEvents();
  let t = opts.target ?? target();
  let now = Date.parse('2026-01-01T10:00:00Z');
  const make = (): AnsibleReconciler =>
    new AnsibleReconciler({
      target: () => t,
      runs: engine.runs,
      proxy: engine.proxy,
      extraVars: (cr) => ({ spec: cr.spec }),
      runtime: () => Promise.resolve({ ansibleRunner: '/venv/bin/ansible-runner', python: '/venv/bin/python', collectionsPath: [] }),
      settings: { verbosity: 2, extraArgs: [], rolesPath: [], collectionsPath: [], injectOwnerRef: true, timeoutMs: 600_000, artifactsDir: '/tmp/artifacts' },
      writer: cluster,
      events,
      clock: { now: opts.now ?? (() => now) },
      dependents: cluster.view(),
      valuesSources: opts.valuesSources,
      dependencies: opts.dependencies,
    });
  return {
    cluster,
    engine,
    events,
    reconciler: make(),
    restart: make,
    setTarget: (next: AnsibleTarget) => {
      t = next;
    },
    advance: (ms: number) => {
      now += ms;
    },
  };
}

describe('AnsibleReconciler', () => {
  it('runs a new CR once, writes Running then the outcome, and runs nothing again while nothing changed', async () => {
    const s = setup();
    const out = await s.reconciler.reconcile(s.cluster.cached(), log);
    assert.equal(s.engine.requests.length, 1);
    assert.equal(s.cluster.statusWrites.length, 2, 'Running at the start, the outcome once at the end');
    assert.equal(s.cluster.statusWrites[0] && (s.cluster.statusWrites[0]['conditions'] as { reason: string }[])[0]?.reason, 'Running');
    assert.equal(s.cluster.condition('Successful')?.status, 'True');
    assert.equal(s.cluster.condition('Ready')?.status, 'True');
    assert.deepEqual((s.cluster.cr.status?.['chartpilot'] as { inventory: ObjectRef[] }).inventory, [CM]);
    assert.equal(out.requeueAfterMs, 60_000);
    assert.deepEqual(s.engine.requests[0]?.secrets.includes('hunter2secret'), true, 'spec values are redacted from messages');
    assert.equal(s.engine.requests[0].kubeconfig, 'kubeconfig-yaml');
    assert.equal(s.engine.requests[0].artifactsDir, '/tmp/artifacts/ns/web');

    for (let i = 0; i < 3; i++) await s.reconciler.reconcile(s.cluster.cached(), log);
    assert.equal(s.engine.requests.length, 1, 'no run without a change');
    assert.equal(s.cluster.statusWrites.length, 2, 'and no write');
  });

  it('shows in Reconciling why it runs: the first run, then a changed spec', async () => {
    const s = setup();
    await s.reconciler.reconcile(s.cluster.cached(), log);
    s.cluster.setSpec({ size: 2 });
    await s.reconciler.reconcile(s.cluster.cached(), log);
    const running = s.cluster.statusWrites
      .map((w) => (w['conditions'] as { type: string; status: string; reason: string; message: string }[] | undefined)?.find((c) => c.type === 'Reconciling' && c.reason === 'Running'))
      .filter((c) => c !== undefined)
      .map((c) => c.message);
    assert.equal(running.length, 2);
    assert.match(running[0] ?? '', /^Running 'run' of role webapp for web \(timeout \S+\): no successful run is recorded$/);
    assert.match(running[1] ?? '', /: the inputs changed since the last successful run \(spec,/);
  });

  it('a restarted operator runs nothing for a converged CR', async () => {
    const s = setup();
    await s.reconciler.reconcile(s.cluster.cached(), log);
    const fresh = s.restart();
    await fresh.reconcile(s.cluster.cached(), log);
    assert.equal(s.engine.requests.length, 1);
  });

  it('a spec change runs again; the role digest, vars or a flag changing does too', async () => {
    const s = setup();
    await s.reconciler.reconcile(s.cluster.cached(), log);
    s.cluster.setSpec({ size: 2 });
    await s.reconciler.reconcile(s.cluster.cached(), log);
    assert.equal(s.engine.requests.length, 2);
    const t = target();
    s.setTarget({ ...t, inputs: { ...t.inputs, runnableDigest: 'role-digest-2' } });
    await s.reconciler.reconcile(s.cluster.cached(), log);
    assert.equal(s.engine.requests.length, 3);
    assert.equal(s.cluster.cr.status?.observedGeneration, 2);
  });

  it('a spec change made during a run: the run’s status claims only the generation it ran with, and the next reconcile runs the change', async () => {
    const s = setup();
    await s.reconciler.reconcile(s.cluster.cached(), log);
    s.cluster.setSpec({ size: 2 });
    const run = s.engine.runs.run;
    s.engine.runs.run = (req) => {
      // The user changes the spec again while the role runs with size 2.
      s.cluster.setSpec({ size: 3 });
      return run(req);
    };
    await s.reconciler.reconcile(s.cluster.cached(), log);
    s.engine.runs.run = run;
    assert.deepEqual(s.engine.requests[1]?.extraVars, { spec: { size: 2 } });
    assert.equal(s.cluster.condition('Successful')?.status, 'True');
    const observed = (): number | undefined => s.cluster.cr.status?.observedGeneration;
    assert.equal(observed(), 2, 'the run saw generation 2, not the 3 it ended in');
    await s.reconciler.reconcile(s.cluster.cached(), log);
    assert.deepEqual(s.engine.requests[2]?.extraVars, { spec: { size: 3 } }, 'the change made during the run runs');
    assert.equal(observed(), 3);
  });

  it('a deleted dependent runs the role again; a status-only change of it does not', async () => {
    const s = setup();
    await s.reconciler.reconcile(s.cluster.cached(), log);
    const cm = s.cluster.dependents.get('ConfigMap/web');
    assert.ok(cm);
    s.cluster.dependents.set('ConfigMap/web', { ...cm, status: { whatever: 1 }, metadata: { ...cm.metadata, resourceVersion: '99', annotations: { 'controller/added': 'x' } } });
    await s.reconciler.reconcile(s.cluster.cached(), log);
    assert.equal(s.engine.requests.length, 1, 'status and metadata written by others are not drift');
    s.cluster.dependents.set('ConfigMap/web', { ...cm, data: { k: 'edited' } });
    await s.reconciler.reconcile(s.cluster.cached(), log);
    assert.equal(s.engine.requests.length, 2, 'content changed by someone else is drift');
    s.cluster.dependents.delete('ConfigMap/web');
    await s.reconciler.reconcile(s.cluster.cached(), log);
    assert.equal(s.engine.requests.length, 3, 'a deleted dependent is drift');
  });

  it('a failed run says which task failed, records nothing, fails for backoff, and the next reconcile runs again', async () => {
    const s = setup();
    s.engine.next.push(outcome({ result: 'failed', stats: { ok: 1, changed: 0, skipped: 0, failures: 1 }, failedTasks: [{ task: 'create configmap', message: 'boom' }], message: 'create configmap: boom' }));
    await assert.rejects(s.reconciler.reconcile(s.cluster.cached(), log), (err: unknown) => err instanceof ReconcileFailure && err.reason === 'Failed');
    assert.equal(s.cluster.condition('Failure')?.status, 'True');
    assert.equal(s.cluster.condition('Failure')?.message, 'create configmap: boom');
    assert.equal(s.cluster.condition('Running')?.status, 'False');
    assert.equal((s.cluster.cr.status?.['chartpilot'] as { inputs: string }).inputs, '', 'no inputs recorded');
    assert.deepEqual(s.events.events.map((e) => e.reason), ['RunFailed']);
    await s.reconciler.reconcile(s.cluster.cached(), log);
    assert.equal(s.engine.requests.length, 2);
    assert.equal(s.cluster.condition('Failure')?.status, 'False');
    assert.equal(s.cluster.condition('Successful')?.status, 'True');
  });

  it('a timeout and a refused write get reasons of their own', async () => {
    const s = setup();
    s.engine.next.push(outcome({ result: 'timeout', message: 'killed' }));
    await assert.rejects(s.reconciler.reconcile(s.cluster.cached(), log), (err: unknown) => err instanceof ReconcileFailure && err.reason === 'RunTimeout');
    s.engine.next.push(outcome({ result: 'failed', failedTasks: [{ task: 'crb', message: 'Forbidden: ClusterRoleBinding x is cluster-scoped' }], message: 'crb: Forbidden' }));
    await assert.rejects(s.reconciler.reconcile(s.cluster.cached(), log), (err: unknown) => err instanceof ReconcileFailure && err.reason === 'Forbidden');
    assert.equal(s.cluster.condition('Failure')?.reason, 'Forbidden');
  });

  it('a run stopped with the operator records nothing and is not retried here', async () => {
    const s = setup();
    s.engine.next.push(outcome({ result: 'canceled' }));
    assert.deepEqual(await s.reconciler.reconcile(s.cluster.cached(), log), {});
    assert.equal(s.cluster.condition('Failure')?.reason, 'Interrupted');
    await s.restart().reconcile(s.cluster.cached(), log);
    assert.equal(s.engine.requests.length, 2, 'the next start runs it');
  });

  it('opens the proxy run with the CR as owner, its confinement, and the tenant', async () => {
    const s = setup({ target: target({ serviceAccount: 'tenant', allowCrossNamespace: true }) });
    await s.reconciler.reconcile(s.cluster.cached(), log);
    const ctx = s.engine.contexts[0];
    assert.deepEqual(ctx?.owner, { apiVersion: 'demo.example.com/v1', kind: 'WebApp', name: 'web', namespace: 'ns', uid: 'uid-1' });
    assert.deepEqual(ctx.confinement, { namespace: 'ns', allowClusterScoped: false, allowCrossNamespace: true });
    assert.equal(ctx.impersonate, 'system:serviceaccount:ns:tenant');
    assert.equal(ctx.injectOwnerRef, true);
  });

  it('period and requeue_after run again when due, not before', async () => {
    const s = setup({ target: target({ runPeriodMs: 300_000 }) });
    s.engine.next.push(outcome({ requeueAfterMs: 30_000 }));
    const out = await s.reconciler.reconcile(s.cluster.cached(), log);
    assert.equal(out.requeueAfterMs, 30_000);
    s.advance(10_000);
    await s.reconciler.reconcile(s.cluster.cached(), log);
    assert.equal(s.engine.requests.length, 1);
    s.advance(25_000);
    await s.reconciler.reconcile(s.cluster.cached(), log);
    assert.equal(s.engine.requests.length, 2, 'requeue_after came due');
    s.advance(200_000);
    await s.reconciler.reconcile(s.cluster.cached(), log);
    assert.equal(s.engine.requests.length, 2);
    s.advance(100_001);
    await s.reconciler.reconcile(s.cluster.cached(), log);
    assert.equal(s.engine.requests.length, 3, 'the period elapsed');
  });

  describe('finalizer', () => {
    const withFinalizer = (): AnsibleTarget => {
      const src = source({ finalizer: { name: FINALIZER, vars: { state: 'absent' } } });
      return target({}, src);
    };

    it('is added before the first run; deletion runs the role with the finalizer vars, then removes it', async () => {
      const s = setup({ target: withFinalizer() });
      await s.reconciler.reconcile(s.cluster.cached(), log);
      assert.deepEqual(s.cluster.cr.metadata.finalizers, [FINALIZER]);
      s.cluster.cr = { ...s.cluster.cr, metadata: { ...s.cluster.cr.metadata, deletionTimestamp: '2026-01-01T10:01:00Z' } };
      await s.reconciler.reconcile(s.cluster.cached(), log);
      assert.equal(s.engine.requests.length, 2);
      assert.deepEqual(s.engine.requests[1]?.runnable, { role: '/roles/webapp' });
      assert.deepEqual(s.cluster.cr.metadata.finalizers, []);
    });

    it('a failing finalizer run keeps the finalizer, names the task, and says the way out; the annotation lets it go', async () => {
      const s = setup({ target: withFinalizer() });
      await s.reconciler.reconcile(s.cluster.cached(), log);
      s.cluster.cr = { ...s.cluster.cr, metadata: { ...s.cluster.cr.metadata, deletionTimestamp: '2026-01-01T10:01:00Z' } };
      s.engine.next.push(outcome({ result: 'failed', failedTasks: [{ task: 'drop database', message: 'unreachable' }], message: 'drop database: unreachable' }));
      await assert.rejects(s.reconciler.reconcile(s.cluster.cached(), log), ReconcileFailure);
      assert.deepEqual(s.cluster.cr.metadata.finalizers, [FINALIZER]);
      assert.equal(s.cluster.condition('Failure')?.message, 'drop database: unreachable');
      const ev = s.events.events.at(-1);
      assert.equal(ev?.reason, 'FinalizerFailed');
      assert.match(ev.message, /drop database: unreachable.*ansible\.chartpilot\.io\/skip-finalizer="true"/u);
      s.cluster.cr = { ...s.cluster.cr, metadata: { ...s.cluster.cr.metadata, annotations: { 'ansible.chartpilot.io/skip-finalizer': 'true' } } };
      await s.reconciler.reconcile(s.cluster.cached(), log);
      assert.equal(s.engine.requests.length, 2, 'no run');
      assert.deepEqual(s.cluster.cr.metadata.finalizers, []);
      assert.equal(s.events.events.at(-1)?.reason, 'FinalizerSkipped');
    });
  });

  it('manageStatus: false writes no conditions, only the record; a kind without status keeps it in an annotation', async () => {
    const s = setup({ target: target({}, source({ manageStatus: false })) });
    await s.reconciler.reconcile(s.cluster.cached(), log);
    assert.equal(s.cluster.statusWrites.length, 1);
    assert.deepEqual(Object.keys(s.cluster.statusWrites[0] ?? {}), ['chartpilot']);

    const a = setup({ target: target({ bookkeeping: 'annotation' }, source({ manageStatus: false })) });
    await a.reconciler.reconcile(a.cluster.cached(), log);
    assert.equal(a.cluster.statusWrites.length, 0);
    assert.equal(a.cluster.annotationWrites, 1);
    await a.restart().reconcile(a.cluster.cached(), log);
    assert.equal(a.engine.requests.length, 1, 'the annotation record counts after a restart');
  });

  it('an invalid annotation is a Failure condition, and nothing runs', async () => {
    const s = setup({ meta: { annotations: { 'ansible.sdk.operatorframework.io/verbosity': 'loud' } } });
    await s.reconciler.reconcile(s.cluster.cached(), log);
    assert.equal(s.engine.requests.length, 0);
    assert.equal(s.cluster.condition('Failure')?.reason, 'InvalidAnnotation');
  });

  it('the verbosity annotation sets the run verbosity', async () => {
    const s = setup({ meta: { annotations: { 'ansible.sdk.operatorframework.io/verbosity': '5' } } });
    await s.reconciler.reconcile(s.cluster.cached(), log);
    assert.equal(s.engine.requests[0]?.verbosity, 5);
  });
});

describe('contentDigestOf', () => {
  it('is the spec digest for a CR, read from the cache summary or the spec alike', async () => {
    const { contentDigestOf } = await import('../../../../src/engines/ansible/reconciler.js');
    const spec = { size: 1 };
    const full: CustomResource = { metadata: { name: 'a' }, spec };
    const cached: CustomResource = { metadata: { name: 'a' }, specSummary: summarizeSpec(spec) };
    assert.equal(contentDigestOf(full), contentDigestOf(cached));
    assert.equal(contentDigestOf(full), summarizeSpec(spec).digest);
  });
  it('covers the data of a kind without a spec (a core Secret)', async () => {
    const { contentDigestOf } = await import('../../../../src/engines/ansible/reconciler.js');
    const a = { metadata: { name: 's' }, data: { k: 'dg==' } } as CustomResource;
    const b = { metadata: { name: 's' }, data: { k: 'dw==' } } as CustomResource;
    assert.notEqual(contentDigestOf(a), contentDigestOf(b));
    assert.equal(contentDigestOf(a), contentDigestOf({ ...a, metadata: { name: 's', resourceVersion: '9' }, status: { x: 1 } }));
  });
});

describe('watchedDependents', () => {
  it('leaves out blacklisted kinds, and cluster-scoped objects unless watchClusterScopedResources', async () => {
    const { watchedDependents } = await import('../../../../src/engines/ansible/reconciler.js');
    const refs: ObjectRef[] = [
      CM,
      { apiVersion: 'apps/v1', kind: 'ReplicaSet', namespace: 'ns', name: 'web-1' },
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', name: 'web' },
    ];
    const blacklist = [{ group: 'apps', version: '', kind: 'ReplicaSet' }];
    assert.deepEqual(watchedDependents(refs, { blacklist, watchClusterScopedResources: false }).map((r) => r.kind), ['ConfigMap']);
    assert.deepEqual(watchedDependents(refs, { blacklist: [], watchClusterScopedResources: true }).map((r) => r.kind), ['ConfigMap', 'ReplicaSet', 'ClusterRole']);
    assert.deepEqual(watchedDependents(refs, { blacklist: [{ group: 'apps', version: 'v2', kind: 'ReplicaSet' }], watchClusterScopedResources: false }).map((r) => r.kind), ['ConfigMap', 'ReplicaSet']);
  });

  it('a blacklisted dependent deleted runs nothing', async () => {
    const s = setup({ target: target({}, source({ blacklist: [{ group: '', version: 'v1', kind: 'ConfigMap' }] })) });
    await s.reconciler.reconcile(s.cluster.cached(), log);
    s.cluster.dependents.delete('ConfigMap/web');
    await s.reconciler.reconcile(s.cluster.cached(), log);
    assert.equal(s.engine.requests.length, 1);
  });
});

describe('AnsibleReconciler of a kind with valuesFrom', () => {
  const settings = { specField: 'valuesFrom', allowCrossNamespace: false, references: [{ kind: 'Secret' as const, name: 'platform', valuesKey: 'values.yaml', optional: false }] };
  const spec = { size: 1, db: { host: 'db' }, valuesFrom: [{ kind: 'Secret', name: 'db', valuesKey: 'password', targetPath: 'db.password' }] };
  const withSources = () => {
    const sources = new FakeSources();
    sources.objects.set('Secret/ns/db', { password: 'hunter2-secret', user: 'app' });
    sources.objects.set('Secret/operators/platform', { 'values.yaml': 'size: 3\n' });
    return { sources, s: setup({ spec, target: target({ valuesFrom: settings }), valuesSources: sources }) };
  };

  it('gives the role the spec merged between the references, without the field, and redacts what they hold', async () => {
    const { s } = withSources();
    await s.reconciler.reconcile(s.cluster.cached(), log);
    assert.equal(s.engine.requests.length, 1);
    assert.deepEqual(s.engine.requests[0]?.extraVars, { spec: { size: 3, db: { host: 'db', password: 'hunter2-secret' } } });
    assert.ok(s.engine.requests[0].secrets.includes('hunter2-secret'));
  });

  it('runs again when a referenced key changes, not for another key', async () => {
    const { s, sources } = withSources();
    await s.reconciler.reconcile(s.cluster.cached(), log);
    sources.objects.set('Secret/ns/db', { password: 'hunter2-secret', user: 'someone-else' });
    await s.reconciler.reconcile(s.cluster.cached(), log);
    assert.equal(s.engine.requests.length, 1);
    sources.objects.set('Secret/ns/db', { password: 'rotated-secret' });
    await s.reconciler.reconcile(s.cluster.cached(), log);
    assert.equal(s.engine.requests.length, 2);
    assert.match(JSON.stringify(s.engine.requests[1]?.extraVars), /rotated-secret/);
  });

  it('a missing reference is a condition with its own reason, and no run', async () => {
    const { s, sources } = withSources();
    sources.objects.delete('Secret/ns/db');
    await s.reconciler.reconcile(s.cluster.cached(), log);
    assert.equal(s.engine.requests.length, 0);
    const problem = s.cluster.condition('Failure');
    assert.equal(problem?.status, 'True');
    assert.equal(problem.reason, 'ValuesReferenceNotFound');
    assert.match(problem.message, /^Secret ns\/db does not exist \(spec\.valuesFrom\[0\]\)/);
    assert.equal(s.events.events[0]?.reason, 'ValuesReferenceNotFound');
  });

  it('waits for a dependency that is not Ready: no run, Ready False naming it; runs once it is, without the field in its vars', async () => {
    const dependencies = new FakeDependencies();
    dependencies.verdict = { kind: 'waiting', message: 'waiting for Database ns/db: Database ns/db does not exist' };
    const s = setup({ spec: { size: 1, needs: [{ kind: 'Database', name: 'db' }] }, target: target({ dependsOn: { specField: 'needs', allowCrossNamespace: false } }), dependencies });
    const out = await s.reconciler.reconcile(s.cluster.cached(), log);
    assert.equal(s.engine.requests.length, 0);
    assert.equal(s.cluster.condition('Ready')?.reason, 'DependencyNotReady');
    assert.equal(s.cluster.condition('Reconciling')?.reason, 'DependencyNotReady');
    assert.equal(out.requeueAfterMs, 60_000);
    dependencies.verdict = { kind: 'ready' };
    await s.reconciler.reconcile(s.cluster.cached(), log);
    assert.equal(s.engine.requests.length, 1);
    assert.deepEqual(s.engine.requests[0]?.extraVars, { spec: { size: 1 } });
  });
});
