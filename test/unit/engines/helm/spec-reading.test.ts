// The reconciler over a CR cache that keeps no specs: when it reads a spec (one GET) and when the
// spec's digest is enough.
import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import pino from 'pino';
import { applyOverrides } from '../../../../src/config/overrides.js';
import { FINALIZER } from '../../../../src/engines/helm/names.js';
import type { CrStatus, CustomResource } from '../../../../src/core/model.js';
import { Reconciler, type ReconcileTarget } from '../../../../src/engines/helm/reconciler.js';
import { summarizeSpec } from '../../../../src/core/spec-summary.js';
import { MAX_VALUES_BYTES } from '../../../../src/engines/helm/values.js';
import { HelmWorld } from '../../fakes/helm-world.js';
import { RecordingEvents, RecordingWriter } from '../../fakes/reconcile-ports.js';

const log = pino({ level: 'silent' });

describe('Reconciler with a spec-less cache', () => {
  let world: HelmWorld;
  let writer: RecordingWriter;
  let events: RecordingEvents;
  let target: ReconcileTarget;
  let reconciler: Reconciler;
  /** What the API server has: the full CR, as the spec reader's GET returns it. */
  let stored: CustomResource;
  let reads: number;

  const full = (spec: unknown, status?: CrStatus): CustomResource => ({
    apiVersion: 'apps.example.com/v1',
    kind: 'WebApp',
    metadata: { name: 'demo', namespace: 'ns1', uid: 'uid-1', generation: 1, resourceVersion: '1', finalizers: [FINALIZER] },
    spec,
    ...(status === undefined ? {} : { status }),
  });
  /** The cache's copy of `cr`: no spec, its summary instead. */
  const cached = (cr: CustomResource, status?: CrStatus): CustomResource => {
    const { spec, ...rest } = cr;
    return { ...rest, specSummary: summarizeSpec(spec), ...(status === undefined ? {} : { status }) };
  };

  beforeEach(() => {
    world = new HelmWorld();
    writer = new RecordingWriter();
    events = new RecordingEvents();
    reads = 0;
    stored = full({ replicas: 1 });
    target = {
      ownerKind: 'WebApp.apps.example.com',
      chartPath: '/charts/webapp',
      chartDigest: 'digest-1',
      overrides: {},
      reconcilePeriodMs: 60_000,
      watchDependentResources: true,
      allowClusterScoped: false,
      allowCrossNamespace: false,
      serviceAccount: undefined,
    };
    reconciler = new Reconciler(reconcilerOptions());
  });

  const reconcilerOptions = (): ConstructorParameters<typeof Reconciler>[0] => ({
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
      specs: {
        read: () => {
          reads++;
          return Promise.resolve(stored);
        },
      },
  });

  it('reads the spec once to install; a converged CR is then checked from its digest alone', async () => {
    await reconciler.reconcile(cached(stored), log);
    assert.equal(reads, 1);
    assert.deepEqual(world.calls, ['upgradeInstall ns1/demo']);
    assert.deepEqual(world.history('ns1', 'demo')[0]?.values, { replicas: 1 });
    for (let i = 0; i < 3; i++) await reconciler.reconcile(cached(stored, writer.last), log);
    assert.equal(reads, 1, 'no GET for a converged CR');
    assert.deepEqual(world.calls, ['upgradeInstall ns1/demo']);
  });

  it('a changed spec (another digest) is read and upgraded', async () => {
    await reconciler.reconcile(cached(stored), log);
    stored = full({ replicas: 3 });
    await reconciler.reconcile(cached(stored, writer.last), log);
    assert.equal(reads, 2);
    assert.deepEqual(world.calls, ['upgradeInstall ns1/demo', 'upgradeInstall ns1/demo']);
    assert.deepEqual(world.history('ns1', 'demo').at(-1)?.values, { replicas: 3 });
  });

  it('a target that only says more (a held chart change) derives alike: no read, no upgrade, the condition written', async () => {
    await reconciler.reconcile(cached(stored), log);
    target = { ...target, chartChangeHeld: { message: 'chart /charts/webapp changed, and the change is held' } };
    await reconciler.reconcile(cached(stored, writer.last), log);
    assert.equal(reads, 1, 'the same fingerprint from the same digest');
    assert.equal(world.calls.length, 1);
    assert.equal(writer.last?.conditions?.find((c) => c.type === 'ChartChangeHeld')?.message, 'chart /charts/webapp changed, and the change is held');
  });

  it('a new target (hot reload) reads again; forget() drops what a gone CR gave', async () => {
    await reconciler.reconcile(cached(stored), log);
    target = { ...target, chartDigest: 'digest-2' };
    await reconciler.reconcile(cached(stored, writer.last), log);
    assert.equal(reads, 2);
    assert.equal(world.calls.length, 2);
    reconciler.forget('uid-1');
    // The API server has the status the operator wrote.
    stored = { ...stored, ...(writer.last === undefined ? {} : { status: writer.last }) };
    await reconciler.reconcile(cached(stored), log);
    assert.equal(reads, 3, 'after forget() the spec is read again');
    assert.equal(world.calls.length, 2, 'and found current');
  });

  it('a release that must be installed again reads the spec it was known by digest only', async () => {
    await reconciler.reconcile(cached(stored), log);
    world.seed('ns1', 'demo', []);
    await reconciler.reconcile(cached(stored, writer.last), log);
    assert.equal(reads, 2);
    assert.deepEqual(world.calls, ['upgradeInstall ns1/demo', 'upgradeInstall ns1/demo']);
    assert.deepEqual(world.history('ns1', 'demo').at(-1)?.values, { replicas: 1 });
  });

  it('a restarted process that saw each CR whole as it arrived (sawSpec) checks a converged CR without reading it', async () => {
    await reconciler.reconcile(cached(stored), log);
    const status = writer.last;
    // A new process: nothing derived yet, the same release storage.
    const restarted = new Reconciler({ ...reconcilerOptions(), specs: { read: () => { reads++; return Promise.resolve(stored); } } });
    reads = 0;
    restarted.sawSpec({ ...stored, specSummary: summarizeSpec(stored.spec) });
    await restarted.reconcile(cached(stored, status), log);
    assert.equal(reads, 0, 'no GET of the CR');
    assert.deepEqual(world.calls, ['upgradeInstall ns1/demo'], 'and no helm: the release is current');
  });

  it('sawSpec derives nothing from a spec over the size limit or without a summary; a changed spec it saw is upgraded after one read', async () => {
    await reconciler.reconcile(cached(stored), log);
    reads = 0;
    const big = full({ blob: 'x'.repeat(MAX_VALUES_BYTES + 1) });
    reconciler.sawSpec({ ...big, specSummary: summarizeSpec(big.spec) });
    reconciler.sawSpec(full({ replicas: 9 }));
    await reconciler.reconcile(cached(stored, writer.last), log);
    assert.equal(reads, 0, 'what it knew of the spec was kept');
    assert.equal(world.calls.length, 1);
    // Seen changed: the fingerprint differs, and helm needs the values, so the spec is read once.
    stored = full({ replicas: 2 });
    reconciler.sawSpec({ ...stored, specSummary: summarizeSpec(stored.spec) });
    await reconciler.reconcile(cached(stored, writer.last), log);
    assert.equal(reads, 1);
    assert.deepEqual(world.history('ns1', 'demo').at(-1)?.values, { replicas: 2 });
  });

  it('a spec over the size limit is refused from its summary: Irreconcilable ValuesTooLarge, a Warning, no GET, no helm', async () => {
    stored = full({ blob: 'x'.repeat(MAX_VALUES_BYTES + 1) });
    await reconciler.reconcile(cached(stored), log);
    assert.equal(reads, 0);
    assert.deepEqual(world.calls, []);
    const irreconcilable = writer.last?.conditions?.find((c) => c.type === 'Irreconcilable');
    assert.equal(irreconcilable?.status, 'True');
    assert.equal(irreconcilable.reason, 'ValuesTooLarge');
    assert.match(irreconcilable.message, /^spec is larger than 1024 KiB as JSON/);
    assert.ok(events.events.some((e) => e.type === 'Warning' && e.message === irreconcilable.message));
  });

  it('a spec read in full (not from the cache) is measured the same way', async () => {
    await reconciler.reconcile(full({ blob: 'x'.repeat(MAX_VALUES_BYTES + 1) }), log);
    assert.deepEqual(world.calls, []);
    assert.equal(writer.last?.conditions?.find((c) => c.type === 'Irreconcilable')?.reason, 'ValuesTooLarge');
  });
});

describe('spec summaries', () => {
  it('equal specs in any key order have one digest; the size is the JSON bytes', () => {
    const a = summarizeSpec({ a: 1, b: { c: 'é' } });
    assert.equal(a.digest, summarizeSpec({ b: { c: 'é' }, a: 1 }).digest);
    assert.notEqual(a.digest, summarizeSpec({ a: 2, b: { c: 'é' } }).digest);
    assert.equal(a.bytes, Buffer.byteLength('{"a":1,"b":{"c":"é"}}'));
  });

  it('a spec too deep to serialize has no digest (the reconcile reads it and says why)', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 20_000; i++) deep = { a: deep };
    assert.deepEqual(summarizeSpec(deep), { digest: '', bytes: 0 });
  });
});
