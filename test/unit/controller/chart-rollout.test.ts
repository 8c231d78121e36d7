/** The chart rollout's decisions: one CR first, the rest once it deployed there, held when it failed. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chooseCanary, gone, initialRollout, offer, report, serve, type RolloutState } from '../../../src/controller/chart-rollout.js';
import type { ReconcileTarget } from '../../../src/engines/helm/target.js';

const base: ReconcileTarget = {
  ownerKind: 'WebApp.apps.example.com',
  chartPath: '/copies/good/webapp',
  chartDigest: 'good',
  overrides: {},
  reconcilePeriodMs: 60_000,
  watchDependentResources: true,
  allowClusterScoped: false,
  allowCrossNamespace: false,
  serviceAccount: undefined,
};
const GOOD = base;
const BAD: ReconcileTarget = { ...base, chartPath: '/copies/bad/webapp', chartDigest: 'bad' };
const FIXED: ReconcileTarget = { ...base, chartPath: '/copies/fixed/webapp', chartDigest: 'fixed' };
const CHART = '/charts/webapp';
const ERROR = 'helm upgrade failed: parse error at (webapp/templates/a.yaml:3): unclosed action';

/** serve, keeping the state. */
function served(s: { state: RolloutState }, key: string): ReconcileTarget {
  const r = serve(s.state, key);
  s.state = r.state;
  return r.target;
}

