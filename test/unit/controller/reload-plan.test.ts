import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { diffEntries } from '../../../src/controller/reload-plan.js';
import { watchEntry as entry } from './watch-entry-fixture.js';

describe('diffEntries', () => {
  it('adds new kinds, removes dropped ones and refreshes the rest', () => {
    const changes = diffEntries([entry('A'), entry('B')], [entry('B'), entry('C')]);
    assert.deepEqual(
      changes.map((c) => `${c.kind}:${'entry' in c ? c.entry.kind : c.key}`),
      ['remove:A.v1.g.example.com', 'refresh:B', 'add:C'],
    );
  });

  it('restarts a kind that moves between a chart and an Ansible role (another reconciler)', () => {
    const ansible = { role: '/roles/a', vars: {}, finalizer: undefined, manageStatus: true, watchClusterScopedResources: false, snakeCaseParameters: true, watchAnnotationsChanges: false, markUnsafe: false, blacklist: [], maxRunnerArtifacts: 20 };
    const [change] = diffEntries([entry('A')], [entry('A', { chartPath: '', ansible })]);
    assert.equal(change?.kind, 'restart');
    const [same] = diffEntries([entry('A', { chartPath: '', ansible })], [entry('A', { chartPath: '', ansible: { ...ansible, vars: { x: 1 } } })]);
    assert.equal(same?.kind, 'refresh');
  });

  it('restarts a kind whose selector, concurrency or dependent watching changed', () => {
    for (const extra of [{ labelSelector: 'tier=web' }, { maxConcurrentReconciles: 4 }, { watchDependentResources: false }]) {
      const [change] = diffEntries([entry('A')], [entry('A', extra)]);
      assert.equal(change?.kind, 'restart', JSON.stringify(extra));
    }
  });

  it('only refreshes a kind whose chart, overrides or period changed', () => {
    const [change] = diffEntries([entry('A')], [entry('A', { chartPath: '/other', overrideValues: { a: '1' }, reconcilePeriodMs: 5000 })]);
    assert.equal(change?.kind, 'refresh');
  });

  it('treats a changed version as another kind', () => {
    const changes = diffEntries([entry('A')], [entry('A', { version: 'v2' })]);
    assert.deepEqual(changes.map((c) => c.kind).sort(), ['add', 'remove']);
  });
});
