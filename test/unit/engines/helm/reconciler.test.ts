import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import pino from 'pino';
import { applyOverrides } from '../../../../src/config/overrides.js';
import { HelmError } from '../../../../src/helm/types.js';
import { fingerprint } from '../../../../src/engines/helm/fingerprint.js';
import { Annotations, FINALIZER } from '../../../../src/engines/helm/names.js';
import { HelmCallInterrupted, HelmCallsStopped, type ReleaseKeeperPort } from '../../../../src/engines/helm/ports.js';
import { Reconciler, ReconcileFailure, type ReconcilerOptions, type ReconcileTarget } from '../../../../src/engines/helm/reconciler.js';
import type { CrStatus, CustomResource } from '../../../../src/core/model.js';
import { HelmWorld } from '../../fakes/helm-world.js';
import { FakeKeeper, RecordingEvents, RecordingWriter } from '../../fakes/reconcile-ports.js';

const log = pino({ level: 'silent' });

function cr(overrides: Partial<CustomResource['metadata']> = {}, spec: unknown = { replicas: 1 }, status?: CrStatus): CustomResource {
  return {
    apiVersion: 'apps.example.com/v1',
    kind: 'WebApp',
    metadata: { name: 'demo', namespace: 'ns1', uid: 'uid-1', generation: 1, resourceVersion: '1', finalizers: [FINALIZER], ...overrides },
    spec,
    ...(status === undefined ? {} : { status }),
  };
}

/** The Secrets' resourceVersion when the reconciler's process began acting. */
const STARTED_AT_REVISION = '100';

