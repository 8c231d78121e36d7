import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { closest, editDistance } from '../../../src/config/suggest.js';

const KEYS = ['reconcilePeriod', 'watchDependentResources', 'maxConcurrentReconciles', 'kind', 'chart', 'group'];

describe('suggestions', () => {
  it('typos get the nearest key', () => {
    assert.equal(closest('reconcilPeriod', KEYS), 'reconcilePeriod');
    assert.equal(closest('reconcileperiod', KEYS), 'reconcilePeriod');
    assert.equal(closest('recocnilePeriod', KEYS), 'reconcilePeriod');
    assert.equal(closest('chrat', KEYS), 'chart');
    assert.equal(closest('kidn', KEYS), 'kind');
  });

  it('shortened names get the key they start like', () => {
    assert.equal(closest('watchDependents', KEYS), 'watchDependentResources');
    assert.equal(closest('maxConcurrent', KEYS), 'maxConcurrentReconciles');
  });

  it('unrelated words get no suggestion', () => {
    assert.equal(closest('image', KEYS), undefined);
    assert.equal(closest('values', KEYS), undefined);
  });

  it('edit distance counts a swap of neighbours as one edit', () => {
    assert.equal(editDistance('abc', 'abc'), 0);
    assert.equal(editDistance('abc', 'acb'), 1);
    assert.equal(editDistance('', 'abc'), 3);
    assert.equal(editDistance('kitten', 'sitting'), 3);
  });
});
