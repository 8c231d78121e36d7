import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ReconcileFailure } from '../../../../../src/core/outcome.js';
import { current, irreconcilable, noServiceAccount, paused, stuck } from '../../../../../src/engines/helm/actions/report.js';
import type { KeepResult } from '../../../../../src/core/model.js';
import { helmRelease } from '../../../fakes/reconcile-ports.js';
import { actionContext, conditionSummary, DESIRED_FINGERPRINT, HELM_TIMEOUT_MS, PERIOD_MS, storedRevision, webApp, writtenCondition, settle } from './context-fixture.js';

const revisions = [storedRevision(2, 'superseded'), storedRevision(4, 'deployed'), storedRevision(3, 'superseded')];
const inventory = [{ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'ns1', name: 'web' }];
const notReady: KeepResult = {
  inventory,
  repaired: [],
  readiness: { ready: false, failed: false, reason: 'DeploymentNotAvailable', message: 'Deployment web: 1 of 2 replicas available' },
};

describe('report actions leave the status to the reconcile’s exit', () => {
  it('return the status they want and write none themselves', async () => {
    const { ctx, writer, keeper } = actionContext();
    keeper.keepResult = notReady;
    const done = [await current(ctx, revisions, false), paused(), irreconcilable(ctx, 'bad spec'), noServiceAccount(actionContext({ target: { serviceAccount: 'deployer' } }).ctx)];
    assert.deepEqual(done.map((d) => d.status?.kind), ['current', 'paused', 'irreconcilable', 'irreconcilable']);
    assert.deepEqual(done.map((d) => d.failure?.reason), [undefined, undefined, undefined, 'ServiceAccountNotFound']);
    assert.deepEqual(writer.statuses, []);
    await settle(ctx, done[0] ?? paused());
    assert.equal(writer.statuses.length, 1);
  });
});

