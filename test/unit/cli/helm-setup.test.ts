/** The warm pool's size: a worker per helm slot of the Helm kinds, at most --helm-workers, by default two per CPU. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { poolSize } from '../../../src/cli/helm-setup.js';
import type { WatchEntry } from '../../../src/config/types.js';

// Only what poolSize reads: the kind's own concurrency and whether it is an Ansible kind.
const helmKind = (maxConcurrentReconciles?: number): WatchEntry => ({ maxConcurrentReconciles }) as unknown as WatchEntry;
const ansibleKind = { ansible: {} } as unknown as WatchEntry;

describe('poolSize', () => {
  it('is the Helm kinds’ slots summed (the default concurrency where a kind sets none), Ansible kinds not counted', () => {
    assert.equal(poolSize([helmKind(3), helmKind(), ansibleKind], 4, undefined, 8), 7);
    assert.equal(poolSize([ansibleKind], 4, undefined, 8), 1, 'at least one: the version check needs a worker');
  });

  it('by default at most two workers per CPU', () => {
    assert.equal(poolSize([helmKind(10)], 4, undefined, 2), 4);
    assert.equal(poolSize([helmKind(10)], 4, undefined, 3), 6);
  });

  it('--helm-workers caps it instead, and never raises it above the slots', () => {
    assert.equal(poolSize([helmKind(3), helmKind()], 4, 2, 8), 2);
    assert.equal(poolSize([helmKind(3)], 4, 10, 1), 3);
    assert.equal(poolSize([helmKind(10)], 4, 8, 2), 8, 'above two per CPU when asked');
  });
});
