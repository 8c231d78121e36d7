/**
 * Reading ansible-runner's events into a run's outcome, from event streams captured from real
 * `ansible-runner run --json` runs of the playbooks and role in test/fixtures/ansible (paths
 * rewritten to /project and /run/input).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { EventTally, MAX_TASK_MESSAGE_LENGTH, parseEventLine, type EventSummary, type RunnerEvent } from '../../../../src/engines/ansible/events.js';
import { ANSIBLE_FIXTURES } from './fixtures.js';

function summarize(name: string, secrets: readonly string[] = []): EventSummary {
  const tally = new EventTally();
  for (const line of readFileSync(join(ANSIBLE_FIXTURES, 'events', `${name}.jsonl`), 'utf8').split('\n')) {
    const e = parseEventLine(line);
    if (e === undefined) tally.addOutput(line);
    else tally.add(e);
  }
  return tally.summary(secrets);
}

function tallyOf(events: readonly RunnerEvent[]): EventTally {
  const t = new EventTally();
  for (const e of events) t.add(e);
  return t;
}

const stats = (failures: number, extra: Record<string, unknown> = {}): RunnerEvent => ({
  event: 'playbook_on_stats',
  event_data: { ok: { localhost: 1 }, changed: {}, skipped: {}, failures: failures > 0 ? { localhost: failures } : {}, dark: {}, ...extra },
});
const failed = (task: string, msg: unknown, extra: Record<string, unknown> = {}): RunnerEvent => ({
  event: 'runner_on_failed',
  event_data: { task, host: 'localhost', task_action: 'fail', res: msg === undefined ? {} : { msg }, ...extra },
});

describe('events of real runs', () => {
  it('counts ok, changed and skipped of a successful playbook', () => {
    const s = summarize('ok');
    assert.equal(s.finished, true);
    assert.deepEqual(s.stats, { ok: 2, changed: 1, skipped: 1, failures: 0 });
    assert.deepEqual(s.failedTasks, []);
    assert.equal(s.requeueAfterMs, undefined);
    assert.equal(s.statusWrittenByRole, false);
  });

  it('names only the failure that failed the run (not the ignored, not the rescued) and redacts it', () => {
    const s = summarize('fail', ['pw-0123456789ab']);
    assert.equal(s.stats.failures, 1);
    assert.deepEqual(s.failedTasks, [{ task: 'log in to the database', message: 'cannot log in with password <redacted>' }]);
    assert.equal(summarize('fail').failedTasks[0]?.message, 'cannot log in with password pw-0123456789ab');
  });

  it('reads requeue_after’s period and notices k8s_status', () => {
    const s = summarize('requeue');
    assert.equal(s.requeueAfterMs, 90_000);
    assert.equal(s.statusWrittenByRole, true);
  });

  it('counts a k8s task that changed an object', () => {
    const s = summarize('k8s');
    assert.deepEqual(s.stats, { ok: 1, changed: 1, skipped: 0, failures: 0 });
  });

  it('gives a k8s task’s error as its message', () => {
    const s = summarize('k8sfail');
    assert.deepEqual(s.failedTasks, [{ task: 'create the configmap', message: 'Could not create API client: Invalid kube-config. /dev/null file is empty' }]);
  });

  it('explains a playbook that never started with Ansible’s error and where it is', () => {
    const s = summarize('syntax');
    assert.equal(s.finished, false);
    assert.equal(s.outputError, "YAML parsing failed: While parsing a flow sequence did not find expected ',' or ']'. (/project/playbooks/syntax.yml:6:1)");
  });
});

describe('event rules', () => {
  const ok = (action: string, period: unknown, event = 'runner_on_ok'): RunnerEvent => ({ event, event_data: { task_action: action, res: { period } } });
  it('counts the FQCN and the short name of requeue_after, the first one winning, never a failed or skipped one', () => {
    assert.equal(tallyOf([ok('operator_sdk.util.requeue_after', '30s'), ok('requeue_after', '1h')]).summary([]).requeueAfterMs, 30_000);
    assert.equal(tallyOf([ok('requeue_after', '5m')]).summary([]).requeueAfterMs, 300_000);
    assert.equal(tallyOf([ok('requeue_after', '5m', 'runner_on_failed')]).summary([]).requeueAfterMs, undefined);
    assert.equal(tallyOf([ok('requeue_after', '5m', 'runner_on_skipped')]).summary([]).requeueAfterMs, undefined);
    assert.equal(tallyOf([ok('requeue_after', 'soon')]).summary([]).requeueAfterMs, undefined);
  });

  it('raises a requeue_after shorter than the reconcile-period floor to it (a period from a spec value must not make a run loop)', () => {
    assert.equal(tallyOf([ok('requeue_after', '1ms')]).summary([]).requeueAfterMs, 5_000);
    assert.equal(tallyOf([ok('requeue_after', '4.9s')]).summary([]).requeueAfterMs, 5_000);
    assert.equal(tallyOf([ok('requeue_after', '6s')]).summary([]).requeueAfterMs, 6_000);
    const resolved: RunnerEvent = { event: 'runner_on_ok', event_data: { task_action: 'requeue_after', resolved_action: 'operator_sdk.util.requeue_after', res: { period: '20s' } } };
    assert.equal(tallyOf([resolved]).summary([]).requeueAfterMs, 20_000);
  });

  it('keeps a failure without stats (the run was stopped) and one with a missing message', () => {
    const s = tallyOf([failed('a', undefined)]).summary([]);
    assert.equal(s.finished, false);
    assert.deepEqual(s.failedTasks, [{ task: 'a', message: 'the task failed without a message' }]);
  });

  it('uses a failed command’s stderr when it has no msg, and bounds long messages after redaction', () => {
    const cmd: RunnerEvent = { event: 'runner_on_failed', event_data: { task: 'c', host: 'localhost', res: { stderr: 'no such\nfile', rc: 1 } } };
    assert.equal(tallyOf([cmd, stats(1)]).summary([]).failedTasks[0]?.message, 'no such file');
    const secret = 'top-secret-value';
    const long = `${'x'.repeat(MAX_TASK_MESSAGE_LENGTH - 5)}${secret}`;
    const m = tallyOf([failed('l', long), stats(1)]).summary([secret]).failedTasks[0]?.message ?? '';
    assert.equal(m.length, MAX_TASK_MESSAGE_LENGTH);
    assert.ok(!m.includes('top-sec'));
  });

  it('counts an unreachable host as a failure', () => {
    const s = tallyOf([{ event: 'runner_on_unreachable', event_data: { task: 'u', host: 'localhost', res: { msg: 'gone' } } }, stats(0, { dark: { localhost: 1 } })]).summary([]);
    assert.equal(s.stats.failures, 1);
    assert.deepEqual(s.failedTasks, [{ task: 'u', message: 'gone' }]);
  });

  it('does not take JSON that is not an event, or a broken line, for one', () => {
    assert.equal(parseEventLine('{"a": 1}'), undefined);
    assert.equal(parseEventLine('{"event": "x"'), undefined);
    assert.equal(parseEventLine('[ERROR]: x'), undefined);
    assert.equal(parseEventLine('{"event": "runner_on_ok"}')?.event, 'runner_on_ok');
  });
});
