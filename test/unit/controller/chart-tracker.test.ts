import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import type { RemoteChart } from '../../../src/config/types.js';
import { ChartTracker } from '../../../src/controller/chart-tracker.js';
import { ChartSourceError } from '../../../src/registry/errors.js';
import type { ResolvedChart } from '../../../src/registry/resolver.js';
import { FakeClock } from '../fakes/clock.js';

const remote: RemoteChart = { type: 'oci', reference: 'oci://r/c/web', location: 'r', name: 'c/web', version: '^1', digest: undefined, refreshIntervalMs: undefined, pullSecret: undefined };
const chart = (version: string): ResolvedChart => ({ reference: remote.reference, version, digest: `sha256:${version}`, announced: undefined, path: `/cache/${version}.tgz` });

/** A resolver that answers from a script: each call takes the next answer (the last one repeats). */
function scripted(answers: (ResolvedChart | ChartSourceError)[], cached?: ResolvedChart) {
  const calls: (ResolvedChart | undefined)[] = [];
  return {
    calls,
    resolver: {
      resolve: (_r: RemoteChart, current?: ResolvedChart): Promise<ResolvedChart> => {
        calls.push(current);
        const a = answers[Math.min(calls.length - 1, answers.length - 1)];
        return a instanceof ChartSourceError || a === undefined ? Promise.reject(a ?? new Error('no answer')) : Promise.resolve(a);
      },
      cached: () => Promise.resolve(cached),
    },
  };
}

const down = (): ChartSourceError => new ChartSourceError('RegistryUnreachable', 'registry r is unreachable');

function tracker(s: ReturnType<typeof scripted>, clock: FakeClock, intervalMs = 60_000): { t: ChartTracker; changes: () => number } {
  let changes = 0;
  const t = new ChartTracker({ remote, resolver: s.resolver, intervalMs, log: pino({ level: 'silent' }), clock, onChange: () => { changes++; } });
  return { t, changes: () => changes };
}

describe('chart tracker', () => {
  it('re-resolves every interval with the chart in use, and calls for a re-check only on new content', async () => {
    const clock = new FakeClock();
    const s = scripted([chart('1.0.0'), chart('1.0.0'), chart('1.1.0')]);
    const { t, changes } = tracker(s, clock);
    await t.init();
    assert.deepEqual(t.state, { kind: 'ready', chart: chart('1.0.0') });
    assert.deepEqual(clock.pendingDelays(), [60_000]);
    await clock.advance(60_000);
    assert.equal(changes(), 0, 'unchanged: no CR is re-checked');
    assert.deepEqual(s.calls[1], chart('1.0.0'), 'the refresh is told what runs, so it can skip the download');
    await clock.advance(60_000);
    assert.equal(changes(), 1);
    assert.deepEqual(t.state, { kind: 'ready', chart: chart('1.1.0') });
    await t.stop();
    assert.equal(clock.pending, 0);
  });

  it('starts unavailable when nothing is cached, retries with backoff, and recovers', async () => {
    const clock = new FakeClock();
    const s = scripted([down(), down(), chart('1.0.0')]);
    const { t, changes } = tracker(s, clock);
    await t.init();
    assert.deepEqual(t.state, { kind: 'unavailable', reason: 'RegistryUnreachable', message: 'registry r is unreachable' });
    const [first] = clock.pendingDelays();
    assert.ok(first !== undefined && first >= 4_500 && first <= 5_500, String(first));
    await clock.runNext();
    assert.equal(changes(), 0, 'the same failure again is no news');
    await clock.runNext();
    assert.equal(changes(), 1);
    assert.equal(t.state.kind, 'ready');
    await t.stop();
  });

  it('starts on the cached copy when the registry is down', async () => {
    const clock = new FakeClock();
    const s = scripted([down()], chart('0.9.0'));
    const { t } = tracker(s, clock);
    await t.init();
    assert.deepEqual(t.state, { kind: 'ready', chart: chart('0.9.0') });
    await t.stop();
  });

  it('follows one reference at one interval (a reload changing either needs a new tracker)', async () => {
    const clock = new FakeClock();
    const { t } = tracker(scripted([chart('1.0.0')]), clock);
    assert.equal(t.follows({ ...remote }, 60_000), true);
    assert.equal(t.follows({ ...remote, version: '^2' }, 60_000), false);
    assert.equal(t.follows(remote, 30_000), false);
    await t.stop();
  });
});
