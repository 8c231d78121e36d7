import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CONTENDER_AGENTS, type AuditEntry } from '../../../bench/audit.js';
import { distribution, percentile } from '../../../bench/stats.js';
import { crMarks, readyLag, timelineGaps, type WatchTimes } from '../../../bench/timeline.js';

const T0 = 1_000_000;

function w(at: number, verb: string, userAgent: string, resource: string, name: string, extra: Partial<AuditEntry> = {}): AuditEntry {
  return {
    verb, userAgent, resource, name, group: resource === 'webapps' ? 'example.io' : '', subresource: '', namespace: 'ns1',
    code: 200, received: T0 + at - 1, completed: T0 + at, ...extra,
  };
}

const noWatch: WatchTimes = { available: new Map(), ready: new Map(), gone: new Map() };
const gap = (t: ReturnType<typeof timelineGaps>, label: string): number | undefined => t.gaps.find((g) => g.label === label)?.seconds.p50;

describe('bench percentiles', () => {
  it('uses the nearest rank, so every figure is a real value', () => {
    const sorted = Array.from({ length: 100 }, (_, i) => i + 1);
    assert.equal(percentile(sorted, 50), 50);
    assert.equal(percentile(sorted, 90), 90);
    assert.equal(percentile(sorted, 99), 99);
    assert.equal(percentile([7], 99), 7);
    assert.deepEqual(distribution([3, 1, 2, 10]), { count: 4, p50: 2, p90: 10, p99: 10, max: 10 });
    assert.equal(distribution([]), undefined);
    assert.deepEqual(distribution([Number.NaN, 1]), { count: 1, p50: 1, p90: 1, p99: 1, max: 1 });
  });
});

describe('bench per-CR timeline', () => {
  it('orders one CR\'s create: bench POST, finalizer, release record, status, available, Ready', () => {
    const entries = [
      w(0, 'create', 'chartpilot-bench', 'webapps', 'w1', { code: 201 }),
      w(100, 'patch', 'chartpilot', 'webapps', 'w1'),
      w(300, 'create', 'Helm/4.1.4', 'secrets', 'sh.helm.release.v1.w1.v1', { code: 201 }),
      w(700, 'update', 'Helm/4.1.4', 'secrets', 'sh.helm.release.v1.w1.v1'),
      w(750, 'patch', 'chartpilot', 'webapps', 'w1', { subresource: 'status' }),
      w(2750, 'patch', 'chartpilot', 'webapps', 'w1', { subresource: 'status' }),
      // Another CR's and a refused write must not count for w1.
      w(800, 'update', 'Helm/4.1.4', 'secrets', 'sh.helm.release.v1.w10.v1'),
      w(900, 'update', 'Helm/4.1.4', 'secrets', 'sh.helm.release.v1.w1.v1', { code: 409 }),
    ];
    const watch: WatchTimes = { available: new Map([['w1', T0 + 2500]]), ready: new Map([['w1', T0 + 2800]]), gone: new Map() };
    const marks = crMarks('create', ['w1'], entries.reverse(), CONTENDER_AGENTS.chartpilot, 'webapps', watch);
    const m = marks.get('w1');
    assert.deepEqual(m, {
      requested: T0, finalizer: T0 + 100, recordCreated: T0 + 300, recordDeployed: T0 + 700,
      statusWrites: [T0 + 750, T0 + 2750], available: T0 + 2500, ready: T0 + 2800,
    });
    const t = timelineGaps('create', marks, true);
    assert.equal(gap(t, 'CR created → operator\'s finalizer write'), 0.1);
    assert.equal(gap(t, 'finalizer → release record created'), 0.2);
    assert.equal(gap(t, 'release record created → deployed (helm\'s own time)'), 0.4);
    assert.equal(gap(t, 'record deployed → next status write'), 0.05);
    assert.equal(gap(t, 'Deployment available → CR Ready seen'), 0.3);
    assert.equal(gap(t, 'CR created → CR Ready seen'), 2.8);
    assert.equal(t.statusWritesPerCr?.max, 2);
    assert.equal(readyLag(watch, ['w1', 'w2'])?.count, 1);
    assert.equal(readyLag(watch, ['w1'])?.p99, 0.3);
  });

  it('upgrade: the new record, not the superseded one; no finalizer', () => {
    const entries = [
      w(0, 'patch', 'chartpilot-bench', 'webapps', 'w1'),
      w(200, 'create', 'Helm/4.1.4', 'secrets', 'sh.helm.release.v1.w1.v2', { code: 201 }),
      w(500, 'update', 'Helm/4.1.4', 'secrets', 'sh.helm.release.v1.w1.v1'),
      w(600, 'update', 'Helm/4.1.4', 'secrets', 'sh.helm.release.v1.w1.v2'),
    ];
    const m = crMarks('upgrade', ['w1'], entries, CONTENDER_AGENTS.chartpilot, 'webapps', noWatch).get('w1');
    assert.ok(m !== undefined);
    assert.equal(m.recordCreated, T0 + 200);
    assert.equal(m.recordDeployed, T0 + 600);
    assert.equal(m.finalizer, undefined);
  });

  it('delete: one collection DELETE begins it for every CR; the last record delete and the finalizer removal end it', () => {
    const entries = [
      w(0, 'deletecollection', 'chartpilot-bench', 'webapps', ''),
      w(100, 'patch', 'chartpilot', 'webapps', 'w1', { subresource: 'status' }),
      w(200, 'update', 'Helm/4.1.4', 'secrets', 'sh.helm.release.v1.w1.v2'),
      w(400, 'delete', 'Helm/4.1.4', 'secrets', 'sh.helm.release.v1.w1.v1'),
      w(450, 'delete', 'Helm/4.1.4', 'secrets', 'sh.helm.release.v1.w1.v2'),
      w(500, 'patch', 'chartpilot', 'webapps', 'w1'),
    ];
    const watch: WatchTimes = { ...noWatch, gone: new Map([['w1', T0 + 520]]) };
    const marks = crMarks('delete', ['w1', 'w2'], entries, CONTENDER_AGENTS.chartpilot, 'webapps', watch);
    assert.deepEqual(marks.get('w1'), {
      requested: T0, statusWrites: [T0 + 100], uninstallBegun: T0 + 200, recordsDeleted: T0 + 450, finalizerRemoved: T0 + 500, gone: T0 + 520,
    });
    assert.deepEqual(marks.get('w2'), { requested: T0, statusWrites: [] });
    const t = timelineGaps('delete', marks, true);
    assert.equal(gap(t, 'helm\'s first write → last release record deleted (uninstall)'), 0.25);
    assert.equal(gap(t, 'finalizer removed → CR gone (seen)'), 0.02);
    assert.equal(t.gaps.find((g) => g.label === 'delete requested → CR gone (seen)')?.seconds.count, 1);
  });

  it('the floor: helm\'s own gaps only, no status writes', () => {
    const entries = [
      w(0, 'create', 'Helm/4.1.4', 'secrets', 'sh.helm.release.v1.w1.v1', { code: 201 }),
      w(250, 'update', 'Helm/4.1.4', 'secrets', 'sh.helm.release.v1.w1.v1'),
    ];
    const t = timelineGaps('create', crMarks('create', ['w1'], entries, CONTENDER_AGENTS.floor, undefined, noWatch), false);
    assert.deepEqual(t.gaps.map((g) => g.label), ['release record created → deployed (helm\'s own time)']);
    assert.equal(t.statusWritesPerCr, undefined);
  });
});
