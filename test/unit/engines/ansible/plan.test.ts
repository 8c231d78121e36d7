import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { driftOf, nextInventory, planAnsible, refKey, type AnsiblePlanInput, type RunRecord } from '../../../../src/engines/ansible/plan.js';

const NOW = Date.parse('2026-01-01T10:00:00Z');
const CM = { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns', name: 'web' };
const DEP = { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'ns', name: 'web' };

function record(over: Partial<RunRecord> = {}): RunRecord {
  return { inputs: 'fp', ranAt: new Date(NOW - 60_000).toISOString(), inventory: [CM], ...over };
}

function input(over: Partial<AnsiblePlanInput> = {}): AnsiblePlanInput {
  return {
    deleting: false,
    finalizerName: undefined,
    hasFinalizer: false,
    skipFinalizer: false,
    problem: undefined,
    serviceAccountMissing: false,
    desiredInputs: 'fp',
    record: record(),
    drift: [],
    periodMs: 0,
    now: NOW,
    ...over,
  };
}

describe('planAnsible: what runs a role', () => {
  const runs: [string, Partial<AnsiblePlanInput>, string][] = [
    ['no record (never ran, or the last run failed before any success)', { record: undefined }, 'first'],
    ['the inputs changed (spec, watched annotations, role files, vars, flags)', { desiredInputs: 'fp2' }, 'inputs-changed'],
    ['a dependent drifted', { drift: ['ConfigMap ns/web was deleted'] }, 'drift'],
    ['requeue_after came due', { record: record({ runAgainAt: new Date(NOW - 1).toISOString() }) }, 'requeue-after'],
    ['the user period elapsed', { periodMs: 30_000 }, 'period'],
  ];
  for (const [name, over, trigger] of runs) {
    it(`runs when ${name}`, () => {
      const p = planAnsible(input(over));
      assert.ok(p.kind === 'run');
      assert.equal(p.trigger, trigger);
    });
  }

  it('runs nothing for a converged CR (a restart, a resync, a status-only change of a dependent)', () => {
    assert.deepEqual(planAnsible(input()), { kind: 'current', addFinalizer: false, nextRunInMs: undefined });
  });

  it('runs nothing before the period or requeue_after is due, and says when to look again', () => {
    const p = planAnsible(input({ periodMs: 120_000, record: record({ runAgainAt: new Date(NOW + 5_000).toISOString() }) }));
    assert.deepEqual(p, { kind: 'current', addFinalizer: false, nextRunInMs: 5_000 });
    const q = planAnsible(input({ periodMs: 120_000 }));
    assert.deepEqual(q, { kind: 'current', addFinalizer: false, nextRunInMs: 60_000 });
  });

  it('adds the finalizer with the first run, and on a converged CR that lacks it', () => {
    const p = planAnsible(input({ record: undefined, finalizerName: 'demo.example.com/finalizer' }));
    assert.equal(p.kind === 'run' && p.addFinalizer, true);
    const q = planAnsible(input({ finalizerName: 'demo.example.com/finalizer', hasFinalizer: true }));
    assert.deepEqual(q, { kind: 'current', addFinalizer: false, nextRunInMs: undefined });
  });

  it('a problem or a missing ServiceAccount stops runs before any trigger', () => {
    assert.equal(planAnsible(input({ record: undefined, problem: 'bad annotation' })).kind, 'irreconcilable');
    assert.equal(planAnsible(input({ record: undefined, serviceAccountMissing: true })).kind, 'no-service-account');
  });

  describe('deletion', () => {
    const deleting = { deleting: true, finalizerName: 'demo.example.com/finalizer', hasFinalizer: true };
    it('runs the finalizer while the CR carries it', () => {
      assert.deepEqual(planAnsible(input(deleting)), { kind: 'run-finalizer' });
    });
    it('lets a CR go that carries no finalizer of ours, or whose entry has none', () => {
      assert.deepEqual(planAnsible(input({ ...deleting, hasFinalizer: false })), { kind: 'released' });
      assert.deepEqual(planAnsible(input({ ...deleting, finalizerName: undefined })), { kind: 'released' });
    });
    it('skips the finalizer run when the annotation says so (the way out of a finalizer that keeps failing)', () => {
      assert.deepEqual(planAnsible(input({ ...deleting, skipFinalizer: true })), { kind: 'skip-finalizer' });
    });
    it('cannot run the finalizer without the ServiceAccount', () => {
      assert.deepEqual(planAnsible(input({ ...deleting, serviceAccountMissing: true })), { kind: 'no-service-account' });
    });
  });
});

describe('driftOf', () => {
  const base = new Map([
    [refKey(CM), 'a'],
    [refKey(DEP), 'b'],
  ]);
  it('is empty when every dependent is as the run left it', () => {
    assert.deepEqual(driftOf([{ ref: CM, content: 'a' }, { ref: DEP, content: 'b' }], base), []);
  });
  it('names a deleted and a changed dependent', () => {
    assert.deepEqual(driftOf([{ ref: CM, content: undefined }, { ref: DEP, content: 'c' }], base), ['ConfigMap ns/web was deleted', 'Deployment ns/web was changed']);
  });
  it('without a baseline (after a restart) only a deleted dependent is drift', () => {
    assert.deepEqual(driftOf([{ ref: CM, content: 'zzz' }], undefined), []);
    assert.deepEqual(driftOf([{ ref: CM, content: undefined }], undefined), ['ConfigMap ns/web was deleted']);
  });
});

describe('nextInventory', () => {
  it('keeps what earlier runs made, adds what this run wrote, drops what it deleted', () => {
    const inv = nextInventory([CM], [
      { ...DEP, action: 'created' },
      { ...CM, action: 'deleted' },
      { apiVersion: 'v1', kind: 'Service', namespace: 'ns', name: 'web', action: 'updated' },
    ]);
    assert.deepEqual(inv.map((r) => r.kind).sort(), ['Deployment', 'Service']);
  });
  it('an unchanged re-run (no writes) keeps the inventory', () => {
    assert.deepEqual(nextInventory([CM, DEP], []), [CM, DEP].sort((a, b) => (refKey(a) < refKey(b) ? -1 : 1)));
  });
});
