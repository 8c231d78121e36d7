import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { crLookDue, progressRate } from '../../../bench/progress.js';

describe('bench progress of long waves', () => {
  it('a progress line: the rate over the last minute and overall, and the rest at the recent rate', () => {
    // 2 CRs/s for the first two minutes, then 10 CRs/s.
    const samples: [number, number][] = [];
    for (let t = 0; t <= 120; t += 5) samples.push([t * 1000, 2 * t]);
    for (let t = 125; t <= 180; t += 5) samples.push([t * 1000, 240 + 10 * (t - 120)]);
    const line = progressRate(samples, 10_000);
    assert.match(line, /^840\/10000 after 3 min 0 s: /);
    assert.match(line, /10\.0\/s over the last minute, 4\.7\/s overall/);
    assert.match(line, /the rest in ~15 min 16 s at the recent rate$/);
    assert.equal(progressRate([], 5), '0/5');
    assert.doesNotMatch(progressRate([[1000, 5]], 5), /the rest/);
    // Nothing done lately: no estimate rather than an infinite one.
    assert.doesNotMatch(progressRate([[0, 3], [60_000, 3]], 5), /the rest/);
  });

  it('lists the CRs sparsely while some release is not at the goal, at every look once all are', () => {
    assert.equal(crLookDue(9_999, 10_000, 5_000, 30_000), false);
    assert.equal(crLookDue(9_999, 10_000, 30_000, 30_000), true);
    assert.equal(crLookDue(10_000, 10_000, 0, 30_000), true);
  });
});