describe('current', () => {
  it('keeps the latest revision with drift repair, writes readiness and ends with the periodic requeue', async () => {
    const { ctx, helm, keeper, writer } = actionContext();
    keeper.keepResult = notReady;
    const result = await settle(ctx, current(ctx, revisions, false));
    assert.deepEqual(result, { done: true, outcome: { requeueAfterMs: PERIOD_MS } });
    assert.deepEqual(helm.statusCalls, [], 'no helm process');
    assert.deepEqual(keeper.kept, [
      {
        namespace: 'ns1',
        release: 'demo',
        revision: 4,
        manifest: undefined,
        // The record by its creation time and fingerprint, not only its number.
        recordCreatedAt: revisions[1]?.createdAt,
        fingerprint: DESIRED_FINGERPRINT,
        ownerKind: 'WebApp.apps.example.com',
        watch: true,
        repair: true,
        awaitCaches: undefined,
        impersonate: undefined,
        ownerUid: 'uid-1',
        confinement: { namespace: 'ns1', allowClusterScoped: false, allowCrossNamespace: false },
      },
    ]);
    assert.deepEqual(conditionSummary(writtenCondition(writer, 'Ready')), {
      status: 'False',
      reason: 'DeploymentNotAvailable',
      message: 'Deployment web: 1 of 2 replicas available',
    });
  });

  it('fetches the release once when the status lacks it', async () => {
    const { ctx, helm, writer } = actionContext();
    helm.statusResult = helmRelease(4, { notes: 'upgraded notes' });
    await settle(ctx, current(ctx, revisions, true));
    assert.deepEqual(helm.statusCalls, [{ release: 'demo', namespace: 'ns1', timeoutMs: HELM_TIMEOUT_MS, impersonate: undefined }]);
    assert.deepEqual(writer.last?.deployedRelease, { name: 'demo', namespace: 'ns1', revision: 4, chart: 'webapp', version: '0.1.0', appVersion: '1.0', inventory: [] });
    assert.deepEqual(conditionSummary(writtenCondition(writer, 'Deployed')), { status: 'True', reason: 'UpgradeSuccessful', message: 'upgraded notes' });
  });

  it('names the latest record’s Secret version to the keeper, so a record just judged is not read again', async () => {
    const { ctx, keeper } = actionContext();
    keeper.keepResult = notReady;
    await settle(ctx, current(ctx, [storedRevision(1, 'superseded', { uid: 'u1', resourceVersion: '7' }), storedRevision(2, 'deployed', { uid: 'u2', resourceVersion: '9' })], false));
    assert.deepEqual(keeper.kept.map((k) => k.recordVersion), [{ uid: 'u2', resourceVersion: '9' }]);
  });

  it('writes nothing when the status already says all of it', async () => {
    const first = actionContext();
    first.keeper.keepResult = notReady;
    await settle(first.ctx, current(first.ctx, revisions, false));
    const settled = first.writer.last;
    const again = actionContext({ cr: webApp({}, settled) });
    again.keeper.keepResult = notReady;
    await settle(again.ctx, current(again.ctx, revisions, false));
    assert.equal(first.writer.statuses.length, 1);
    assert.deepEqual(again.writer.statuses, [], 'an idle operator makes no API writes');
  });

  it('keeps nothing when there is no revision', async () => {
    const { ctx, keeper, writer } = actionContext();
    await settle(ctx, current(ctx, [], false));
    assert.deepEqual(keeper.kept, []);
    assert.equal(writtenCondition(writer, 'Initialized').status, 'True');
  });

  it('announces each repair as DriftRepaired, naming at most five fields, and counts it by object kind', async () => {
    const counted: string[] = [];
    const { ctx, keeper, events } = actionContext({ onDriftRepaired: (cr, objectKind) => counted.push(`${cr.metadata.name}:${objectKind}`) });
    keeper.keepResult = {
      inventory,
      repaired: [
        { object: 'Deployment web', action: 'updated', fields: ['spec.replicas', 'a', 'b', 'c', 'd', 'sixth'] },
        { object: 'ConfigMap cfg', action: 'created', fields: [] },
      ],
      readiness: undefined,
    };
    await settle(ctx, current(ctx, revisions, false));
    assert.deepEqual(events.events, [
      { type: 'Warning', reason: 'DriftRepaired', message: 'Deployment web had drifted (spec.replicas, a, b, c, d); set it back as the chart says (revision 4 unchanged)' },
      { type: 'Warning', reason: 'DriftRepaired', message: 'ConfigMap cfg was missing; recreated it as the chart says (revision 4 unchanged)' },
    ]);
    assert.deepEqual(counted, [`${ctx.cr.metadata.name}:Deployment`, `${ctx.cr.metadata.name}:ConfigMap`]);
  });

  it("reads and repairs as the namespace's ServiceAccount when the kind names one", async () => {
    const { ctx, helm, keeper } = actionContext({ target: { serviceAccount: 'tenant' } });
    await settle(ctx, current(ctx, revisions, true));
    assert.equal(helm.statusCalls[0]?.impersonate, 'system:serviceaccount:ns1:tenant');
    assert.equal(keeper.kept[0]?.impersonate, 'system:serviceaccount:ns1:tenant');
  });

  it('a repair RBAC refuses is an Irreconcilable condition naming who may not do what, a warning, and a retry', async () => {
    const { ctx, keeper, events, writer } = actionContext({ target: { serviceAccount: 'tenant' } });
    keeper.keepResult = new Error(
      'cannot repair ConfigMap ns1/cfg: configmaps "cfg" is forbidden: User "system:serviceaccount:ns1:tenant" cannot patch resource "configmaps" in API group "" in the namespace "ns1"',
    );
    const expected =
      'cannot keep the release as the chart says: system:serviceaccount:ns1:tenant may not patch configmaps "cfg" in namespace ns1; ' +
      'this release runs as ServiceAccount ns1/tenant: grant it what the chart needs (chartpilot generate rbac --tenant-namespace ns1), ' +
      "or change the resource's spec so the chart does not need it";
    await assert.rejects(settle(ctx, current(ctx, revisions, false)), (err: unknown) => err instanceof ReconcileFailure && err.message === expected);
    assert.deepEqual(events.events, [{ type: 'Warning', reason: 'ReconcileError', message: expected }]);
    assert.deepEqual(conditionSummary(writtenCondition(writer, 'Irreconcilable')), { status: 'True', reason: 'ReconcileError', message: expected });
  });

  it('other keep failures are retried without a condition, as before', async () => {
    const { ctx, keeper, writer } = actionContext();
    keeper.keepResult = new Error('GET /api/v1/namespaces/ns1/configmaps/cfg: no response within 30000 ms');
    await assert.rejects(settle(ctx, current(ctx, revisions, false)), /no response/);
    assert.deepEqual(writer.statuses, []);
  });

  it('ends without a requeue when the period is 0', async () => {
    const { ctx } = actionContext({ requeue: {} });
    assert.deepEqual(await settle(ctx, current(ctx, [], false)), { done: true, outcome: {} });
  });
});