describe('Reconciler', () => {
  let world: HelmWorld;
  let writer: RecordingWriter;
  let events: RecordingEvents;
  let target: ReconcileTarget;
  let reconciler: Reconciler;

  /** A Reconciler over this test's fakes; `extra` adds or replaces options. */
  function makeReconciler(extra: Partial<ReconcilerOptions> = {}): Reconciler {
    return new Reconciler({
      helm: world.helm,
      releases: world.store,
      writer,
      events,
      clock: { now: () => world.now },
      helmTimeoutMs: 300_000,
      server: { clock: { now: () => world.now }, startedAtRevision: STARTED_AT_REVISION },
      historyMax: 10,
      target: () => target,
      applyOverrides,
      ...extra,
    });
  }

  beforeEach(() => {
    world = new HelmWorld();
    writer = new RecordingWriter();
    events = new RecordingEvents();
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
    reconciler = makeReconciler();
  });

  it('adds the finalizer, installs, records status and requeues after the period', async () => {
    const result = await reconciler.reconcile(cr({ finalizers: [] }), log);
    assert.equal(writer.finalizerWrites, 1);
    assert.deepEqual(world.calls, ['upgradeInstall ns1/demo']);
    // Adding the finalizer writes no release record: one look at the records serves both steps;
    // one more after helm, for any record someone else wrote while it ran.
    assert.equal(world.revisionReads, 2);
    assert.equal(result.requeueAfterMs, 60_000);
    const status = writer.last;
    assert.equal(status?.deployedRelease?.revision, 1);
    assert.equal(status.observedGeneration, 1);
    const deployed = status.conditions?.find((c) => c.type === 'Deployed');
    assert.equal(deployed?.status, 'True');
    assert.equal(deployed.reason, 'InstallSuccessful');
    assert.equal(deployed.message, 'notes for demo');
    assert.ok(events.events.some((e) => e.reason === 'InstallSuccessful'));
  });

  it('writes status once per reconcile on every path: the Reconciling announcements beside helm calls, then one write at the end', async () => {
    const announcing = new Set(['Installing', 'Upgrading', 'RollingBack', 'Uninstalling']);
    const isAnnouncement = (st: CrStatus): boolean => st.conditions?.some((c) => c.type === 'Reconciling' && c.status === 'True' && announcing.has(c.reason)) ?? false;
    /** The status writes one reconcile made, as announcements (A) and other writes (W), in order. */
    async function writesOf(reconcile: () => Promise<unknown>): Promise<string> {
      const before = writer.statuses.length;
      await reconcile().catch((err: unknown) => {
        if (!(err instanceof ReconcileFailure)) throw err;
      });
      return writer.statuses.slice(before).map((st) => (isAnnouncement(st) ? 'A' : 'W')).join('');
    }
    const paths: Record<string, string> = {};
    paths['install'] = await writesOf(() => reconciler.reconcile(cr({ finalizers: [] }), log));
    world.failNext = { error: new HelmError('failed', 'Deployment is invalid', 'upgrade'), recorded: true };
    paths['failed upgrade, rolled back'] = await writesOf(() => reconciler.reconcile(cr({ generation: 2 }, { replicas: 2 }, writer.last), log));
    paths['upgrade'] = await writesOf(() => reconciler.reconcile(cr({ generation: 3 }, { replicas: 3 }, writer.last), log));
    paths['current'] = await writesOf(() => reconciler.reconcile(cr({ generation: 3 }, { replicas: 3 }, writer.last), log));
    paths['paused'] = await writesOf(() => reconciler.reconcile(cr({ generation: 3, annotations: { [Annotations.pauseReconcile]: 'true' } }, { replicas: 3 }, writer.last), log));
    paths['delete'] = await writesOf(() => reconciler.reconcile(cr({ generation: 3, deletionTimestamp: '2026-01-01T10:01:00Z' }, { replicas: 3 }, writer.last), log));
    world.failNext = { error: new HelmError('failed', 'Service is invalid', 'upgrade'), recorded: true };
    paths['failed install, removed'] = await writesOf(() => reconciler.reconcile(cr({ name: 'other', uid: 'uid-2' }), log));
    paths['irreconcilable'] = await writesOf(() => reconciler.reconcile(cr({ name: 'x'.repeat(60), uid: 'uid-3' }), log));
    target = { ...target, chartUnavailable: { reason: 'RegistryUnreachable', message: 'registry r is unreachable' } };
    paths['chart unavailable'] = await writesOf(() => reconciler.reconcile(cr({ name: 'third', uid: 'uid-4' }), log));
    assert.deepEqual(paths, {
      install: 'AW',
      'failed upgrade, rolled back': 'AAW',
      upgrade: 'AW',
      current: '',
      paused: 'W',
      delete: 'A',
      'failed install, removed': 'AAW',
      irreconcilable: 'W',
      'chart unavailable': 'W',
    });
  });

  it('shows in Reconciling why it installs or upgrades, beside the action and its timeout', async () => {
    await reconciler.reconcile(cr(), log);
    await reconciler.reconcile(cr({}, { replicas: 3 }, writer.last), log);
    const told = writer.statuses.map((st) => st.conditions?.find((c) => c.type === 'Reconciling' && c.status === 'True')?.message).filter((m) => m !== undefined);
    assert.deepEqual(told, [
      "Running 'install' of release ns1/demo (timeout 5m): no release of this name yet",
      "Running 'upgrade' of release ns1/demo (timeout 5m): the spec, chart or settings changed since revision 1",
    ]);
  });

  it('tells what became of the chart it was served: deployed, found deployed, failed with the CR\'s message, or not tried', async () => {
    const trials: string[] = [];
    const told = makeReconciler({ onChartTrial: (c, t, trial) => trials.push(`${c.metadata.name} ${t.chartDigest} ${trial.kind}${trial.kind === 'failed' ? `: ${trial.message}` : ''}`) });
    await told.reconcile(cr(), log);
    await told.reconcile(cr({}, { replicas: 1 }, writer.last), log);
    world.failNext = { error: new HelmError('render', 'parse error', 'upgrade'), recorded: false };
    await assert.rejects(told.reconcile(cr({}, { replicas: 2 }, writer.last), log), ReconcileFailure);
    await told.reconcile(cr({ annotations: { 'helm.sdk.operatorframework.io/pause-reconcile': 'true' } }, { replicas: 2 }, writer.last), log);
    assert.deepEqual(trials, ['demo digest-1 deployed', 'demo digest-1 deployed', 'demo digest-1 failed: helm upgrade failed: parse error', 'demo digest-1 untried']);
  });

  it('a helm call turned away because the operator stops ends the reconcile without recording anything', async () => {
    const stopping = makeReconciler({ helm: { ...world.helm, upgradeInstall: () => Promise.reject(new HelmCallsStopped('stopping')) } });
    await assert.rejects(stopping.reconcile(cr(), log), HelmCallsStopped);
    assert.deepEqual(writer.statuses.map(actingReason), ['Installing'], 'only the announcement: no ReleaseFailed');
    assert.deepEqual(events.events, []);
  });

  it('hands the work queue’s signal to the helm call; a call it stopped ends the reconcile without a failure on the CR', async () => {
    const stop = new AbortController();
    const signals: (AbortSignal | undefined)[] = [];
    const stopped = makeReconciler({
      helm: {
        ...world.helm,
        upgradeInstall: (req) => {
          signals.push(req.signal);
          stop.abort();
          return Promise.reject(new HelmCallInterrupted('helm upgrade was stopped (SIGTERM): the operator is stopping'));
        },
      },
    });
    await assert.rejects(stopped.reconcile(cr(), log, stop.signal), HelmCallInterrupted);
    assert.deepEqual(signals, [stop.signal]);
    assert.deepEqual(writer.statuses.map(actingReason), ['Installing'], 'only the announcement: no ReleaseFailed for a stop');
    assert.deepEqual(events.events, [], 'no InstallError event, no remediation');
  });

  it('hands the signal to uninstall, rollback and status too', async () => {
    const stop = new AbortController();
    const seen: string[] = [];
    const helm = {
      upgradeInstall: world.helm.upgradeInstall.bind(world.helm),
      uninstall: (req: Parameters<typeof world.helm.uninstall>[0]) => {
        if (req.signal === stop.signal) seen.push('uninstall');
        return world.helm.uninstall(req);
      },
      rollback: (req: Parameters<typeof world.helm.rollback>[0]) => {
        if (req.signal === stop.signal) seen.push('rollback');
        return world.helm.rollback(req);
      },
      status: (req: Parameters<typeof world.helm.status>[0]) => {
        if (req.signal === stop.signal) seen.push('status');
        return world.helm.status(req);
      },
    };
    const r = makeReconciler({ helm });
    await r.reconcile(cr(), log, stop.signal);
    // A status that lacks the release's details asks helm once.
    await r.reconcile(cr(), log, stop.signal);
    world.failNext = { error: new HelmError('failed', 'Deployment is invalid', 'upgrade'), recorded: true };
    await assert.rejects(r.reconcile(cr({ generation: 2 }, { replicas: 2 }, writer.last), log, stop.signal), ReconcileFailure);
    await r.reconcile(cr({ deletionTimestamp: '2026-01-01T00:00:00Z' }), log, stop.signal);
    assert.deepEqual(seen, ['status', 'rollback', 'uninstall']);
  });

  it('runs no helm process and writes nothing when the release is current', async () => {
    await reconciler.reconcile(cr(), log);
    const status = writer.last;
    world.calls.length = 0;
    writer.statuses = [];
    await reconciler.reconcile(cr({}, { replicas: 1 }, status), log);
    assert.deepEqual(world.calls, []);
    assert.equal(writer.statuses.length, 0);
  });

  it('leaves alone a release deployed before objects carried the owner-bucket label: its fingerprint is unchanged, so no upgrade', async () => {
    // The fingerprint of this CR's inputs as chartpilot wrote it before the bucket label existed:
    // the label is derived from the uid, already an input, so it must not change the fingerprint
    // (a new input would upgrade every release once after updating chartpilot).
    const before = fingerprint({
      chartDigest: 'digest-1',
      values: { replicas: 1 },
      options: { ownerUid: 'uid-1', ownerKind: target.ownerKind, allowClusterScoped: false, allowCrossNamespace: false },
    });
    world.seed('ns1', 'demo', [{ revision: 1, status: 'deployed', fingerprint: before, ownerKind: target.ownerKind, createdAt: new Date(world.now - 60_000).toISOString(), secretName: 's1', values: { replicas: 1 } }]);
    await reconciler.reconcile(cr(), log);
    assert.deepEqual(world.calls.filter((c) => c.startsWith('upgradeInstall')), [], 'no upgrade');
  });

  it('takes a first look from the start’s snapshot of the records when it finds nothing to do: no LIST, no helm', async () => {
    await reconciler.reconcile(cr(), log);
    const status = writer.last;
    const snapshot = world.history('ns1', 'demo').map(({ values: _v, ...r }) => r);
    const taken: string[] = [];
    const restarted = makeReconciler({
      releases: { ...world.store, startupRevisions: (ns, name) => { taken.push(`${ns}/${name}`); return Promise.resolve(taken.length === 1 ? snapshot : undefined); } },
    });
    world.calls.length = 0;
    world.revisionReads = 0;
    await restarted.reconcile(cr({}, { replicas: 1 }, status), log);
    assert.deepEqual(taken, ['ns1/demo']);
    assert.equal(world.revisionReads, 0, 'no LIST of its own');
    assert.deepEqual(world.calls, []);
    // The next look is a fresh LIST.
    await restarted.reconcile(cr({}, { replicas: 1 }, status), log);
    assert.equal(world.revisionReads, 1);
  });

  it('never acts on the start’s snapshot: a first look that would act LISTs again and acts on what that shows', async () => {
    await reconciler.reconcile(cr(), log);
    const status = writer.last;
    // The snapshot still shows revision 1 while storage has moved on to a current revision 2
    // (as when our own upgrade landed after it was taken): no second upgrade.
    const stale = world.history('ns1', 'demo').map(({ values: _v, ...r }) => ({ ...r, fingerprint: 'an older one' }));
    const restarted = makeReconciler({ releases: { ...world.store, startupRevisions: () => Promise.resolve(stale) } });
    world.calls.length = 0;
    world.revisionReads = 0;
    await restarted.reconcile(cr({}, { replicas: 1 }, status), log);
    assert.equal(world.revisionReads, 1, 'looked again, fresh');
    assert.deepEqual(world.calls, [], 'and found the release current');
    // A snapshot older than the CR's status (its last owner deployed since): looked again, fresh.
    const behind = world.history('ns1', 'demo').map(({ values: _v, ...r }) => ({ ...r, revision: 0 }));
    world.revisionReads = 0;
    await makeReconciler({ releases: { ...world.store, startupRevisions: () => Promise.resolve(behind) } }).reconcile(cr({}, { replicas: 1 }, status), log);
    assert.equal(world.revisionReads, 1, 'a snapshot behind the status is not trusted');
    assert.deepEqual(world.calls, []);
    // A snapshot with no record at all: the fresh look decides (here: current, nothing to install).
    const empty = makeReconciler({ releases: { ...world.store, startupRevisions: () => Promise.resolve([]) } });
    await empty.reconcile(cr({}, { replicas: 1 }, status), log);
    assert.deepEqual(world.calls, []);
    // And a release that really needs an upgrade gets exactly one, after the fresh LIST.
    await empty.reconcile(cr({ generation: 2 }, { replicas: 2 }, status), log);
    assert.deepEqual((world.calls as string[]).filter((c) => c.startsWith('upgradeInstall')), ['upgradeInstall ns1/demo']);
  });

  it('upgrades on a spec change and on a chart change', async () => {
    await reconciler.reconcile(cr(), log);
    await reconciler.reconcile(cr({ generation: 2 }, { replicas: 2 }, writer.last), log);
    assert.equal(writer.last?.deployedRelease?.revision, 2);
    assert.equal(writer.last.conditions?.find((c) => c.type === 'Deployed')?.reason, 'UpgradeSuccessful');
    target = { ...target, chartDigest: 'digest-2' };
    await reconciler.reconcile(cr({ generation: 2 }, { replicas: 2 }, writer.last), log);
    assert.equal(writer.last.deployedRelease.revision, 3);
  });

  it('passes overrides over the spec and names each overridden key in a warning event', async () => {
    target = { ...target, overrides: { 'image.repository': 'mirror/app' } };
    await reconciler.reconcile(cr({}, { image: { repository: 'user/app', tag: '1' } }), log);
    assert.deepEqual(world.history('ns1', 'demo')[0]?.values, { image: { repository: 'mirror/app', tag: '1' } });
    const warning = events.events.find((e) => e.reason === 'OverrideValuesInUse');
    assert.match(warning?.message ?? '', /image\.repository/);
    assert.doesNotMatch(warning?.message ?? '', /mirror\/app/);
  });

  it('uninstalls a failed first install, records InstallError and fails the reconcile', async () => {
    world.failNext = { error: new HelmError('failed', 'object is invalid', 'upgrade'), recorded: true };
    await assert.rejects(reconciler.reconcile(cr(), log), ReconcileFailure);
    assert.deepEqual(world.calls, ['upgradeInstall ns1/demo', 'uninstall ns1/demo']);
    const failed = writer.last?.conditions?.find((c) => c.type === 'ReleaseFailed');
    assert.equal(failed?.reason, 'InstallError');
    assert.match(failed.message, /object is invalid/);
  });

  it('rolls back a failed upgrade to the last good revision and recovers when fixed', async () => {
    await reconciler.reconcile(cr(), log);
    world.failNext = { error: new HelmError('failed', 'Deployment is invalid', 'upgrade'), recorded: true };
    await assert.rejects(reconciler.reconcile(cr({ generation: 2 }, { replicas: 2 }, writer.last), log), ReconcileFailure);
    assert.deepEqual(world.calls.slice(-2), ['upgradeInstall ns1/demo', 'rollback ns1/demo 1']);
    assert.equal(writer.last?.conditions?.find((c) => c.type === 'ReleaseFailed')?.reason, 'UpgradeError');
    await reconciler.reconcile(cr({ generation: 3 }, { replicas: 3 }, writer.last), log);
    assert.equal(writer.last.conditions.find((c) => c.type === 'ReleaseFailed'), undefined);
    assert.equal(world.history('ns1', 'demo').at(-1)?.status, 'deployed');
  });

  it('keeps the deployed release when a render error stops an upgrade', async () => {
    await reconciler.reconcile(cr(), log);
    world.failNext = { error: new HelmError('render', 'template: webapp/templates/x.yaml:3: bad', 'upgrade'), recorded: false };
    await assert.rejects(reconciler.reconcile(cr({ generation: 2 }, { replicas: 2 }, writer.last), log));
    assert.equal(world.history('ns1', 'demo').length, 1);
    assert.equal(world.calls.includes('rollback ns1/demo 1'), false);
  });

  it('unlocks a release left pending by a crash and then upgrades it', async () => {
    world.seed('ns1', 'demo', [
      { revision: 1, status: 'deployed', fingerprint: 'old', ownerKind: target.ownerKind, createdAt: new Date(world.now - 60_000).toISOString(), secretName: 's1', values: {} },
      { revision: 2, status: 'pending-upgrade', fingerprint: 'x', ownerKind: target.ownerKind, createdAt: new Date(world.now - 30_000).toISOString(), secretName: 's2', resourceVersion: '50', values: {} },
    ]);
    await reconciler.reconcile(cr(), log);
    assert.deepEqual(world.calls, ['deleteRevision ns1 2', 'upgradeInstall ns1/demo']);
    assert.ok(events.events.some((e) => e.reason === 'ReleaseUnlocked'));
    assert.equal(world.history('ns1', 'demo').at(-1)?.status, 'deployed');
  });

  it('unlocks at once a fresh pending record whose helm call a stopping operator stopped, and waits on any other', async () => {
    // Written after this process started and well within the helm timeout: by time alone, a live lock.
    const pending = (call: string) => [
      { revision: 1, status: 'deployed', fingerprint: 'old', ownerKind: target.ownerKind, createdAt: new Date(world.now - 60_000).toISOString(), secretName: 's1', values: {} },
      { revision: 2, status: 'pending-upgrade', fingerprint: 'x', ownerKind: target.ownerKind, call, createdAt: new Date(world.now - 100).toISOString(), secretName: 's2', resourceVersion: '150', values: {} },
    ];
    const stopped = makeReconciler({ stoppedCalls: new Set(['0123456789ab-4']) });
    world.seed('ns1', 'demo', pending('0123456789ab-5'));
    const waited = await stopped.reconcile(cr(), log);
    assert.deepEqual(world.calls, [], 'another call’s lock: wait');
    assert.ok(waited.requeueAfterMs !== undefined && waited.requeueAfterMs > 300_000);
    world.seed('ns1', 'demo', pending('0123456789ab-4'));
    await stopped.reconcile(cr(), log);
    assert.deepEqual(world.calls, ['deleteRevision ns1 2', 'upgradeInstall ns1/demo']);
    assert.equal(world.history('ns1', 'demo').at(-1)?.status, 'deployed');
  });

  it('judges a lock on the API server\'s clocks: a host clock an hour off frees no live lock and keeps no crash lock', async () => {
    const seed = (resourceVersion: string): void => {
      world.seed('ns1', 'demo', [
        { revision: 1, status: 'deployed', fingerprint: 'old', ownerKind: target.ownerKind, createdAt: new Date(world.now - 60_000).toISOString(), secretName: 's1', values: {} },
        { revision: 2, status: 'pending-upgrade', fingerprint: 'x', ownerKind: target.ownerKind, createdAt: new Date(world.now - 100).toISOString(), secretName: 's2', resourceVersion, values: {} },
      ]);
    };
    for (const skewMs of [3_600_000, -3_600_000]) {
      // The host's wall clock is off; the server's (what the lock rule reads) is not.
      const skewed = makeReconciler({ clock: { now: () => world.now + skewMs } });
      world.calls.length = 0;
      seed('150');
      const waited = await skewed.reconcile(cr(), log);
      assert.deepEqual(world.calls, [], `written since this process began, 100 ms ago on the server: a live lock (host ${String(skewMs)} ms off)`);
      assert.ok(waited.requeueAfterMs !== undefined && waited.requeueAfterMs > 300_000 && waited.requeueAfterMs <= 330_000, String(waited.requeueAfterMs));
      seed('50');
      await skewed.reconcile(cr(), log);
      assert.deepEqual(world.calls, ['deleteRevision ns1 2', 'upgradeInstall ns1/demo'], `written before: a crashed predecessor's (host ${String(skewMs)} ms off)`);
    }
  });

  it('refuses a name longer than Helm allows and installs nothing', async () => {
    const long = 'a'.repeat(60);
    const result = await reconciler.reconcile(cr({ name: long }), log);
    assert.deepEqual(world.calls, []);
    assert.deepEqual(result, {});
    const irreconcilable = writer.last?.conditions?.find((c) => c.type === 'Irreconcilable');
    assert.equal(irreconcilable?.status, 'True');
    assert.match(irreconcilable.message, /60 characters.*at most 53/);
  });

  it('refuses a spec that is not a map', async () => {
    await reconciler.reconcile(cr({}, ['a', 'b']), log);
    assert.deepEqual(world.calls, []);
    assert.match(writer.last?.conditions?.find((c) => c.type === 'Irreconcilable')?.message ?? '', /spec must be a map.*a list/);
  });

  it('refuses a spec nested 9000 levels deep with ValuesTooDeep, without exhausting the stack', async () => {
    let deep: unknown = 'bottom';
    for (let i = 0; i < 9000; i++) deep = i % 2 === 0 ? { next: deep } : [deep];
    const result = await reconciler.reconcile(cr({}, { top: deep }), log);
    assert.deepEqual(world.calls, []);
    assert.deepEqual(result, {});
    const condition = writer.last?.conditions?.find((c) => c.type === 'Irreconcilable');
    assert.equal(condition?.reason, 'ValuesTooDeep');
    assert.match(condition.message, /nested more than 1000 levels/);
    assert.ok(events.events.some((e) => e.type === 'Warning' && e.reason === 'ValuesTooDeep'));
  });

  it('refuses a spec larger than 1 MiB with ValuesTooLarge', async () => {
    await reconciler.reconcile(cr({}, { blobs: Array.from({ length: 5 }, () => 'x'.repeat(300_000)) }), log);
    assert.deepEqual(world.calls, []);
    const condition = writer.last?.conditions?.find((c) => c.type === 'Irreconcilable');
    assert.equal(condition?.reason, 'ValuesTooLarge');
    assert.match(condition.message, /larger than 1024 KiB/);
  });

  it('deploys a spec at the depth limit, and recovers when a too-deep spec is fixed', async () => {
    let deep: unknown = 1;
    for (let i = 0; i < 9000; i++) deep = { n: deep };
    await reconciler.reconcile(cr({}, { n: deep }), log);
    let ok: unknown = 1;
    for (let i = 0; i < 998; i++) ok = { n: ok };
    await reconciler.reconcile(cr({ generation: 2 }, { n: ok }, writer.last), log);
    assert.equal(world.history('ns1', 'demo').at(-1)?.status, 'deployed');
    assert.equal(writer.last?.conditions?.find((c) => c.type === 'Irreconcilable'), undefined);
  });

  it('uninstalls on delete, then removes both finalizers', async () => {
    await reconciler.reconcile(cr(), log);
    const deleting = cr({ deletionTimestamp: '2026-01-01T10:01:00Z', finalizers: [FINALIZER, 'uninstall-helm-release', 'other'] }, {}, writer.last);
    let removed: readonly string[] | undefined;
    writer.setFinalizers = (c, f) => {
      removed = f;
      return Promise.resolve({ ...c, metadata: { ...c.metadata, finalizers: f } });
    };
    await reconciler.reconcile(deleting, log);
    assert.ok(world.calls.includes('uninstall ns1/demo'));
    assert.deepEqual(removed, ['other']);
  });

  describe('records chartpilot did not write for this CR', () => {
    const irreconcilable = (): { reason: string; message: string } | undefined => writer.last?.conditions?.find((c) => c.type === 'Irreconcilable');

    it('runs no helm at all, on a spec change or on delete, and says which record and what to do', async () => {
      await reconciler.reconcile(cr(), log);
      world.foreignSecrets.add('s1');
      world.calls.length = 0;
      await reconciler.reconcile(cr({}, { replicas: 5 }, writer.last), log);
      const deleting = cr({ deletionTimestamp: '2026-01-01T10:01:00Z' }, {}, writer.last);
      let finalizerWrites = 0;
      writer.setFinalizers = (c) => {
        finalizerWrites++;
        return Promise.resolve(c);
      };
      const outcome = await reconciler.reconcile(deleting, log);
      assert.deepEqual(world.calls, [], 'no upgrade, no uninstall');
      assert.equal(finalizerWrites, 0, 'the finalizer stays');
      assert.equal(outcome.requeueAfterMs, 60_000, 'looked at again: deleting the forgery recovers');
      assert.equal(irreconcilable()?.reason, 'ForeignReleaseRecord');
      assert.match(irreconcilable()?.message ?? '', /record s1 was not written by chartpilot for this resource/);
      assert.ok(events.events.some((e) => e.type === 'Warning' && e.reason === 'ForeignReleaseRecord'));
    });

    it('tells a record that appeared while helm ran, right after it', async () => {
      const { helm } = world;
      reconciler = makeReconciler({
        helm: {
          ...world.helm,
          upgradeInstall: async (req) => {
            const r = await helm.upgradeInstall(req);
            world.foreignSecrets.add('s1');
            return r;
          },
        },
      });
      await reconciler.reconcile(cr(), log);
      assert.equal(irreconcilable()?.reason, 'ForeignReleaseRecord');
      assert.equal(writer.last?.conditions?.find((c) => c.type === 'Deployed'), undefined, 'not told as deployed');
    });

    it('recovers once the forged record is gone', async () => {
      await reconciler.reconcile(cr(), log);
      world.foreignSecrets.add('s1');
      await reconciler.reconcile(cr({}, { replicas: 1 }, writer.last), log);
      assert.equal(irreconcilable()?.reason, 'ForeignReleaseRecord');
      world.foreignSecrets.clear();
      await reconciler.reconcile(cr({}, { replicas: 1 }, writer.last), log);
      assert.equal(irreconcilable(), undefined);
    });
  });

  it('lets a resource go whose release is already gone', async () => {
    let removed = false;
    writer.setFinalizers = (c, f) => {
      removed = f.length === 0;
      return Promise.resolve(c);
    };
    await reconciler.reconcile(cr({ deletionTimestamp: '2026-01-01T10:01:00Z' }), log);
    assert.equal(removed, true);
    assert.deepEqual(world.calls, []);
  });

  it('does no Helm work while paused and says so', async () => {
    await reconciler.reconcile(cr({ annotations: { 'helm.sdk.operatorframework.io/pause-reconcile': 'true' } }), log);
    assert.deepEqual(world.calls, []);
    assert.equal(writer.last?.conditions?.find((c) => c.type === 'Paused')?.status, 'True');
  });

  it('raises a reconcile-period annotation below 5s to 5s, says so once with a Warning Event, and deploys', async () => {
    const annotated = (period: string, status?: CrStatus): CustomResource =>
      cr({ annotations: { 'helm.sdk.operatorframework.io/reconcile-period': period } }, { replicas: 1 }, status);
    const first = await reconciler.reconcile(annotated('1ms'), log);
    assert.deepEqual(first, { requeueAfterMs: 5_000 }, 'requeued after the minimum, not 1 ms');
    assert.equal(world.history('ns1', 'demo').at(-1)?.status, 'deployed');
    const warned = (): string[] => events.events.filter((e) => e.reason === 'ReconcilePeriodRaised').map((e) => `${e.type}: ${e.message}`);
    assert.deepEqual(warned(), [
      'Warning: annotation helm.sdk.operatorframework.io/reconcile-period is "1ms", below the minimum of 5s; reconciling every 5s instead (set 5s or more, or 0 to turn periodic reconciles off)',
    ]);
    assert.deepEqual(await reconciler.reconcile(annotated('1ms', writer.last), log), { requeueAfterMs: 5_000 });
    assert.equal(warned().length, 1, 'told once, not every period');
    await reconciler.reconcile(annotated('2s', writer.last), log);
    assert.equal(warned().length, 2, 'a new value is told again');
    assert.deepEqual(await reconciler.reconcile(annotated('7s', writer.last), log), { requeueAfterMs: 7_000 });
    assert.deepEqual(await reconciler.reconcile(annotated('0', writer.last), log), {}, '0 still turns periodic reconciles off');
  });

  it('reports an invalid annotation value', async () => {
    await reconciler.reconcile(cr({ annotations: { 'helm.sdk.operatorframework.io/upgrade-force': 'yes' } }), log);
    assert.match(writer.last?.conditions?.find((c) => c.type === 'Irreconcilable')?.message ?? '', /upgrade-force is "yes", expected "true" or "false"/);
  });

  it('emits no OverrideValuesInUse events with --suppress-override-values', async () => {
    target = { ...target, overrides: { 'image.repository': 'mirror/app' } };
    reconciler = makeReconciler({ suppressOverrideValues: true });
    await reconciler.reconcile(cr({}, { image: { repository: 'user/app' } }), log);
    assert.deepEqual(world.history('ns1', 'demo')[0]?.values, { image: { repository: 'mirror/app' } }, 'the override still applies');
    assert.ok(events.events.some((e) => e.reason === 'InstallSuccessful'));
    assert.equal(events.events.filter((e) => e.reason === 'OverrideValuesInUse').length, 0);
  });

  it('says the rollback failed too when remediation of a failed upgrade fails', async () => {
    await reconciler.reconcile(cr(), log);
    world.failNext = { error: new HelmError('failed', 'Deployment is invalid', 'upgrade'), recorded: true };
    world.helm.rollback = () => Promise.reject(new HelmError('failed', 'rollback refused', 'rollback'));
    await assert.rejects(reconciler.reconcile(cr({ generation: 2 }, { replicas: 2 }, writer.last), log), /Deployment is invalid; cleaning up after it also failed: rollback refused/);
    assert.match(writer.last?.conditions?.find((c) => c.type === 'ReleaseFailed')?.message ?? '', /cleaning up after it also failed/);
    assert.equal(events.events.some((e) => e.reason === 'RollbackSuccessful'), false);
  });

  it('fails instead of looping when an action does not take effect', async () => {
    // A finalizer write the API server "accepts" but that never shows on the object.
    writer.setFinalizers = (c) => Promise.resolve(c);
    await assert.rejects(reconciler.reconcile(cr({ finalizers: [] }), log), (e: unknown) => e instanceof ReconcileFailure && /add-finalizer/.test(e.message));
    assert.deepEqual(world.calls, [], 'nothing was installed without the finalizer');
  });

  it('paces retellings of a rollout in progress, but writes Ready=True and the first word at once', async () => {
    const keeper = new FakeKeeper();
    const notReady = (message: string) => ({ inventory: [], repaired: [], readiness: { ready: false, failed: false, reason: 'DeploymentNotAvailable', message } });
    keeper.keepResult = notReady('Deployment web: 0/1 replicas updated');
    reconciler = makeReconciler({ keeper, statusPaceMs: 5_000 });
    // The writes that tell how a reconcile went: each deploy's announcement before it is not paced.
    const reported = (): number => writer.statuses.filter((st) => actingReason(st) === undefined).length;
    await reconciler.reconcile(cr(), log);
    assert.equal(reported(), 1, 'Deployed and the first Ready=False in one write');
    assert.equal(keeper.kept[0]?.awaitCaches, true, 'readiness after a deploy waits for the caches');

    world.now += 1_000;
    keeper.keepResult = notReady('Deployment web: 0/1 replicas available');
    const paced = await reconciler.reconcile(cr({}, { replicas: 1 }, writer.last), log);
    assert.equal(reported(), 1, 'the progress is not written yet');
    assert.equal(paced.requeueAfterMs, 4_000, 'but looked at again when the pace allows');

    world.now += 4_000;
    const flushed = await reconciler.reconcile(cr({}, { replicas: 1 }, writer.last), log);
    assert.equal(reported(), 2);
    assert.equal(writer.last?.conditions?.find((c) => c.type === 'Ready')?.message, 'Deployment web: 0/1 replicas available');
    assert.equal(flushed.requeueAfterMs, 60_000);

    world.now += 100;
    keeper.keepResult = { inventory: [], repaired: [], readiness: { ready: true, failed: false, reason: 'AllResourcesReady', message: 'all 1 resource is ready' } };
    await reconciler.reconcile(cr({}, { replicas: 1 }, writer.last), log);
    assert.equal(reported(), 3, 'Ready=True is written at once');
    assert.equal(writer.last.conditions.find((c) => c.type === 'Ready')?.status, 'True');

    world.now += 100;
    keeper.keepResult = { inventory: [], repaired: [], readiness: { ready: false, failed: true, reason: 'ProgressDeadlineExceeded', message: 'Deployment web: progress deadline exceeded' } };
    await reconciler.reconcile(cr({}, { replicas: 1 }, writer.last), log);
    world.now += 100;
    keeper.keepResult = notReady('Deployment web: 0/1 replicas available');
    await reconciler.reconcile(cr({}, { replicas: 1 }, writer.last), log);
    assert.equal(reported(), 5, 'a failure, and the way back from it, are transitions');
  });

  it('remembers status writes only within the pace, so deleted resources leave nothing behind', async () => {
    const keeper = new FakeKeeper();
    keeper.keepResult = { inventory: [], repaired: [], readiness: { ready: false, failed: false, reason: 'DeploymentNotAvailable', message: 'Deployment web: 0/1 replicas updated' } };
    const other = cr({ name: 'other', uid: 'uid-other' });
    reconciler = makeReconciler({ keeper, statusPaceMs: 5_000 });
    await reconciler.reconcile(other, log); // then deleted: never reconciled again
    world.now += 6_000;
    await reconciler.reconcile(cr(), log);
    const remembered = (reconciler as unknown as { statusWrites: Map<string, number> }).statusWrites;
    assert.deepEqual([...remembered.keys()], ['uid-1']);
  });

  it('keeps a deleted resource until its objects are gone (uninstall-wait)', async () => {
    let left = [{ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'ns1', name: 'web' }];
    const keeper: ReleaseKeeperPort = {
      keep: () => Promise.resolve({ inventory: left, repaired: [], readiness: undefined }),
      kindScopes: () => Promise.resolve({ clusterScoped: [], namespaced: [] }),
      learnKinds: () => Promise.resolve(false),
      forget: () => undefined,
      remaining: () => Promise.resolve(left),
    };
    reconciler = makeReconciler({ keeper });
    await reconciler.reconcile(cr(), log);
    assert.deepEqual(writer.last?.deployedRelease?.inventory, left);
    const deleting = cr({ deletionTimestamp: '2026-01-01T10:01:00Z', annotations: { 'helm.sdk.operatorframework.io/uninstall-wait': 'true' } }, {}, writer.last);
    let finalizerWrites = 0;
    writer.setFinalizers = (c, f) => {
      finalizerWrites++;
      return Promise.resolve({ ...c, metadata: { ...c.metadata, finalizers: f } });
    };
    const waiting = await reconciler.reconcile(deleting, log);
    assert.ok(world.calls.includes('uninstall ns1/demo'));
    assert.equal(waiting.requeueAfterMs, 2_000);
    assert.equal(finalizerWrites, 0);
    assert.match(writer.last.conditions?.find((c) => c.type === 'Deployed')?.message ?? '', /waiting for Deployment web to be deleted/);
    left = [];
    assert.deepEqual(await reconciler.reconcile({ ...deleting, status: writer.last }, log), {});
    assert.equal(finalizerWrites, 1);
  });

  it('with the chart unavailable: no helm, ChartUnavailable and a Warning event, and a failure the queue backs off; then installs once it is back', async () => {
    target = { ...target, chartPath: '', chartDigest: '', chartUnavailable: { reason: 'RegistryUnreachable', message: 'registry r is unreachable' } };
    await assert.rejects(reconciler.reconcile(cr(), log), (err: unknown) => err instanceof ReconcileFailure && err.reason === 'ChartUnavailable');
    assert.deepEqual(world.calls, []);
    const c = writer.last?.conditions?.find((x) => x.type === 'ChartUnavailable');
    assert.deepEqual([c?.status, c?.reason, c?.message], ['True', 'RegistryUnreachable', 'registry r is unreachable']);
    assert.deepEqual(events.events, [{ type: 'Warning', reason: 'ChartUnavailable', message: 'registry r is unreachable' }]);

    target = { ...target, chartPath: '/cache/webapp.tgz', chartDigest: 'sha256:abc', chartUnavailable: undefined };
    await reconciler.reconcile(cr({}, { replicas: 1 }, writer.last), log);
    assert.deepEqual(world.calls, ['upgradeInstall ns1/demo']);
    assert.equal(writer.last?.conditions?.some((x) => x.type === 'ChartUnavailable'), false);
  });

  describe('as a ServiceAccount of the namespace', () => {
    function withServiceAccounts(present: Set<string>): Reconciler {
      return makeReconciler({ serviceAccounts: { exists: (ns, name) => Promise.resolve(present.has(`${ns}/${name}`)) } });
    }

    it('runs nothing while the ServiceAccount is missing, says so, and recovers once it exists', async () => {
      target = { ...target, serviceAccount: 'tenant' };
      const accounts = new Set<string>();
      const r = withServiceAccounts(accounts);
      await assert.rejects(r.reconcile(cr(), log), (err: unknown) => err instanceof ReconcileFailure && err.reason === 'ServiceAccountNotFound');
      assert.deepEqual(world.calls, []);
      const missing = writer.last?.conditions?.find((c) => c.type === 'Irreconcilable');
      assert.equal(missing?.reason, 'ServiceAccountNotFound');
      assert.match(missing.message, /system:serviceaccount:ns1:tenant/);

      accounts.add('ns1/tenant');
      await r.reconcile(cr({}, { replicas: 1 }, writer.last), log);
      assert.deepEqual(world.calls, ['upgradeInstall ns1/demo']);
      assert.equal(writer.last?.conditions?.find((c) => c.type === 'Irreconcilable'), undefined, 'the condition goes once it recovers');
    });

    it('upgrades once when the ServiceAccount setting changes, and is idle after', async () => {
      const accounts = new Set(['ns1/tenant', 'ns1/other']);
      const r = withServiceAccounts(accounts);
      await r.reconcile(cr(), log);
      const before = world.history('ns1', 'demo')[0]?.fingerprint;
      target = { ...target, serviceAccount: 'tenant' };
      await r.reconcile(cr({}, { replicas: 1 }, writer.last), log);
      target = { ...target, serviceAccount: 'other' };
      await r.reconcile(cr({}, { replicas: 1 }, writer.last), log);
      await r.reconcile(cr({}, { replicas: 1 }, writer.last), log);
      assert.deepEqual(world.calls, ['upgradeInstall ns1/demo', 'upgradeInstall ns1/demo', 'upgradeInstall ns1/demo']);
      assert.equal(new Set(world.history('ns1', 'demo').map((x) => x.fingerprint)).size, 3);
      target = { ...target, serviceAccount: undefined };
      await r.reconcile(cr({}, { replicas: 1 }, writer.last), log);
      assert.equal(world.history('ns1', 'demo').at(-1)?.fingerprint, before, 'without one, the fingerprint is what it always was');
    });
  });
});

/** The reason of a status written before a helm action (Reconciling: Installing, Upgrading, ...), else undefined. */
function actingReason(status: CrStatus): string | undefined {
  const reason = status.conditions?.find((c) => c.type === 'Reconciling')?.reason;
  return reason !== undefined && ['Installing', 'Upgrading', 'RollingBack', 'Uninstalling'].includes(reason) ? reason : undefined;
}
