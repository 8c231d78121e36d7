import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { Counter, Registry } from 'prom-client';
import { UserMetrics, UserMetricError, startUserMetricsServer } from '../../../../src/engines/ansible/user-metrics.js';

const log = pino({ level: 'silent' });

async function valueOf(registry: Registry, name: string): Promise<number | undefined> {
  const m = registry.getSingleMetric(name);
  return m === undefined ? undefined : (await m.get()).values[0]?.value;
}

describe('osdk_metric user metrics', () => {
  it("applies counters and gauges as ansible-operator does, one action per post", async () => {
    const registry = new Registry();
    const m = new UserMetrics(registry);
    m.apply({ name: 'my_counter', description: 'things', counter: { increment: true } });
    m.apply({ name: 'my_counter', counter: { add: 2.5 } });
    assert.equal(await valueOf(registry, 'my_counter'), 3.5);
    m.apply({ name: 'my_gauge', gauge: { set: 7 } });
    m.apply({ name: 'my_gauge', gauge: { subtract: 2 } });
    m.apply({ name: 'my_gauge', gauge: { increment: true, add: 100 } });
    assert.equal(await valueOf(registry, 'my_gauge'), 6);
    m.apply({ name: 'my_gauge', gauge: { set: 0 } });
    assert.equal(await valueOf(registry, 'my_gauge'), 0, 'set: 0 sets 0 (ansible-operator ignored it)');
    m.apply({ name: 'my_empty', histogram: {} });
    assert.match(await registry.metrics(), /^my_empty_count 0$/m, 'an empty operation registers the metric only');
    m.apply({ name: 'my_hist', histogram: { observe: 0.3 } });
    m.apply({ name: 'my_summary', summary: { observe: 1 } });
    const text = await registry.metrics();
    assert.match(text, /^# HELP my_counter things$/m);
    assert.match(text, /^my_hist_count 1$/m);
    assert.match(text, /^my_summary_count 1$/m);
  });

  it('refuses bad names, two or no types, a type change, shadowing, decreasing counters, and more than the limit', () => {
    const registry = new Registry();
    new Counter({ name: 'controller_runtime_reconcile_total', help: 'ours', registers: [registry] });
    const m = new UserMetrics(registry, 2);
    const refused = (post: unknown, message: RegExp): void => {
      assert.throws(() => { m.apply(post); }, (err: unknown) => err instanceof UserMetricError && message.test(err.message));
    };
    refused({ name: 'bad name', counter: { increment: true } }, /metric name "bad name" is invalid/);
    refused({ name: '1x', counter: { increment: true } }, /is invalid/);
    refused({ name: 'x'.repeat(201), counter: { increment: true } }, /is invalid/);
    refused({ name: 'two', counter: { increment: true }, gauge: { set: 1 } }, /exactly one of counter, gauge, histogram, summary \(got 2\)/);
    refused({ name: 'none' }, /got 0/);
    refused({ name: 'controller_runtime_reconcile_total', counter: { increment: true } }, /one of the operator's own/);
    refused({ name: 'c', counter: { add: -1 } }, /cannot decrease/);
    m.apply({ name: 'c', counter: { increment: true } });
    refused({ name: 'c', gauge: { set: 1 } }, /metric c is a counter; it cannot be used as a gauge/);
    refused({ name: 'g', gauge: { set: 'many' } }, /set must be a finite number/);
    m.apply({ name: 'g', gauge: { set: 1 } });
    refused({ name: 'third', gauge: { set: 1 } }, /at most 2 metrics/);
    assert.equal(registry.getSingleMetric('third'), undefined);
  });

  it("refuses the operator's names served outside the registry (resource_created_at_seconds)", () => {
    const registry = new Registry();
    const m = new UserMetrics(registry, 10, new Set(['resource_created_at_seconds']));
    assert.throws(() => { m.apply({ name: 'resource_created_at_seconds', gauge: { set: 1 } }); }, /one of the operator's own/);
    assert.equal(registry.getSingleMetric('resource_created_at_seconds'), undefined);
  });

  it('listens on 127.0.0.1 for POST /metrics and answers refusals with 400 and the reason', async (t) => {
    const registry = new Registry();
    const server = await startUserMetricsServer({ registry, log, port: 0 });
    t.after(() => server.close());
    assert.match(server.address, /^127\.0\.0\.1:\d+$/);
    const post = (body: string, path = '/metrics', method = 'POST'): Promise<Response> =>
      fetch(`http://127.0.0.1:${server.port}${path}`, { method, body: method === 'POST' ? body : null, headers: { 'content-type': 'application/json' } });
    const ok = await post(JSON.stringify({ name: 'role_runs', description: 'runs', counter: { increment: true } }));
    assert.equal(ok.status, 200);
    assert.equal(await valueOf(registry, 'role_runs'), 1);
    const bad = await post(JSON.stringify({ name: 'role runs', counter: { increment: true } }));
    assert.equal(bad.status, 400);
    assert.match(await bad.text(), /is invalid/);
    assert.equal((await post('{not json')).status, 400);
    assert.equal((await post('{}', '/other')).status, 404);
    assert.equal((await post('', '/metrics', 'GET')).status, 405);
  });
});
