import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { timedCall, type HelmCallEvent } from '../../../src/helm/call-log.js';
import { HelmKilledError } from '../../../src/helm/exec.js';
import { HelmError } from '../../../src/helm/types.js';

const scope = { action: 'upgrade', release: 'web', namespace: 'ns', budgetMs: 60_000 } as const;

describe('call-log', () => {
  it('reports one event per call, with its outcome and error kind', async () => {
    const events: HelmCallEvent[] = [];
    assert.equal(await timedCall(scope, (e) => events.push(e), () => Promise.resolve(7)), 7);
    await assert.rejects(timedCall(scope, (e) => events.push(e), () => Promise.reject(new HelmError('locked', 'busy', 'upgrade'))), { kind: 'locked' });
    await assert.rejects(timedCall(scope, (e) => events.push(e), () => Promise.reject(new Error('boom'))), /boom/);
    assert.deepEqual(
      events.map(({ durationMs: _d, ...rest }) => rest),
      [
        { action: 'upgrade', release: 'web', namespace: 'ns', outcome: 'success' },
        { action: 'upgrade', release: 'web', namespace: 'ns', outcome: 'error', errorKind: 'locked' },
        { action: 'upgrade', release: 'web', namespace: 'ns', outcome: 'error', errorKind: 'failed' },
      ],
    );
  });

  it('hands out what is left of the budget, at least 1 ms', async () => {
    const left = await timedCall({ ...scope, budgetMs: 10_000 }, undefined, (remaining) => Promise.resolve(remaining()));
    assert.ok(left > 9_000 && left <= 10_000, String(left));
    assert.equal(await timedCall({ ...scope, budgetMs: 0 }, undefined, (remaining) => Promise.resolve(remaining())), 1);
  });

  it('a kill is reported with the whole budget, not what was left of it', async () => {
    await assert.rejects(timedCall(scope, undefined, () => Promise.reject(new HelmKilledError('upgrade', 1_234))), (err: unknown) => {
      assert.ok(err instanceof HelmKilledError);
      assert.equal(err.kind, 'timeout');
      assert.equal(err.timeoutMs, 60_000);
      return true;
    });
  });

  it('a throwing log hook does not change the result', async () => {
    assert.equal(await timedCall(scope, () => { throw new Error('metrics broke'); }, () => Promise.resolve('ok')), 'ok');
  });
});
