import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backoffDelay } from '../../../src/lib/backoff.js';

describe('backoffDelay', () => {
  it('backoffDelay doubles, caps and jitters by ±20 %', () => {
    const b = { initialMs: 100, maxMs: 1000, jitter: 0.2 };
    assert.deepEqual([1, 2, 3, 4, 5, 9].map((n) => backoffDelay(n, b, () => 0.5)), [100, 200, 400, 800, 1000, 1000]);
    assert.equal(backoffDelay(1, b, () => 0), 80);
    assert.ok(Math.abs(backoffDelay(1, b, () => 0.99999) - 120) < 0.01);
    assert.equal(backoffDelay(10, b, () => 0.99999), 1000, 'never above the cap');
  });

  it('backoffDelay survives huge attempt counts without overflowing to NaN', () => {
    const b = { initialMs: 500, maxMs: 300_000, jitter: 0.1 };
    assert.equal(backoffDelay(10_000, b, () => 0.5), 300_000);
    assert.equal(backoffDelay(0, b, () => 0.5), 500, 'attempt 0 counts as the first');
  });
});
