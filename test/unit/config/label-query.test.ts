import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { matchesLabels, parseLabelQuery } from '../../../src/config/label-query.js';

function matches(query: string, labels: Record<string, string> | undefined): boolean {
  const parsed = parseLabelQuery(query);
  assert.ok(parsed.ok, parsed.ok ? '' : parsed.reason);
  return matchesLabels(parsed.requirements, labels);
}

function reason(query: string): string {
  const parsed = parseLabelQuery(query);
  if (parsed.ok) assert.fail(`${query} should be refused`);
  return parsed.reason;
}

describe('label selector queries', () => {
  const labels = { 'app.kubernetes.io/component': 'webhook', tier: 'b' };

  it('matches =, ==, !=, in, notin, exists and !exists as apimachinery does', () => {
    assert.equal(matches('app.kubernetes.io/component=webhook', labels), true);
    assert.equal(matches('app.kubernetes.io/component==server', labels), false);
    assert.equal(matches('tier!=a', labels), true);
    assert.equal(matches('missing!=a', labels), true, 'a missing label is not equal to anything');
    assert.equal(matches('tier in (a, b)', labels), true);
    assert.equal(matches('tier notin (a,b)', labels), false);
    assert.equal(matches('tier', labels), true);
    assert.equal(matches('!tier', labels), false);
    assert.equal(matches('!legacy', undefined), true);
    assert.equal(matches('tier in (a,b),app.kubernetes.io/component=webhook', labels), true);
    assert.equal(matches('tier in (a,b),app.kubernetes.io/component=server', labels), false, 'every requirement must hold');
    assert.equal(matches('', labels), true, 'the empty selector selects everything');
  });

  it('refuses bad selectors in one line that names the fix', () => {
    assert.match(reason('tier in ()'), /lists no values/);
    assert.match(reason('tier in (a,,b)'), /empty value/);
    assert.match(reason('a=b,,c=d'), /stray ","/);
    assert.match(reason('bad key!=x'), /not a label requirement/);
    assert.match(reason('-bad=x'), /label key "-bad" is invalid/);
    assert.match(reason('a=b c'), /not a label requirement/);
    assert.match(reason('!tier in (a)'), /write tier notin/);
  });
});
