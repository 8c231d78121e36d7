import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { leave, ReconcileFailure, type StatusWrite } from '../../../src/core/outcome.js';

/** A status writer that records what it was given, in order with the exit's other steps. */
function recording(answer: StatusWrite = {}): { written: string[]; write: (s: string) => Promise<StatusWrite> } {
  const written: string[] = [];
  return { written, write: (s) => (written.push(s), Promise.resolve(answer)) };
}

describe('leave (the reconcile’s one exit)', () => {
  it('writes the status, then returns the outcome', async () => {
    const w = recording();
    assert.deepEqual(await leave({ outcome: { requeueAfterMs: 60_000 }, status: 'deployed' }, w.write), { requeueAfterMs: 60_000 });
    assert.deepEqual(w.written, ['deployed']);
  });

  it('writes nothing when the step asked for no status', async () => {
    const w = recording();
    assert.deepEqual(await leave({ outcome: {} }, w.write), {});
    assert.deepEqual(w.written, []);
  });

  it('throws the failure only after its status is written', async () => {
    const w = recording();
    const failure = new ReconcileFailure('InstallError', 'helm install failed: x');
    await assert.rejects(leave({ outcome: {}, status: 'failed', failure }, w.write), (err: unknown) => err === failure);
    assert.deepEqual(w.written, ['failed']);
  });

  it('rejects with the write’s error, not the failure, when the status cannot be written (nothing was recorded)', async () => {
    const failure = new ReconcileFailure('InstallError', 'helm install failed: x');
    const refused = new Error('the server is unavailable');
    await assert.rejects(leave({ outcome: {}, status: 'failed', failure }, () => Promise.reject(refused)), (err: unknown) => err === refused);
  });

  it('brings the next look forward to a deferred write, never later than the outcome asked', async () => {
    assert.deepEqual(await leave({ outcome: { requeueAfterMs: 60_000 }, status: 's' }, recording({ deferredMs: 4_000 }).write), { requeueAfterMs: 4_000 });
    assert.deepEqual(await leave({ outcome: { requeueAfterMs: 1_000 }, status: 's' }, recording({ deferredMs: 4_000 }).write), { requeueAfterMs: 1_000 });
    assert.deepEqual(await leave({ outcome: {}, status: 's' }, recording({ deferredMs: 4_000 }).write), { requeueAfterMs: 4_000 });
  });
});
