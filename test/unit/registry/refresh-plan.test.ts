import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decideRefresh, type ChartState, type ResolveOutcome } from '../../../src/registry/refresh-plan.js';
import type { ResolvedChart } from '../../../src/registry/resolver.js';

const chart = (version: string, digest = `sha256:${version}`): ResolvedChart => ({ reference: 'oci://r/c/web', version, digest, announced: `m-${version}`, path: `/cache/${version}.tgz` });
const ready = (c: ResolvedChart): ChartState => ({ kind: 'ready', chart: c });
const resolved = (c: ResolvedChart): ResolveOutcome => ({ kind: 'resolved', chart: c });
const down: ResolveOutcome = { kind: 'failed', reason: 'RegistryUnreachable', message: 'registry r is unreachable', transient: true };
const refused: ResolveOutcome = { kind: 'failed', reason: 'DigestMismatch', message: 'pins another digest', transient: false };
const MIN = 60_000;
const decide = (state: ChartState | undefined, outcome: ResolveOutcome, extra: { failures?: number; intervalMs?: number; cached?: ResolvedChart } = {}) =>
  decideRefresh({ state, outcome, failures: extra.failures ?? (outcome.kind === 'failed' ? 1 : 0), intervalMs: extra.intervalMs ?? 10 * MIN, cached: extra.cached, random: () => 0.5 });

describe('what a chart refresh means', () => {
  it('an unchanged chart: nothing to re-check, ask again after the interval', () => {
    const d = decide(ready(chart('1.0.0')), resolved(chart('1.0.0')));
    assert.equal(d.enqueueAll, false);
    assert.equal(d.retryInMs, 10 * MIN);
    assert.equal(d.log.level, 'debug');
  });

  it('new content (a new version, or the same version re-pushed): every CR is re-checked', () => {
    const d = decide(ready(chart('1.0.0')), resolved(chart('1.1.0')));
    assert.deepEqual([d.enqueueAll, d.next], [true, ready(chart('1.1.0'))]);
    assert.equal(d.log.fields['previousVersion'], '1.0.0');
    assert.equal(decide(ready(chart('1.0.0', 'sha256:a')), resolved(chart('1.0.0', 'sha256:b'))).enqueueAll, true);
  });

  it('a failed refresh keeps the chart in use, touches no CR and retries with backoff, never later than the interval', () => {
    const d = decide(ready(chart('1.0.0')), refused, { failures: 3 });
    assert.deepEqual([d.next, d.enqueueAll, d.log.level], [ready(chart('1.0.0')), false, 'warn']);
    assert.equal(d.retryInMs, 20_000);
    assert.equal(decide(ready(chart('1.0.0')), down, { failures: 20 }).retryInMs, 300_000);
    assert.equal(decide(ready(chart('1.0.0')), down, { failures: 20, intervalMs: 2_000 }).retryInMs, 2_000);
  });

  it('at start with the registry down: the cached copy that fits, else unavailable', () => {
    const onCache = decide(undefined, down, { cached: chart('1.0.0') });
    assert.deepEqual([onCache.next, onCache.enqueueAll, onCache.log.msg], [ready(chart('1.0.0')), false, 'registry unreachable at start; running with the cached copy']);
    assert.equal(onCache.retryInMs, 5_000);
    const none = decide(undefined, down);
    assert.deepEqual(none.next, { kind: 'unavailable', reason: 'RegistryUnreachable', message: 'registry r is unreachable' });
    assert.equal(none.enqueueAll, false, 'the controller reconciles every CR when it starts anyway');
    // A refusal is not an outage: the cache is not used for it.
    assert.equal(decide(undefined, refused, { cached: chart('1.0.0') }).next.kind, 'unavailable');
  });

  it('unavailable → available re-checks every CR; a repeated failure with the same message does not', () => {
    const unavailable: ChartState = { kind: 'unavailable', reason: 'RegistryUnreachable', message: 'registry r is unreachable' };
    assert.equal(decide(unavailable, resolved(chart('1.0.0'))).enqueueAll, true);
    assert.equal(decide(unavailable, down, { failures: 2 }).enqueueAll, false);
    assert.equal(decide(unavailable, refused, { failures: 2 }).enqueueAll, true, 'a new reason is news for the CRs');
  });

  it('chartRefreshInterval 0: resolved once, failures retried until it resolves', () => {
    assert.equal(decide(undefined, resolved(chart('1.0.0')), { intervalMs: 0 }).retryInMs, undefined);
    assert.equal(decide(undefined, down, { intervalMs: 0, failures: 1 }).retryInMs, 5_000);
  });
});
