import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { plan, type PlanInput } from '../../../src/reconcile/plan.js';
import type { StoredRevision } from '../../../src/reconcile/types.js';

const START = Date.parse('2026-01-01T10:00:00Z');

function rev(revision: number, status: string, extra: Partial<StoredRevision> = {}): StoredRevision {
  return {
    revision,
    status,
    fingerprint: 'fp-current',
    ownerKind: 'WebApp.apps.example.com',
    createdAt: new Date(START - 60_000).toISOString(),
    secretName: `sh.helm.release.v1.demo.v${revision}`,
    ...extra,
  };
}

function input(overrides: Partial<PlanInput> = {}): PlanInput {
  return {
    deleting: false,
    hasFinalizer: true,
    paused: false,
    problem: undefined,
    desiredFingerprint: 'fp-current',
    ownerKind: 'WebApp.apps.example.com',
    revisions: [],
    now: START + 10_000,
    processStartedAt: START,
    helmTimeoutMs: 300_000,
    statusRevision: undefined,
    ...overrides,
  };
}

describe('plan', () => {
  it('adds the finalizer before the first install', () => {
    assert.deepEqual(plan(input({ hasFinalizer: false })), { kind: 'add-finalizer' });
  });

  it('installs when there is no release', () => {
    assert.deepEqual(plan(input()), { kind: 'install' });
  });

  it('installs again when the only history is an uninstalled release', () => {
    assert.deepEqual(plan(input({ revisions: [rev(1, 'uninstalled')] })), { kind: 'install' });
  });

  it('does nothing when the deployed fingerprint matches, and asks for status details only when missing', () => {
    assert.deepEqual(plan(input({ revisions: [rev(1, 'superseded'), rev(2, 'deployed')], statusRevision: 2 })), {
      kind: 'none',
      refreshStatus: false,
    });
    assert.deepEqual(plan(input({ revisions: [rev(2, 'deployed')], statusRevision: undefined })), { kind: 'none', refreshStatus: true });
  });

  it('upgrades when the fingerprint changed or is unknown', () => {
    assert.deepEqual(plan(input({ revisions: [rev(1, 'deployed', { fingerprint: 'fp-old' })] })), { kind: 'upgrade' });
    assert.deepEqual(plan(input({ revisions: [rev(1, 'deployed', { fingerprint: undefined })] })), { kind: 'upgrade' });
  });

  it('upgrades again when the latest upgrade failed but an earlier revision is good', () => {
    assert.deepEqual(plan(input({ revisions: [rev(1, 'deployed', { fingerprint: 'fp-old' }), rev(2, 'failed')] })), { kind: 'upgrade' });
  });

  it('clears a failed first install before installing again', () => {
    assert.deepEqual(plan(input({ revisions: [rev(1, 'failed')] })), { kind: 'clear-failed-release' });
  });

  it('unlocks a pending revision written before this process started', () => {
    const pending = rev(2, 'pending-upgrade', { createdAt: new Date(START - 1000).toISOString() });
    assert.deepEqual(plan(input({ revisions: [rev(1, 'deployed'), pending] })), { kind: 'unlock', revision: pending });
  });

  it('waits on a fresh pending revision that may belong to a live operation, then unlocks it once stale', () => {
    const pending = rev(1, 'pending-install', { createdAt: new Date(START + 5_000).toISOString() });
    const waiting = plan(input({ revisions: [pending], now: START + 10_000 }));
    assert.ok(waiting.kind === 'wait-pending');
    assert.ok(waiting.retryAfterMs > 0 && waiting.retryAfterMs <= 300_000 + 30_000);
    assert.deepEqual(plan(input({ revisions: [pending], now: START + 5_000 + 330_000 })), { kind: 'unlock', revision: pending });
  });

  it('unlocks a pending revision of unknown age', () => {
    const pending = rev(1, 'pending-install', { createdAt: undefined });
    assert.equal(plan(input({ revisions: [pending] })).kind, 'unlock');
  });

  it('refuses a release that belongs to another kind', () => {
    const result = plan(input({ revisions: [rev(1, 'deployed', { ownerKind: 'Other.example.com' })] }));
    assert.ok(result.kind === 'conflict');
    assert.match(result.message, /belongs to Other\.example\.com/);
  });

  it('reports a problem before doing anything else', () => {
    assert.deepEqual(plan(input({ problem: 'bad spec', hasFinalizer: false })), { kind: 'irreconcilable', message: 'bad spec' });
  });

  it('does no Helm work while paused', () => {
    assert.deepEqual(plan(input({ paused: true, revisions: [rev(1, 'deployed', { fingerprint: 'x' })] })), { kind: 'paused' });
  });

  describe('deletion', () => {
    it('uninstalls a live release, then removes the finalizer', () => {
      assert.deepEqual(plan(input({ deleting: true, revisions: [rev(1, 'deployed')] })), { kind: 'uninstall' });
      assert.deepEqual(plan(input({ deleting: true, revisions: [] })), { kind: 'remove-finalizer' });
      assert.deepEqual(plan(input({ deleting: true, revisions: [rev(1, 'uninstalled')] })), { kind: 'remove-finalizer' });
    });

    it('never uninstalls another kind’s release', () => {
      assert.deepEqual(plan(input({ deleting: true, revisions: [rev(1, 'deployed', { ownerKind: 'Other.x' })] })), { kind: 'remove-finalizer' });
    });

    it('ignores a deleting object without our finalizer', () => {
      assert.deepEqual(plan(input({ deleting: true, hasFinalizer: false, revisions: [rev(1, 'deployed')] })), { kind: 'none', refreshStatus: false });
    });

    it('uninstalls even a paused or irreconcilable resource', () => {
      assert.deepEqual(plan(input({ deleting: true, paused: true, problem: 'x', revisions: [rev(1, 'failed')] })), { kind: 'uninstall' });
    });
  });
});
