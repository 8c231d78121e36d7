import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TtlCache } from '../../../src/lib/ttl-cache.js';
import { FakeClock } from '../fakes/clock.js';

describe('TtlCache', () => {
  it('forgets an entry once its time-to-live has passed', async () => {
    const clock = new FakeClock();
    const cache = new TtlCache<string, number>(10, clock);
    cache.set('a', 1, 1_000);
    cache.set('b', 2, 5_000);
    await clock.advance(999);
    assert.equal(cache.get('a'), 1);
    await clock.advance(1);
    assert.equal(cache.get('a'), undefined);
    assert.equal(cache.get('b'), 2);
    assert.equal(cache.size, 1, 'an expired entry read is dropped');
  });

  it('never holds more than maxEntries, dropping the least recently used', () => {
    const clock = new FakeClock();
    const cache = new TtlCache<string, number>(2, clock);
    cache.set('a', 1, 60_000);
    cache.set('b', 2, 60_000);
    assert.equal(cache.get('a'), 1); // b is now the least recently used
    cache.set('c', 3, 60_000);
    assert.equal(cache.size, 2);
    assert.equal(cache.get('b'), undefined);
    assert.equal(cache.get('a'), 1);
    assert.equal(cache.get('c'), 3);
  });

  it('stores nothing for a ttl of 0 and replaces an entry set again', () => {
    const cache = new TtlCache<string, number>(2, new FakeClock());
    cache.set('a', 1, 0);
    assert.equal(cache.get('a'), undefined);
    cache.set('a', 1, 100);
    cache.set('a', 2, 100);
    assert.equal(cache.get('a'), 2);
    assert.equal(cache.size, 1);
    assert.throws(() => new TtlCache(0, new FakeClock()), /maxEntries must be a whole number/);
  });
});
