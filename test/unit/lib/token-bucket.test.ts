import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TokenBucket } from '../../../src/lib/token-bucket.js';
import { FakeClock } from '../fakes/clock.js';

describe('TokenBucket', () => {
  it('gives a burst, then refills at its rate up to the burst', async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket(3, 2, clock);
    assert.deepEqual([1, 2, 3, 4].map(() => bucket.take()), [true, true, true, false]);
    await clock.advance(500);
    assert.deepEqual([bucket.take(), bucket.take()], [true, false]);
    await clock.advance(60_000);
    assert.deepEqual([1, 2, 3, 4].map(() => bucket.take()), [true, true, true, false]);
  });

  it('refuses a bucket that could never give a token', () => {
    assert.throws(() => new TokenBucket(0, 1, new FakeClock()), RangeError);
    assert.throws(() => new TokenBucket(1, 0, new FakeClock()), RangeError);
  });
});
