// The reconciler of a kind with valuesFrom and dependsOn, over fakes of its ValuesSources port (the
// pure parsing and merging of config/values-from.ts behind an in-memory set of objects) and its
// Dependencies port (a verdict the test sets): what the release gets, when it upgrades, what a
// missing or unreadable reference does, and what waiting for a dependency does.
import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import pino from 'pino';
import { applyOverrides } from '../../../../src/config/overrides.js';
import { FINALIZER } from '../../../../src/engines/helm/names.js';
import type { CrStatus, CustomResource } from '../../../../src/core/model.js';
import { Reconciler, type ReconcileTarget } from '../../../../src/engines/helm/reconciler.js';
import { summarizeSpec } from '../../../../src/core/spec-summary.js';
import { HelmWorld } from '../../fakes/helm-world.js';
import { RecordingEvents, RecordingWriter } from '../../fakes/reconcile-ports.js';
import { FakeDependencies, FakeSources } from '../../fakes/composition-ports.js';


const log = pino({ level: 'silent' });

describe('Reconciler of a kind with valuesFrom and dependsOn', () => {
  let world: HelmWorld;
  let writer: RecordingWriter;
  let events: RecordingEvents;
  let sources: FakeSources;
  let dependencies: FakeDependencies;
  let target: ReconcileTarget;
  let reconciler: Reconciler;
  let stored: CustomResource;
  let reads: number;

  const full = (spec: unknown): CustomResource => ({
    apiVersion: 'apps.example.com/v1',
    kind: 'WebApp',
    metadata: { name: 'demo', namespace: 'ns1', uid: 'uid-1', generation: 1, resourceVersion: '1', finalizers: [FINALIZER] },
    spec,
  });
  const cached = (cr: CustomResource, status?: CrStatus): CustomResource => {
    const { spec, ...rest } = cr;
    return { ...rest, specSummary: summarizeSpec(spec), ...(status === undefined ? {} : { status }) };
  };
  const condition = (type: string) => writer.last?.conditions?.find((c) => c.type === type);

  beforeEach(() => {
    world = new HelmWorld();
    writer = new RecordingWriter();
    events = new RecordingEvents();
    sources = new FakeSources();
    dependencies = new FakeDependencies();
    reads = 0;
    sources.objects.set('Secret/ns1/db', { password: 'hunter2-secret', user: 'app' });
    sources.objects.set('Secret/operators/platform', { 'values.yaml': 'global: {region: eu}\nreplicas: 9\n' });
    stored = full({ replicas: 2, db: { host: 'db' }, valuesFrom: [{ kind: 'Secret', name: 'db', valuesKey: 'password', targetPath: 'db.password' }] });
    target = {
      ownerKind: 'WebApp.apps.example.com',
      chartPath: '/charts/webapp',
      chartDigest: 'digest-1',
      overrides: { 'global.region': 'us' },
      reconcilePeriodMs: 60_000,
      watchDependentResources: true,
      allowClusterScoped: false,
      allowCrossNamespace: false,
      serviceAccount: undefined,
      valuesFrom: { specField: 'valuesFrom', allowCrossNamespace: false, references: [{ kind: 'Secret', name: 'platform', valuesKey: 'values.yaml', optional: false }] },
      dependsOn: { specField: 'dependsOn', allowCrossNamespace: false },
    };
    reconciler = new Reconciler({
      helm: world.helm,
      releases: world.store,
      writer,
      events,
      clock: { now: () => world.now },
      helmTimeoutMs: 300_000,
      server: { clock: { now: () => world.now }, startedAtRevision: '100' },
      historyMax: 10,
      target: () => target,
      applyOverrides,
      valuesSources: sources,
      dependencies,
      specs: {
        read: () => {
          reads++;
          return Promise.resolve(stored);
        },
      },
    });
  });

  it("installs with the CR's references under the spec, the entry's over it and the overrides on top; the field is not a value", async () => {
    await reconciler.reconcile(cached(stored), log);
    assert.deepEqual(world.calls, ['upgradeInstall ns1/demo']);
    assert.deepEqual(world.history('ns1', 'demo')[0]?.values, { replicas: 9, db: { host: 'db', password: 'hunter2-secret' }, global: { region: 'us' } });
    assert.equal(sources.reads[0]?.key, 'ns1/demo');
    assert.equal(sources.reads.length, 1, 'a new CR reads its spec and references once, with values');
    assert.equal(sources.reads[0].values, true);
    assert.equal(condition('Irreconcilable'), undefined);
  });

  it('a converged CR is checked by reading its references only; an update of another key upgrades nothing', async () => {
    await reconciler.reconcile(cached(stored), log);
    sources.objects.set('Secret/ns1/db', { password: 'hunter2-secret', user: 'someone-else' });
    for (let i = 0; i < 3; i++) await reconciler.reconcile(cached(stored, writer.last), log);
    assert.equal(reads, 1, 'the spec is known by its digest');
    assert.equal(sources.reads.length, 4, 'the references are read on every reconcile');
    assert.deepEqual(sources.reads.slice(1).map((r) => r.values), [false, false, false], 'for the digest alone');
    assert.deepEqual(world.calls, ['upgradeInstall ns1/demo']);
  });

  it('a change of a referenced key upgrades once, with the new value', async () => {
    await reconciler.reconcile(cached(stored), log);
    sources.objects.set('Secret/ns1/db', { password: 'rotated-secret', user: 'app' });
    await reconciler.reconcile(cached(stored, writer.last), log);
    await reconciler.reconcile(cached(stored, writer.last), log);
    assert.deepEqual(world.calls, ['upgradeInstall ns1/demo', 'upgradeInstall ns1/demo']);
    assert.deepEqual((world.history('ns1', 'demo').at(-1)?.values as { db: unknown }).db, { host: 'db', password: 'rotated-secret' });
    sources.objects.set('Secret/operators/platform', { 'values.yaml': 'global: {region: eu}\nreplicas: 4\n' });
    await reconciler.reconcile(cached(stored, writer.last), log);
    assert.equal(world.calls.length, 3, "the entry's reference counts too");
  });

  it('a missing required reference is a condition naming it: no helm call, the deployed release kept, installed once it exists', async () => {
    await reconciler.reconcile(cached(stored), log);
    sources.objects.delete('Secret/ns1/db');
    stored = full({ replicas: 3, valuesFrom: [{ kind: 'Secret', name: 'db', valuesKey: 'password', targetPath: 'db.password' }] });
    const outcome = await reconciler.reconcile(cached(stored, writer.last), log);
    assert.deepEqual(world.calls, ['upgradeInstall ns1/demo'], 'nothing uninstalled or upgraded');
    assert.equal(condition('Irreconcilable')?.reason, 'ValuesReferenceNotFound');
    assert.match(condition('Irreconcilable')?.message ?? '', /^Secret ns1\/db does not exist \(spec\.valuesFrom\[0\]\)/);
    assert.equal(condition('Stalled')?.reason, 'ValuesReferenceNotFound', 'kstatus: needs someone to act');
    assert.equal(outcome.requeueAfterMs, undefined, 'the watch on the Secret brings it back, not a period');
    sources.objects.set('Secret/ns1/db', { password: 'new-secret' });
    await reconciler.reconcile(cached(stored, writer.last), log);
    assert.equal(world.calls.length, 2);
    assert.deepEqual((world.history('ns1', 'demo').at(-1)?.values as { db: unknown }).db, { password: 'new-secret' });
    assert.equal(condition('Irreconcilable'), undefined);
  });

  it('an unreadable reference is looked at again at the period (RBAC can be granted without any watched change)', async () => {
    sources.forbidden.add('Secret/ns1/db');
    const outcome = await reconciler.reconcile(cached(stored), log);
    assert.deepEqual(world.calls, []);
    assert.equal(condition('Irreconcilable')?.reason, 'ValuesReferenceForbidden');
    assert.equal(outcome.requeueAfterMs, 60_000);
  });

  it('a reference into another namespace is refused unless the entry allows it', async () => {
    stored = full({ valuesFrom: [{ kind: 'Secret', name: 'cluster-admin-token', namespace: 'kube-system' }] });
    sources.objects.set('Secret/kube-system/cluster-admin-token', { 'values.yaml': 'token: stolen' });
    await reconciler.reconcile(cached(stored), log);
    assert.deepEqual(world.calls, []);
    assert.equal(condition('Irreconcilable')?.reason, 'ValuesReferenceInvalid');
    assert.equal(sources.reads.length, 1);
  });

  it('a deletion uninstalls without reading references, whatever they say', async () => {
    await reconciler.reconcile(cached(stored), log);
    sources.objects.delete('Secret/ns1/db');
    const before = sources.reads.length;
    const deleting = { ...stored, metadata: { ...stored.metadata, deletionTimestamp: '2026-12-04T00:00:00Z' } };
    await reconciler.reconcile(cached(deleting, writer.last), log);
    assert.deepEqual(world.calls, ['upgradeInstall ns1/demo', 'uninstall ns1/demo']);
    assert.equal(sources.reads.length, before);
  });

  it('a bad references field is the CR\'s problem, named, before anything is read', async () => {
    stored = full({ valuesFrom: 'db' });
    await reconciler.reconcile(cached(stored), log);
    assert.deepEqual(world.calls, []);
    assert.equal(sources.reads.length, 0);
    assert.equal(condition('Irreconcilable')?.reason, 'ValuesReferenceInvalid');
    assert.match(condition('Irreconcilable')?.message ?? '', /^spec\.valuesFrom is "db"; expected a list of references/);
  });

  it('waits for a dependency that is not Ready: no helm call, no reference read, Ready False saying which; installs once it is', async () => {
    stored = full({ replicas: 2, dependsOn: [{ kind: 'Database', name: 'db' }], valuesFrom: [{ kind: 'Secret', name: 'db', valuesKey: 'password', targetPath: 'db.password' }] });
    sources.objects.delete('Secret/ns1/db');
    dependencies.verdict = { kind: 'waiting', message: 'waiting for Database ns1/db: Database ns1/db does not exist; nothing is installed or upgraded until every dependency is Ready' };
    const outcome = await reconciler.reconcile(cached(stored), log);
    assert.deepEqual(world.calls, []);
    assert.equal(sources.reads.length, 0, 'what a dependency makes is not read before it is Ready');
    assert.deepEqual(dependencies.checks[0]?.dependencies, [{ kind: 'Database', name: 'db' }]);
    assert.equal(condition('Ready')?.status, 'False');
    assert.equal(condition('Ready')?.reason, 'DependencyNotReady');
    assert.equal(condition('Reconciling')?.reason, 'DependencyNotReady', 'kstatus: in progress, not stalled');
    assert.equal(condition('Stalled'), undefined);
    assert.equal(outcome.requeueAfterMs, 60_000);
    dependencies.verdict = { kind: 'ready' };
    sources.objects.set('Secret/ns1/db', { password: 'made-by-the-db' });
    await reconciler.reconcile(cached(stored, writer.last), log);
    assert.deepEqual(world.calls, ['upgradeInstall ns1/demo']);
    assert.deepEqual(world.history('ns1', 'demo')[0]?.values, { replicas: 9, db: { password: 'made-by-the-db' }, global: { region: 'us' } }, 'neither field is a value');
  });

  it('a cycle is a condition of its own, and a deletion is never held back', async () => {
    stored = full({ dependsOn: [{ kind: 'WebApp', name: 'other' }] });
    dependencies.verdict = { kind: 'problem', reason: 'DependencyCycle', message: 'dependency cycle: WebApp ns1/demo → WebApp ns1/other → WebApp ns1/demo' };
    await reconciler.reconcile(cached(stored), log);
    assert.deepEqual(world.calls, []);
    assert.equal(condition('Irreconcilable')?.reason, 'DependencyCycle');
    dependencies.verdict = { kind: 'ready' };
    await reconciler.reconcile(cached(stored, writer.last), log);
    dependencies.verdict = { kind: 'waiting', message: 'waiting for WebApp ns1/other' };
    const checks = dependencies.checks.length;
    await reconciler.reconcile(cached({ ...stored, metadata: { ...stored.metadata, deletionTimestamp: '2026-12-04T00:00:00Z' } }, writer.last), log);
    assert.deepEqual(world.calls, ['upgradeInstall ns1/demo', 'uninstall ns1/demo']);
    assert.equal(dependencies.checks.length, checks, 'not judged when deleting');
  });
});
