import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HelmError } from '../../../../../src/helm/types.js';
import { bucketOf } from '../../../../../src/lib/uid-bucket.js';
import { deploy } from '../../../../../src/engines/helm/actions/deploy.js';
import type { Readiness } from '../../../../../src/core/model.js';
import { helmRelease } from '../../../fakes/reconcile-ports.js';
import { actionContext, conditionSummary, DESIRED_FINGERPRINT, HELM_TIMEOUT_MS, HISTORY_MAX, PERIOD_MS, reconcilingWrites, webApp, writtenCondition, settle } from './context-fixture.js';

const ready: Readiness = { ready: true, failed: false, reason: 'AllResourcesReady', message: 'all 1 resource is ready' };
const inventory = [{ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns1', name: 'cfg' }];

/** What every object rendered for `ns1/demo` (uid-1) is annotated with when it cannot be owned. */
const nonOwned = { 'operator-sdk/primary-resource': 'ns1/demo', 'operator-sdk/primary-resource-type': 'WebApp.apps.example.com' };

describe('deploy: the helm request', () => {
  it('installs the values with the fingerprint and owner kind on the release record and ownership via post-render', async () => {
    const { ctx, helm } = actionContext({ values: { replicas: 2, image: { tag: '1.2' } }, target: { allowCrossNamespace: true } });
    await settle(ctx, deploy(ctx, 'install'));
    assert.deepEqual(helm.upgrades, [
      {
        release: 'demo',
        namespace: 'ns1',
        chart: '/charts/webapp',
        values: { replicas: 2, image: { tag: '1.2' } },
        timeoutMs: HELM_TIMEOUT_MS,
        force: false,
        disableHooks: false,
        description: undefined,
        historyMax: HISTORY_MAX,
        releaseLabels: { 'chartpilot.io/fingerprint': DESIRED_FINGERPRINT, 'chartpilot.io/owner-kind': 'WebApp.apps.example.com' },
        postRender: {
          labels: { 'chartpilot.io/owner-uid': 'uid-1', 'chartpilot.io/owner-bucket': String(bucketOf('uid-1')) },
          annotations: {},
          owner: {
            reference: { apiVersion: 'apps.example.com/v1', kind: 'WebApp', name: 'demo', uid: 'uid-1' },
            namespace: 'ns1',
            clusterScopedKinds: ['v1/Namespace', 'rbac.authorization.k8s.io/v1/ClusterRole'],
            namespacedKinds: ['v1/ConfigMap', 'v1/Secret', 'v1/Service', 'apps/v1/Deployment'],
            nonOwnedAnnotations: nonOwned,
            allowClusterScoped: false,
            allowCrossNamespace: true,
          },
        },
        impersonate: undefined,
        signal: undefined,
        owner: { uid: 'uid-1', confinement: { namespace: 'ns1', allowClusterScoped: false, allowCrossNamespace: true } },
      },
    ]);
  });

  it('re-reads discovery at once when the post-renderer refused unknown kinds, and tries once more', async () => {
    const { ctx, helm, keeper } = actionContext();
    const unknown = new HelmError('render', 'the cluster does not serve the kind example.com/v1/Widget', 'upgrade', { unknownKinds: ['example.com/v1/Widget'] });
    let calls = 0;
    helm.upgradeInstall = (req) => {
      helm.upgrades.push(req);
      calls += 1;
      return calls === 1 ? Promise.reject(unknown) : Promise.resolve(helmRelease(1));
    };
    keeper.learnAnswer = true;
    await settle(ctx, deploy(ctx, 'install'));
    assert.deepEqual(keeper.learned, [['example.com/v1/Widget']]);
    assert.equal(helm.upgrades.length, 2, 'deployed again once discovery knew the kind');
    assert.equal(ctx.failure, undefined);
  });

  it('a kind discovery still does not know stays refused: one helm call, the refusal recorded', async () => {
    const { ctx, helm, keeper } = actionContext();
    helm.upgradeResult = new HelmError('render', 'the cluster does not serve the kind example.com/v1/Widget', 'upgrade', { unknownKinds: ['example.com/v1/Widget'] });
    keeper.learnAnswer = false;
    await settle(ctx, deploy(ctx, 'install'));
    assert.equal(helm.upgrades.length, 1);
    assert.match(ctx.failure?.error ?? '', /does not serve the kind example\.com\/v1\/Widget/);
  });

  it("runs as the namespace's ServiceAccount when the kind names one", async () => {
    const { ctx, helm } = actionContext({ target: { serviceAccount: 'tenant' } });
    await settle(ctx, deploy(ctx, 'install'));
    assert.equal(helm.upgrades[0]?.impersonate, 'system:serviceaccount:ns1:tenant');
  });

  it('forces only upgrades, and only with upgrade-force', async () => {
    const forced = { upgradeForce: true };
    const cases = [
      { action: 'install', options: forced, force: false },
      { action: 'upgrade', options: forced, force: true },
      { action: 'upgrade', options: {}, force: false },
    ] as const;
    for (const c of cases) {
      const { ctx, helm } = actionContext({ options: c.options });
      await settle(ctx, deploy(ctx, c.action));
      assert.equal(helm.upgrades[0]?.force, c.force, `${c.action} with ${JSON.stringify(c.options)}`);
    }
  });

  it('takes hooks and description from the annotations of the action it runs', async () => {
    const options = { installDisableHooks: true, installDescription: 'first', upgradeDisableHooks: false, upgradeDescription: 'second' };
    const install = actionContext({ options });
    await settle(install.ctx, deploy(install.ctx, 'install'));
    assert.deepEqual([install.helm.upgrades[0]?.disableHooks, install.helm.upgrades[0]?.description], [true, 'first']);
    const upgrade = actionContext({ options });
    await settle(upgrade.ctx, deploy(upgrade.ctx, 'upgrade'));
    assert.deepEqual([upgrade.helm.upgrades[0]?.disableHooks, upgrade.helm.upgrades[0]?.description], [false, 'second']);
  });

  it('only labels and annotates, owning nothing, without a keeper to tell cluster-scoped kinds', async () => {
    const { ctx, helm } = actionContext({ keeper: false });
    await settle(ctx, deploy(ctx, 'install'));
    assert.deepEqual(helm.upgrades[0]?.postRender, { labels: { 'chartpilot.io/owner-uid': 'uid-1', 'chartpilot.io/owner-bucket': String(bucketOf('uid-1')) }, annotations: nonOwned });
  });

  it('neither labels nor owns when the resource has no uid', async () => {
    const { ctx, helm } = actionContext({ cr: webApp({ uid: undefined }) });
    await settle(ctx, deploy(ctx, 'install'));
    assert.deepEqual(helm.upgrades[0]?.postRender, { labels: {}, annotations: nonOwned });
  });
});

describe('deploy: success', () => {
  it('announces the install, writes Deployed, release and readiness, and ends with the periodic requeue', async () => {
    const { ctx, helm, events, writer, keeper } = actionContext();
    helm.upgradeResult = helmRelease(1, { notes: 'Visit http://demo' });
    keeper.keepResult = { inventory, repaired: [], readiness: ready };
    const result = await settle(ctx, deploy(ctx, 'install'));
    assert.deepEqual(result, { done: true, outcome: { requeueAfterMs: PERIOD_MS } });
    assert.deepEqual(events.events, [{ type: 'Normal', reason: 'InstallSuccessful', message: 'installed release demo to revision 1 (chart webapp-0.1.0)' }]);
    // Right after an upgrade the caches still show the old objects: no repair yet.
    assert.deepEqual(keeper.kept, [
      {
        namespace: 'ns1',
        release: 'demo',
        revision: 1,
        manifest: helmRelease(1).manifest,
        recordCreatedAt: undefined,
        fingerprint: DESIRED_FINGERPRINT,
        ownerKind: 'WebApp.apps.example.com',
        watch: true,
        repair: false,
        awaitCaches: true,
        impersonate: undefined,
        ownerUid: 'uid-1',
        confinement: { namespace: 'ns1', allowClusterScoped: false, allowCrossNamespace: false },
      },
    ]);
    // Reconciling before helm ran (kstatus: InProgress), gone once it deployed.
    assert.deepEqual(reconcilingWrites(writer), ["True/Installing/Running 'install' of release ns1/demo (timeout 5m)", '-']);
    const status = writer.last;
    assert.equal(status?.observedGeneration, 3);
    assert.equal(writer.statuses[0]?.observedGeneration, undefined, 'the announcement observes nothing yet');
    // deployedAt: when this deploy ended, the per-CR metrics' last successful deploy.
    assert.deepEqual(status.deployedRelease, {
      name: 'demo',
      namespace: 'ns1',
      revision: 1,
      chart: 'webapp',
      version: '0.1.0',
      appVersion: '1.0',
      deployedAt: writtenCondition(writer, 'Deployed').lastTransitionTime,
      inventory,
    });
    assert.deepEqual(conditionSummary(writtenCondition(writer, 'Deployed')), { status: 'True', reason: 'InstallSuccessful', message: 'Visit http://demo' });
    assert.deepEqual(conditionSummary(writtenCondition(writer, 'Ready')), { status: 'True', reason: 'AllResourcesReady', message: 'all 1 resource is ready' });
    assert.equal(ctx.failure, undefined);
  });

  it('sends the announcement beside the helm call, and lets it land before the status that tells the result', async () => {
    const { ctx, helm, writer } = actionContext();
    const order: string[] = [];
    const sentOn: (string | undefined)[] = [];
    let land = (): void => undefined;
    const patchStatus = writer.patchStatus.bind(writer);
    writer.patchStatus = (cr, patch) => {
      const n = writer.statuses.length;
      order.push(`status ${String(n)} sent`);
      sentOn.push(cr.metadata.resourceVersion);
      const written = patchStatus(cr, patch);
      // The first write (the announcement) lands only when the test says so.
      if (n > 0) return written;
      return new Promise((resolve) => {
        land = () => {
          if (order.includes('announcement landed')) return;
          order.push('announcement landed');
          resolve(written);
        };
        // An announcement awaited before helm starts lands on its own (and the order tells).
        setTimeout(land, 100);
      });
    };
    helm.upgradeInstall = (req) => {
      order.push('helm started');
      helm.upgrades.push(req);
      setImmediate(() => {
        land();
      });
      return Promise.resolve(helmRelease(1));
    };
    await settle(ctx, deploy(ctx, 'install'));
    assert.deepEqual(order, ['status 0 sent', 'helm started', 'announcement landed', 'status 1 sent']);
    assert.deepEqual(reconcilingWrites(writer), ["True/Installing/Running 'install' of release ns1/demo (timeout 5m)", '-']);
    const first = Number(sentOn[0]);
    assert.deepEqual(sentOn, [String(first), String(first + 1)], 'the result was written on the version the announcement made');
  });

  it('deploys when the announcement cannot be written, and says so in the log', async () => {
    const { ctx, helm, writer, logged } = actionContext();
    const patchStatus = writer.patchStatus.bind(writer);
    let first = true;
    writer.patchStatus = (cr, patch) => {
      if (!first) return patchStatus(cr, patch);
      first = false;
      return Promise.reject(new Error('etcdserver: request timed out'));
    };
    helm.upgradeResult = helmRelease(1);
    const result = await settle(ctx, deploy(ctx, 'install'));
    assert.equal(result.done, true);
    assert.equal(helm.upgrades.length, 1);
    assert.equal(conditionSummary(writtenCondition(writer, 'Deployed')).status, 'True');
    assert.match(logged(), /could not write Reconciling before the helm call/);
  });

  it('announces an upgrade as UpgradeSuccessful and clears an earlier failure', async () => {
    const failedBefore = { conditions: [{ type: 'ReleaseFailed', status: 'True' as const, reason: 'UpgradeError', message: 'x', lastTransitionTime: '2026-01-01T09:00:00Z' }] };
    const { ctx, helm, events, writer } = actionContext({ cr: webApp({}, failedBefore) });
    helm.upgradeResult = helmRelease(5);
    await settle(ctx, deploy(ctx, 'upgrade'));
    assert.deepEqual(events.events, [{ type: 'Normal', reason: 'UpgradeSuccessful', message: 'upgraded release demo to revision 5 (chart webapp-0.1.0)' }]);
    assert.equal(writtenCondition(writer, 'Deployed').reason, 'UpgradeSuccessful');
    assert.equal(writer.last?.conditions?.some((c) => c.type === 'ReleaseFailed'), false);
  });

  it('names each overridden key in an OverrideValuesInUse warning, never its value', async () => {
    const secret = 's3cr3t-registry.example.com';
    const { ctx, events, logged } = actionContext({
      target: { overrides: { 'image.repository': secret, 'auth.password': 'hunter2' } },
      values: { image: { repository: secret }, auth: { password: 'hunter2' } },
    });
    await settle(ctx, deploy(ctx, 'install'));
    assert.deepEqual(
      events.events.filter((e) => e.reason === 'OverrideValuesInUse'),
      ['image.repository', 'auth.password'].map((key) => ({
        type: 'Warning',
        reason: 'OverrideValuesInUse',
        message: `chart value "${key}" is set by the operator's watches.yaml overrideValues and wins over the resource's spec`,
      })),
    );
    for (const e of events.events) assert.doesNotMatch(e.message, /s3cr3t|hunter2/);
    assert.doesNotMatch(logged(), /s3cr3t|hunter2/);
  });

  it('emits no OverrideValuesInUse warnings when told to suppress them', async () => {
    const { ctx, events } = actionContext({ target: { overrides: { 'image.repository': 'mirror/app' } }, suppressOverrideValues: true });
    await settle(ctx, deploy(ctx, 'install'));
    assert.deepEqual(events.events.map((e) => e.reason), ['InstallSuccessful']);
  });

  it('writes the status without readiness when the release’s objects cannot be inspected', async () => {
    const { ctx, writer, keeper, logged } = actionContext();
    keeper.keepResult = new Error('discovery failed');
    assert.deepEqual(await settle(ctx, deploy(ctx, 'install')), { done: true, outcome: { requeueAfterMs: PERIOD_MS } });
    assert.equal(writtenCondition(writer, 'Deployed').status, 'True');
    assert.equal(writer.last?.conditions?.some((c) => c.type === 'Ready'), false);
    assert.equal(writer.last.deployedRelease?.inventory, undefined);
    assert.match(logged(), /deployed, but could not inspect the release objects/);
  });

  it('writes Ready Unknown when readiness is not tracked', async () => {
    const { ctx, writer } = actionContext({ target: { watchDependentResources: false } });
    await settle(ctx, deploy(ctx, 'install'));
    assert.deepEqual(conditionSummary(writtenCondition(writer, 'Ready')), {
      status: 'Unknown',
      reason: 'ReadinessNotTracked',
      message: 'readiness is not tracked: dependent resources are not watched (watchDependentResources: false) or not yet cached',
    });
  });
});

describe('deploy: failure', () => {
  it('records the failed install for remediation and continues, with nothing written but the announcement', async () => {
    const { ctx, helm, events, writer, keeper } = actionContext({ progress: { taken: ['add-finalizer'] } });
    const cause = new HelmError('failed', 'Deployment.apps "web" is invalid: spec.replicas: Invalid value: -1', 'upgrade');
    helm.upgradeResult = cause;
    const result = await settle(ctx, deploy(ctx, 'install'));
    assert.deepEqual(result, { done: false });
    assert.deepEqual(ctx.failure, { action: 'install', cause, error: 'helm install failed: Deployment.apps "web" is invalid: spec.replicas: Invalid value: -1', remediation: [] });
    assert.deepEqual(ctx.progress, { taken: ['add-finalizer'], failedDeploy: 'install', remediationFailed: false, remaining: undefined });
    assert.deepEqual(events.events, []);
    assert.deepEqual(reconcilingWrites(writer), ["True/Installing/Running 'install' of release ns1/demo (timeout 5m)"]);
    assert.deepEqual(keeper.kept, []);
  });

  it('says "helm upgrade failed" for a failed upgrade, whatever was thrown', async () => {
    const { ctx, helm, logged } = actionContext();
    helm.upgradeResult = new Error('exec: helm not found');
    await settle(ctx, deploy(ctx, 'upgrade'));
    assert.equal(ctx.failure?.error, 'helm upgrade failed: exec: helm not found');
    assert.equal(ctx.progress.failedDeploy, 'upgrade');
    assert.match(logged(), /"errorKind":"unknown"/);
  });

  it('refuses to deploy a resource the plan should have found irreconcilable', async () => {
    const { ctx, helm } = actionContext({ options: null });
    await assert.rejects(settle(ctx, deploy(ctx, 'install')), /unreachable/);
    assert.deepEqual(helm.upgrades, []);
  });
});