describe('chart rollout', () => {
  it('tries a changed chart on one CR; the others keep the last good one until it deployed there, then all follow', () => {
    const t = offer(initialRollout(GOOD), BAD, CHART);
    assert.deepEqual(t.effect, { kind: 'canary' }, 'only the canary is re-checked');
    const s = { state: chooseCanary(t.state, [{ key: 'ns/b', state: 'Ready', deleting: false }, { key: 'ns/a', state: 'Failed', deleting: false }]).state };
    assert.equal(s.state.candidate?.canary, 'ns/b', 'a healthy CR before a failing one');
    assert.equal(served(s, 'ns/b'), BAD);
    assert.deepEqual(served(s, 'ns/a'), GOOD);
    assert.deepEqual(served(s, 'ns/new'), GOOD, 'a new CR too');
    const done = report(s.state, 'ns/b', BAD, { kind: 'deployed' });
    assert.deepEqual(done.effect, { kind: 'all' });
    assert.equal(serve(done.state, 'ns/a').target, BAD);
    assert.equal(done.state.candidate, undefined);
  });

  it('holds a change that failed on its canary, says so to the others, and tries a fix on the same canary first', () => {
    const s = { state: chooseCanary(offer(initialRollout(GOOD), BAD, CHART).state, [{ key: 'ns/a', state: 'Ready', deleting: false }]).state };
    served(s, 'ns/a');
    const held = report(s.state, 'ns/a', BAD, { kind: 'failed', message: ERROR });
    assert.deepEqual(held.effect, { kind: 'held', canary: 'ns/a', message: ERROR });
    s.state = held.state;
    const other = served(s, 'ns/b');
    assert.equal(other.chartDigest, 'good');
    assert.match(other.chartChangeHeld?.message ?? '', /^chart \/charts\/webapp changed, and the change is held: it failed on ns\/a, the first resource it was tried on \(helm upgrade failed: parse error/u);
    assert.equal(served(s, 'ns/new').chartDigest, 'good', 'a new CR installs the last good chart');
    assert.equal(served(s, 'ns/b'), other, 'one held target, not one per reconcile');
    assert.equal(served(s, 'ns/a'), BAD, 'the canary keeps retrying the change');
    assert.deepEqual(report(s.state, 'ns/a', BAD, { kind: 'failed', message: ERROR }).effect, { kind: 'none' }, 'the same failure again is not told again');
    assert.deepEqual(report(s.state, 'ns/b', other, { kind: 'deployed' }).effect, { kind: 'none' }, 'what a held CR does with the last good chart proves nothing');

    const fix = offer(s.state, FIXED, CHART);
    assert.deepEqual(fix.effect, { kind: 'canary' });
    assert.equal(fix.state.candidate?.canary, 'ns/a');
    assert.equal(fix.state.candidate.failure, undefined, 'a new chart is not held until it fails');
    assert.equal(serve(fix.state, 'ns/b').target.chartChangeHeld, undefined);
    assert.deepEqual(report(fix.state, 'ns/a', FIXED, { kind: 'deployed' }).effect, { kind: 'all' });
  });

  it('drops a held change when the chart goes back to the last good one', () => {
    let state = chooseCanary(offer(initialRollout(GOOD), BAD, CHART).state, [{ key: 'ns/a', state: 'Ready', deleting: false }]).state;
    state = report(state, 'ns/a', BAD, { kind: 'failed', message: ERROR }).state;
    const back = offer(state, { ...GOOD }, CHART);
    assert.deepEqual(back.effect, { kind: 'all' }, 'every CR looks again: the canary goes back, the others lose the condition');
    assert.equal(back.state.candidate, undefined);
    assert.equal(serve(back.state, 'ns/a').target.chartDigest, 'good');
  });

  it('applies changed settings to every CR at once, on both charts', () => {
    const state = offer(initialRollout(GOOD), BAD, CHART).state;
    const t = offer(state, { ...BAD, overrides: { 'image.tag': '2' } }, CHART);
    assert.deepEqual(t.effect, { kind: 'all' });
    assert.deepEqual(t.state.stable.overrides, { 'image.tag': '2' });
    assert.equal(t.state.stable.chartDigest, 'good');
    assert.deepEqual(t.state.candidate?.target.overrides, { 'image.tag': '2' });
    assert.deepEqual(offer(initialRollout(GOOD), { ...GOOD }, CHART).effect, { kind: 'none' }, 'nothing changed');
  });

  it('lets another CR try it when the canary cannot (paused, deleting, gone), and never one that cannot', () => {
    let state = offer(initialRollout(GOOD), BAD, CHART).state;
    const options = [
      { key: 'ns/paused', state: 'Paused', deleting: false },
      { key: 'ns/foreign', state: 'Foreign', deleting: false },
      { key: 'ns/stalled', state: 'Stalled', deleting: false },
      { key: 'ns/going', state: 'Ready', deleting: true },
      { key: 'ns/b', state: 'Progressing', deleting: false },
      { key: 'ns/a', state: 'Ready', deleting: false },
    ];
    state = chooseCanary(state, options).state;
    assert.equal(state.candidate?.canary, 'ns/a');
    const untried = report(state, 'ns/a', BAD, { kind: 'untried' });
    assert.deepEqual(untried.effect, { kind: 'canary' });
    state = chooseCanary(untried.state, options).state;
    assert.equal(state.candidate?.canary, 'ns/b', 'not ns/a again');
    const left = gone(state, 'ns/b');
    assert.deepEqual(left.effect, { kind: 'canary' });
    assert.equal(chooseCanary(left.state, options.slice(0, 4)).canary, undefined, 'none of these can try it');
    assert.deepEqual(gone(left.state, 'ns/other').effect, { kind: 'none' });
  });

  it('with no CR to try it on, the first CR reconciled claims it', () => {
    const s = { state: chooseCanary(offer(initialRollout(GOOD), BAD, CHART).state, []).state };
    assert.equal(served(s, 'ns/first'), BAD);
    assert.deepEqual(served(s, 'ns/second'), GOOD);
  });

  it('takes a chart at once when there is no good one to fall back on (a registry chart that was unavailable)', () => {
    const unavailable: ReconcileTarget = { ...base, chartPath: '', chartDigest: '', chartUnavailable: { reason: 'RegistryUnreachable', message: 'm' } };
    const t = offer(initialRollout(unavailable), BAD, 'oci://r/webapp 1.1.0');
    assert.deepEqual(t.effect, { kind: 'all' });
    assert.equal(t.state.stable, BAD);
    assert.equal(t.state.candidate, undefined);
    const down = offer(initialRollout(GOOD), unavailable, 'oci://r/webapp');
    assert.equal(down.state.stable, unavailable, 'unavailable is told to every CR, as before');
  });
});