describe('paused', () => {
  it('says so in a Paused condition and ends without a requeue', async () => {
    const { ctx, writer, helm } = actionContext();
    assert.deepEqual(await settle(ctx, paused()), { done: true, outcome: {} });
    assert.deepEqual(conditionSummary(writtenCondition(writer, 'Paused')), {
      status: 'True',
      reason: 'ReconcilePaused',
      message: 'reconciliation is paused by the annotation helm.sdk.operatorframework.io/pause-reconcile; remove it to resume',
    });
    assert.deepEqual(helm.upgrades, []);
  });
});

describe('irreconcilable', () => {
  it('warns with the problem, writes Irreconcilable and ends without a requeue', async () => {
    const { ctx, events, writer } = actionContext();
    const problem = 'spec must be a map of chart values, but it is a list; set spec to an object such as {replicaCount: 2}';
    assert.deepEqual(await settle(ctx, irreconcilable(ctx, problem)), { done: true, outcome: {} });
    assert.deepEqual(events.events, [{ type: 'Warning', reason: 'ReconcileError', message: problem }]);
    assert.deepEqual(conditionSummary(writtenCondition(writer, 'Irreconcilable')), { status: 'True', reason: 'ReconcileError', message: problem });
  });
});

describe('noServiceAccount', () => {
  it('names the missing ServiceAccount and the identity, writes Irreconcilable and fails for a retry, leaving the release alone', async () => {
    const { ctx, events, writer, helm } = actionContext({ target: { serviceAccount: 'tenant' } });
    const expected =
      'ServiceAccount ns1/tenant does not exist: chartpilot runs every Helm action for this resource as system:serviceaccount:ns1:tenant ' +
      "(the watches entry's serviceAccount, or --default-service-account); create it and grant it what the chart needs in namespace ns1 " +
      '(chartpilot generate rbac --tenant-namespace ns1 writes that Role). The deployed release is left as it is';
    await assert.rejects(settle(ctx, noServiceAccount(ctx)), (err: unknown) => err instanceof ReconcileFailure && err.reason === 'ServiceAccountNotFound' && err.message === expected);
    assert.deepEqual(events.events, [{ type: 'Warning', reason: 'ServiceAccountNotFound', message: expected }]);
    assert.deepEqual(conditionSummary(writtenCondition(writer, 'Irreconcilable')), { status: 'True', reason: 'ServiceAccountNotFound', message: expected });
    assert.deepEqual([helm.upgrades, helm.uninstalls, helm.rollbacks], [[], [], []]);
  });
});

describe('stuck', () => {
  it('fails the reconcile with ReconcileError so the queue retries with backoff, writing no status', async () => {
    const { ctx, writer } = actionContext();
    await assert.rejects(
      settle(ctx, stuck('unlock ran but the release did not change as expected; will retry')),
      (err: unknown) => err instanceof ReconcileFailure && err.reason === 'ReconcileError' && err.message === 'unlock ran but the release did not change as expected; will retry',
    );
    assert.deepEqual(writer.statuses, []);
  });
});
