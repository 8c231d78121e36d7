import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Gauge, Registry } from 'prom-client';
import { escapeLabelValue, TextGauge } from '../../../src/observe/text-gauge.js';

type L = 'name' | 'namespace' | 'kind';

describe('text gauge (one series per CR, kept as exposition text)', () => {
  it('writes what prom-client writes for the same gauge, escaping included', async () => {
    const labels: Record<L, string>[] = [
      { name: 'web', namespace: 'shop', kind: 'WebApp' },
      { name: 'odd"name\\with\nnewline', namespace: '', kind: 'WebApp' },
    ];
    const registry = new Registry();
    const reference = new Gauge<L>({ name: 'resource_created_at_seconds', help: 'Timestamp at which a resource was created', labelNames: ['name', 'namespace', 'kind'], registers: [registry] });
    const text = new TextGauge<L>('resource_created_at_seconds', 'Timestamp at which a resource was created', ['name', 'namespace', 'kind']);
    for (const [i, l] of labels.entries()) {
      reference.labels(l).set(1772359200 + i + 0.5);
      text.set(l, 1772359200 + i + 0.5);
    }
    reference.labels({ name: 'zero', namespace: 'x', kind: 'K' }).set(0);
    text.set({ name: 'zero', namespace: 'x', kind: 'K' }, 0);
    assert.equal(text.render(), await registry.metrics());
  });

  it('follows sets and removals, and renders HELP and TYPE with no series', () => {
    const g = new TextGauge<'name'>('x_seconds', 'help', ['name']);
    assert.equal(g.render(), '# HELP x_seconds help\n# TYPE x_seconds gauge\n');
    g.set({ name: 'a' }, 1);
    g.set({ name: 'b' }, 2);
    const before = g.render();
    assert.equal(g.render(), before, 'unchanged: the same text');
    g.set({ name: 'a' }, 3);
    g.remove({ name: 'b' });
    g.remove({ name: 'never' });
    assert.equal(g.render(), '# HELP x_seconds help\n# TYPE x_seconds gauge\nx_seconds{name="a"} 3\n');
    assert.equal(g.size, 1);
    assert.equal(escapeLabelValue('a\\b"c\nd'), 'a\\\\b\\"c\\nd');
  });
});
