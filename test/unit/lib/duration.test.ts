import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseGoDuration } from '../../../src/lib/duration.js';

function ms(text: string): number {
  const r = parseGoDuration(text);
  assert.ok(r.ok, `${text}: ${r.ok ? '' : r.reason}`);
  return r.ms;
}

function reason(text: string): string {
  const r = parseGoDuration(text);
  assert.equal(r.ok, false, `${text} parsed`);
  return r.reason;
}

describe('parseGoDuration', () => {
  it('Go duration units and combinations', () => {
    assert.equal(ms('30s'), 30_000);
    assert.equal(ms('1m30s'), 90_000);
    assert.equal(ms('1h'), 3_600_000);
    assert.equal(ms('2h45m'), 9_900_000);
    assert.equal(ms('500ms'), 500);
    assert.equal(ms('1500us'), 1.5);
    assert.equal(ms('1500µs'), 1.5);
    assert.equal(ms('1500μs'), 1.5);
    assert.equal(ms('2000000ns'), 2);
    assert.equal(ms('1s500ms'), 1500);
  });

  it('fractions, signs and zero, as Go accepts them', () => {
    assert.equal(ms('1.5h'), 5_400_000);
    assert.equal(ms('.5s'), 500);
    assert.equal(ms('1.s'), 1000);
    assert.equal(ms('1.1s'), 1100);
    assert.equal(ms('0'), 0);
    assert.equal(ms('0s'), 0);
    assert.equal(ms('+5m'), 300_000);
    assert.equal(ms('-5m'), -300_000);
    assert.equal(ms('-0'), 0);
  });

  it('what Go rejects is rejected, with the reason', () => {
    assert.match(reason(''), /it is empty/u);
    assert.match(reason('30'), /missing unit after 30/u);
    assert.match(reason('1d'), /unknown unit "d"/u);
    assert.match(reason('2 minutes'), /unknown unit " minutes"/u);
    assert.match(reason('.s'), /expected a number at "\.s"/u);
    assert.match(reason('s'), /expected a number at "s"/u);
    assert.match(reason('1m 30s'), /unknown unit "m "/u);
    assert.match(reason('3000000h'), /longer than Go allows/u);
    assert.match(reason('x'), /"x" is not a Go duration/u);
  });

  it('the reason shows how to write one', () => {
    assert.match(reason('soon'), /such as 30s, 1m30s, 2h or 500ms$/u);
  });
});
