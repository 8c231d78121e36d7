import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { current } from '../../../../src/engines/helm/actions/report.js';
import { contestMessage, driftCondition, ruleSnippet } from '../../../../src/engines/helm/drift-report.js';
import type { Contest, KeepResult } from '../../../../src/core/model.js';
import { nextStatus } from '../../../../src/engines/helm/status.js';
import { actionContext, conditionSummary, storedRevision, webApp, writtenCondition, settle } from './actions/context-fixture.js';

const inventory = [{ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'ns1', name: 'web' }];
const replicas: Contest = {
  object: 'Deployment web',
  kind: 'Deployment',
  field: 'spec.replicas',
  pointer: '/spec/replicas',
  managers: ['kube-controller-manager (scale)'],
  repairs: 3,
  withinMs: 31_400,
  announce: true,
};
const kept = (extra: Partial<KeepResult>): KeepResult => ({ inventory, repaired: [], readiness: undefined, ...extra });

describe('telling drift left in place', () => {
  it('suggests a rule that is valid watches.yaml and says exactly what to leave alone', () => {
    const snippet = ruleSnippet([replicas, { kind: 'Deployment', pointer: '/spec/template/metadata/annotations/a~1b' }, { kind: 'ValidatingWebhookConfiguration', pointer: '/webhooks/0/clientConfig/caBundle' }, replicas]);
    assert.deepEqual(parse(snippet), {
      driftDetection: {
        ignore: [
          { paths: ['/spec/replicas', '/spec/template/metadata/annotations/a~1b'], target: { kind: 'Deployment' } },
          { paths: ['/webhooks/0/clientConfig/caBundle'], target: { kind: 'ValidatingWebhookConfiguration' } },
        ],
      },
    });
  });

  it('names the field, the other manager, how often and the rule in the warning', () => {
    assert.equal(
      contestMessage(replicas),
      'Deployment web: spec.replicas was set back 3 times in 31s and changed again each time by "kube-controller-manager (scale)"; chartpilot leaves it to them now. ' +
        'To say so in watches.yaml (and keep it so after a restart or upgrade), add to this kind\'s entry: driftDetection: {ignore: [{paths: ["/spec/replicas"], target: {kind: Deployment}}]}',
    );
    assert.match(contestMessage({ ...replicas, managers: [] }), /by another field manager \(metadata\.managedFields names none\)/);
  });

  it('sets Drifted while something differs and is left so, removes it when nothing is, and keeps it when drift was not judged', () => {
    assert.equal(driftCondition(kept({})), undefined);
    assert.equal(driftCondition(kept({ unrepaired: [], contests: [] })), 'remove');
    assert.deepEqual(driftCondition(kept({ unrepaired: [{ object: 'Deployment web', fields: ['spec.replicas'] }, { object: 'ConfigMap cfg', fields: [] }], contests: [] })), {
      type: 'Drifted',
      status: 'True',
      reason: 'DriftDetected',
      message: 'differs from the chart and is not set back (driftDetection mode warn): Deployment web (spec.replicas), ConfigMap cfg is missing',
    });
    const contested = driftCondition(kept({ unrepaired: [], contests: [{ ...replicas, announce: false }] }));
    assert.ok(contested !== undefined && contested !== 'remove');
    assert.equal(contested.reason, 'DriftContested');
    assert.match(contested.message, /^left to another field manager after repeated set-backs: Deployment web spec\.replicas \("kube-controller-manager \(scale\)"\); make it explicit with driftDetection: /);

    const now = '2026-01-01T10:00:00Z';
    const drifted = nextStatus(undefined, { kind: 'current', release: undefined, kept: kept({ unrepaired: [{ object: 'Deployment web', fields: ['spec.replicas'] }] }) }, 1, now);
    assert.equal(drifted.conditions?.find((c) => c.type === 'Drifted')?.status, 'True');
    const notJudged = nextStatus(drifted, { kind: 'current', release: undefined, kept: kept({}) }, 1, now);
    assert.equal(notJudged.conditions?.find((c) => c.type === 'Drifted')?.status, 'True', 'a deploy pass does not judge drift: the condition stays');
    const clean = nextStatus(drifted, { kind: 'current', release: undefined, kept: kept({ unrepaired: [], contests: [] }) }, 1, now);
    assert.equal(clean.conditions?.find((c) => c.type === 'Drifted'), undefined);
  });
});

describe('current: drift left in place', () => {
  const revisions = [storedRevision(4, 'deployed')];

  it('passes the entry’s driftDetection to the keeper', async () => {
    const driftDetection = { mode: 'warn' as const, ignore: [{ paths: ['/spec/replicas'] }] };
    const { ctx, keeper } = actionContext({ target: { driftDetection } });
    await settle(ctx, current(ctx, revisions, false));
    assert.deepEqual(keeper.kept[0]?.driftDetection, driftDetection);
  });

  it('announces a contest once (when the keeper gives the field up) and writes the Drifted condition', async () => {
    const { ctx, keeper, events, writer } = actionContext();
    keeper.keepResult = kept({ unrepaired: [], contests: [replicas] });
    await settle(ctx, current(ctx, revisions, false));
    assert.deepEqual(events.events.map((e) => [e.type, e.reason]), [['Warning', 'DriftContested']]);
    assert.equal(events.events[0]?.message, contestMessage(replicas));
    assert.equal(conditionSummary(writtenCondition(writer, 'Drifted')).reason, 'DriftContested');

    const again = actionContext({ cr: webApp({}, writer.last) });
    again.keeper.keepResult = kept({ unrepaired: [], contests: [{ ...replicas, announce: false }] });
    await settle(again.ctx, current(again.ctx, revisions, false));
    assert.deepEqual(again.events.events, [], 'named in the condition, not announced again');
  });

  it('warn: tells a drift when what differs changes, not on every pass', async () => {
    const { ctx, keeper, events, writer } = actionContext();
    const webDrift = kept({ unrepaired: [{ object: 'Deployment web', fields: ['spec.replicas'] }], contests: [] });
    keeper.keepResult = webDrift;
    await settle(ctx, current(ctx, revisions, false));
    assert.deepEqual(events.events, [
      { type: 'Warning', reason: 'DriftDetected', message: 'differs from the chart and is not set back (driftDetection mode warn): Deployment web (spec.replicas) (revision 4)' },
    ]);
    assert.equal(conditionSummary(writtenCondition(writer, 'Drifted')).reason, 'DriftDetected');

    const same = actionContext({ cr: webApp({}, writer.last) });
    same.keeper.keepResult = webDrift;
    await settle(same.ctx, current(same.ctx, revisions, false));
    assert.deepEqual(same.events.events, [], 'the condition already says so');

    const more = actionContext({ cr: webApp({}, writer.last) });
    more.keeper.keepResult = kept({ unrepaired: [{ object: 'Deployment web', fields: ['spec.replicas', 'spec.paused'] }], contests: [] });
    await settle(more.ctx, current(more.ctx, revisions, false));
    assert.equal(more.events.events.length, 1, 'something new differs: told');
  });
});
