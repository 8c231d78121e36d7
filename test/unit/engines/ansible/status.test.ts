import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { completionTime, recordOf, statusPatch, type AnsibleCondition, type StatusChange, type StatusContext } from '../../../../src/engines/ansible/status.js';
import type { CrStatus } from '../../../../src/core/model.js';

const CTX: StatusContext = { manageStatus: true, generation: 3, now: '2026-01-01T10:00:00Z', watchDependents: true, inputs: 'fp', stallAfter: 3 };
const RUNNING_MESSAGE = "Running 'run' of role memcached for web (timeout 10m)";
const RUNNING: StatusChange = { kind: 'running', message: RUNNING_MESSAGE };
const RESULT = { ok: 3, changed: 1, skipped: 0, failures: 0, completion: '2026-01-01T10:00:00.5+00:00' };
const RECORD = { inputs: 'fp', ranAt: '2026-01-01T10:00:00.000Z', inventory: [{ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns', name: 'web' }] };
const READY = { ready: true, failed: false, reason: 'AllResourcesReady', message: 'all 1 resource is ready' };

function cond(status: CrStatus | Record<string, unknown> | undefined, type: string): AnsibleCondition | undefined {
  return ((status as { conditions?: AnsibleCondition[] } | undefined)?.conditions ?? []).find((c) => c.type === type);
}

describe('statusPatch (ansible-operator conditions, chartpilot Ready and record)', () => {
  it('a successful run: Running/Successful with ansibleResult, Successful True, Failure False, Ready, record, observedGeneration', () => {
    const p = statusPatch(undefined, { kind: 'ran', succeeded: true, reason: 'Successful', message: '', result: RESULT, record: RECORD, readiness: READY }, CTX);
    assert.ok(p);
    assert.deepEqual(cond(p, 'Running'), {
      type: 'Running',
      status: 'True',
      reason: 'Successful',
      message: 'Awaiting next reconciliation',
      lastTransitionTime: CTX.now,
      observedGeneration: 3,
      ansibleResult: RESULT,
    });
    assert.equal(cond(p, 'Successful')?.status, 'True');
    assert.equal(cond(p, 'Successful')?.message, 'Last reconciliation succeeded');
    assert.equal(cond(p, 'Failure')?.status, 'False');
    assert.equal(cond(p, 'Ready')?.status, 'True');
    assert.deepEqual(p['chartpilot'], { ...RECORD, summary: { state: 'Ready', reason: 'AllResourcesReady', message: 'all 1 resource is ready' } });
    assert.equal(p['observedGeneration'], 3);
  });

  it('a failed run: Failure True with the message, Running and Successful False; the old record stays', () => {
    const before = statusPatch(undefined, { kind: 'ran', succeeded: true, reason: 'Successful', message: '', result: RESULT, record: RECORD, readiness: READY }, CTX) as CrStatus;
    const failed = { ...RESULT, failures: 1 };
    const p = statusPatch(before, { kind: 'ran', succeeded: false, reason: 'Failed', message: 'create configmap: boom', result: failed, record: undefined, readiness: undefined }, { ...CTX, now: '2026-01-01T10:05:00Z' });
    assert.ok(p);
    assert.equal(cond(p, 'Failure')?.status, 'True');
    assert.equal(cond(p, 'Failure')?.reason, 'Failed');
    assert.equal(cond(p, 'Failure')?.message, 'create configmap: boom');
    assert.deepEqual(cond(p, 'Failure')?.ansibleResult, failed);
    assert.equal(cond(p, 'Running')?.status, 'False');
    assert.equal(cond(p, 'Successful')?.status, 'False');
    assert.equal(recordOf(p['chartpilot']), undefined, 'no record written: the run is retried');
    assert.deepEqual(
      p['chartpilot'],
      { failures: { inputs: 'fp', count: 1 }, summary: { state: 'Failed', reason: 'Failed', message: 'create configmap: boom' } },
      'the summary, and the failure counted',
    );
  });

  it('kstatus: Reconciling while a run runs and while failures are retried, Stalled once they spent the budget, cleared by a success', () => {
    const kstatus = (st: CrStatus | Record<string, unknown> | undefined): string =>
      ['Reconciling', 'Stalled'].map((t) => { const c = cond(st, t); return c === undefined ? '-' : `${c.status} ${c.reason}`; }).join(' | ');
    const merged = (before: Record<string, unknown>, patch: Record<string, unknown> | undefined): Record<string, unknown> => ({
      ...before,
      ...patch,
      chartpilot: Object.fromEntries(Object.entries({ ...(before['chartpilot'] as object), ...(patch?.['chartpilot'] as object) }).filter(([, v]) => v !== null)),
    });
    let st: Record<string, unknown> = merged({}, statusPatch(undefined, RUNNING, CTX));
    assert.equal(kstatus(st), 'True Running | -');
    assert.equal(cond(st, 'Reconciling')?.message, RUNNING_MESSAGE);
    const fail = (): void => {
      st = merged(st, statusPatch(st, RUNNING, CTX));
      st = merged(st, statusPatch(st, { kind: 'ran', succeeded: false, reason: 'Failed', message: 'task x: boom', result: RESULT, record: undefined, readiness: undefined }, CTX));
    };
    fail();
    assert.equal(kstatus(st), 'True RetryingAfterFailure | -');
    fail();
    fail();
    assert.equal(kstatus(st), '- | True RetriesExhausted');
    assert.match(cond(st, 'Stalled')?.message ?? '', /^3 attempts in a row failed .*task x: boom/u);
    st = merged(st, statusPatch(st, RUNNING, CTX));
    assert.equal(kstatus(st), 'True Running | -', 'a retry runs: Reconciling while it does');
    const done = statusPatch(st, { kind: 'ran', succeeded: true, reason: 'Successful', message: '', result: RESULT, record: RECORD, readiness: READY }, CTX);
    assert.equal((done?.['chartpilot'] as Record<string, unknown>)['failures'], null, 'the count is taken off');
    st = merged(st, done);
    assert.equal(kstatus(st), '- | -');
    assert.equal(statusPatch(st as CrStatus, { kind: 'current', readiness: READY }, CTX), undefined, 'and then nothing to write');
    assert.equal(kstatus(statusPatch(undefined, { kind: 'problem', reason: 'InvalidAnnotation', message: 'bad' }, CTX)), '- | True InvalidAnnotation');
  });

  it('the next success clears the failure', () => {
    const failedStatus = { conditions: [{ type: 'Failure', status: 'True', reason: 'Failed', message: 'x', lastTransitionTime: 't0' }] } as unknown as CrStatus;
    const p = statusPatch(failedStatus, { kind: 'ran', succeeded: true, reason: 'Successful', message: '', result: RESULT, record: RECORD, readiness: READY }, CTX);
    assert.equal(cond(p, 'Failure')?.status, 'False');
    assert.equal(cond(p, 'Failure')?.message, '');
  });

  it('running: Running True reason Running, Successful turns False', () => {
    const before = { conditions: [{ type: 'Successful', status: 'True', reason: 'Successful', message: 'Last reconciliation succeeded', lastTransitionTime: 't0' }] } as unknown as CrStatus;
    const p = statusPatch(before, RUNNING, CTX);
    assert.equal(cond(p, 'Running')?.reason, 'Running');
    assert.equal(cond(p, 'Running')?.status, 'True');
    assert.equal(cond(p, 'Successful')?.status, 'False');
  });

  it('writes nothing when nothing changed (an idle reconcile)', () => {
    const done = statusPatch(undefined, { kind: 'ran', succeeded: true, reason: 'Successful', message: '', result: RESULT, record: RECORD, readiness: READY }, CTX) as CrStatus;
    assert.equal(statusPatch(done, { kind: 'current', readiness: READY }, { ...CTX, now: '2026-01-01T11:00:00Z' }), undefined);
    const notReady = { ready: false, failed: false, reason: 'DeploymentNotAvailable', message: 'Deployment web: 0/1' };
    assert.equal(cond(statusPatch(done, { kind: 'current', readiness: notReady }, CTX), 'Ready')?.status, 'False');
  });

  it('manageStatus: false writes only the record, never conditions', () => {
    const p = statusPatch(undefined, { kind: 'ran', succeeded: true, reason: 'Successful', message: '', result: RESULT, record: RECORD, readiness: READY }, { ...CTX, manageStatus: false });
    assert.deepEqual(p, { chartpilot: RECORD });
    assert.equal(statusPatch(undefined, RUNNING, { ...CTX, manageStatus: false }), undefined);
  });

  it('a problem: Failure True with its reason', () => {
    const p = statusPatch(undefined, { kind: 'problem', reason: 'InvalidAnnotation', message: 'bad' }, CTX);
    assert.equal(cond(p, 'Failure')?.reason, 'InvalidAnnotation');
  });

  it('keeps lastTransitionTime while a condition keeps its status', () => {
    const first = statusPatch(undefined, { kind: 'ran', succeeded: true, reason: 'Successful', message: '', result: RESULT, record: RECORD, readiness: READY }, CTX) as CrStatus;
    const again = statusPatch(first, { kind: 'ran', succeeded: true, reason: 'Successful', message: '', result: { ...RESULT, ok: 4 }, record: RECORD, readiness: READY }, { ...CTX, now: '2026-01-01T12:00:00Z' });
    assert.equal(cond(again, 'Successful')?.lastTransitionTime, CTX.now);
  });
});

describe('recordOf and completionTime', () => {
  it('reads a record back, and nothing from garbage', () => {
    assert.deepEqual(recordOf(RECORD), RECORD);
    assert.equal(recordOf({ inputs: 1 }), undefined);
    assert.equal(recordOf('x'), undefined);
    assert.deepEqual(recordOf({ ...RECORD, inventory: [{ kind: 'x' }, ...RECORD.inventory] })?.inventory, RECORD.inventory);
  });
  it('formats completion as ansible-operator does', () => {
    assert.equal(completionTime(Date.parse('2026-01-01T10:00:00.500Z')), '2026-01-01T10:00:00.5+00:00');
    assert.equal(completionTime(Date.parse('2026-01-01T10:00:00.000Z')), '2026-01-01T10:00:00+00:00');
  });
});

describe('status.chartpilot.summary of an Ansible kind', () => {
  const summaryOf = (p: Record<string, unknown> | undefined): unknown => (p?.['chartpilot'] as { summary?: unknown } | undefined)?.summary;
  const ran = (succeeded: boolean, reason: string, message: string, readiness = READY): StatusChange =>
    ({ kind: 'ran', succeeded, reason, message, result: RESULT, record: succeeded ? RECORD : undefined, readiness });

  it('tells a running, failed, stalled or progressing CR from a ready one', () => {
    const ok = statusPatch(undefined, ran(true, 'Successful', ''), CTX) as CrStatus;
    assert.deepEqual(summaryOf(ok), { state: 'Ready', reason: 'AllResourcesReady', message: 'all 1 resource is ready' });
    const running = statusPatch(ok, RUNNING, CTX) as CrStatus;
    assert.deepEqual(summaryOf(running), { state: 'Running', reason: 'Running', message: 'Running reconciliation' });
    const failed = statusPatch({ ...ok, ...running }, ran(false, 'RunTimeout', 'the run took longer than 20s\nand was stopped'), CTX);
    assert.deepEqual(summaryOf(failed), { state: 'Failed', reason: 'RunTimeout', message: 'the run took longer than 20s' });
    const retrying = statusPatch({ ...running, ...failed }, RUNNING, CTX);
    assert.equal((summaryOf(retrying) as { state: string }).state, 'Failed', 'a retry of a failed run is still Failed until it succeeds');
    assert.equal((summaryOf(statusPatch(undefined, { kind: 'problem', reason: 'InvalidAnnotation', message: 'bad period' }, CTX)) as { state: string }).state, 'Stalled');
    const rolling = { ready: false, failed: false, reason: 'DeploymentNotAvailable', message: 'Deployment web: 0/1 replicas available' };
    assert.equal((summaryOf(statusPatch(undefined, ran(true, 'Successful', '', rolling), CTX)) as { state: string }).state, 'Progressing');
    const deadline = { ready: false, failed: true, reason: 'ProgressDeadlineExceeded', message: 'Deployment web: progress deadline exceeded' };
    assert.equal((summaryOf(statusPatch(undefined, ran(true, 'Successful', '', deadline), CTX)) as { state: string }).state, 'Stalled');
    assert.equal((summaryOf(statusPatch(undefined, ran(true, 'Successful', ''), { ...CTX, watchDependents: false })) as { state: string }).state, 'Succeeded');
  });

  it('is written when only it changed, and not again when nothing did', () => {
    const status = { ...(statusPatch(undefined, ran(true, 'Successful', ''), CTX) as CrStatus) };
    assert.equal(statusPatch(status, { kind: 'current', readiness: READY }, CTX), undefined, 'idle: no write');
    // A status from before the summary existed gets it once.
    const { summary: _s, ...record } = status['chartpilot'] as Record<string, unknown>;
    const older = { ...status, chartpilot: record };
    assert.deepEqual(summaryOf(statusPatch(older, { kind: 'current', readiness: READY }, CTX)), { state: 'Ready', reason: 'AllResourcesReady', message: 'all 1 resource is ready' });
  });

  it('is not written when the role manages the status', () => {
    const p = statusPatch(undefined, ran(true, 'Successful', ''), { ...CTX, manageStatus: false });
    assert.deepEqual(p?.['chartpilot'], RECORD);
  });
});
