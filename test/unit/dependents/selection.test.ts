import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { matchesLabels, parseLabelQuery } from '../../../src/config/label-query.js';
import {
  ALL_DEPENDENTS,
  bucketCount,
  bucketSelection,
  gains,
  labelledBucket,
  sameSelection,
  selectorsOf,
  swapChanges,
  swapDelay,
  type DependentSelection,
} from '../../../src/dependents/selection.js';
import type { KubeObject } from '../../../src/kube/types.js';

const OWNER = 'chartpilot.io/owner-uid';
const BUCKET = 'chartpilot.io/owner-bucket';
const DELAYS = { gainMs: 1_000, shrinkMs: 30_000 };

function obj(name: string, labels: Record<string, string>, resourceVersion = '1'): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'ns', resourceVersion, labels } };
}

/** Whether the API server would give `o` to a watch with this selector. */
function selectedBy(selector: string | undefined, o: KubeObject): boolean {
  if (selector === undefined) return false;
  const q = parseLabelQuery(selector);
  assert.ok(q.ok, `${selector} parses as a label selector`);
  return matchesLabels(q.requirements, o.metadata.labels);
}

describe('dependent selection', () => {
  it('without --shards: the owner label alone, as always, and no second watch', () => {
    assert.deepEqual(selectorsOf(ALL_DEPENDENTS), { owned: OWNER, unbucketed: undefined });
    assert.equal(bucketCount(ALL_DEPENDENTS), 1024);
  });

  it('with --shards: the owned watch selects exactly its buckets, the other one exactly the objects without a bucket label', () => {
    const sel = bucketSelection([17, 3, 900, 3]);
    const { owned, unbucketed } = selectorsOf(sel);
    assert.equal(owned, `${OWNER},${BUCKET} in (3,17,900)`, 'sorted, once each');
    assert.equal(unbucketed, `${OWNER},!${BUCKET}`);
    assert.equal(bucketCount(sel), 3);
    const cases: [KubeObject, boolean, boolean][] = [
      [obj('mine', { [OWNER]: 'u', [BUCKET]: '17' }), true, false],
      [obj('theirs', { [OWNER]: 'u', [BUCKET]: '18' }), false, false],
      [obj('old', { [OWNER]: 'u' }), false, true],
      [obj('not-ours', { [BUCKET]: '17' }), false, false],
      [obj('forged', { [OWNER]: 'u', [BUCKET]: 'x' }), false, false],
    ];
    for (const [o, inOwned, inUnbucketed] of cases) {
      assert.equal(selectedBy(owned, o), inOwned, `${o.metadata.name} in the owned watch`);
      assert.equal(selectedBy(unbucketed, o), inUnbucketed, `${o.metadata.name} in the unbucketed watch`);
    }
    assert.deepEqual(selectorsOf(bucketSelection([])), { owned: undefined, unbucketed: `${OWNER},!${BUCKET}` }, 'no bucket: no owned watch');
    assert.throws(() => bucketSelection([1024]), RangeError);
    assert.throws(() => bucketSelection([-1]), RangeError);
  });

  it('reads a bucket label only when it names a bucket', () => {
    assert.equal(labelledBucket(obj('a', { [BUCKET]: '0' })), 0);
    assert.equal(labelledBucket(obj('a', { [BUCKET]: '1023' })), 1023);
    for (const v of ['1024', '01', '-1', '1.5', '', ' 7', '7 ', '0x10', 'abc']) assert.equal(labelledBucket(obj('a', { [BUCKET]: v })), undefined, JSON.stringify(v));
    assert.equal(labelledBucket(obj('a', {})), undefined);
  });

  it('compares selections by their buckets', () => {
    assert.ok(sameSelection(bucketSelection([1, 2]), bucketSelection([2, 1])));
    assert.ok(!sameSelection(bucketSelection([1, 2]), bucketSelection([1])));
    assert.ok(!sameSelection(bucketSelection([1]), ALL_DEPENDENTS));
    assert.ok(sameSelection(ALL_DEPENDENTS, ALL_DEPENDENTS));
    assert.ok(gains(bucketSelection([1]), bucketSelection([1, 2])));
    assert.ok(!gains(bucketSelection([1, 2]), bucketSelection([2])));
    assert.ok(gains(bucketSelection([1]), ALL_DEPENDENTS));
    assert.ok(!gains(ALL_DEPENDENTS, bucketSelection([5])));
  });

  it('swaps soon when owners arrive, later when they only leave, and not at all when nothing changed', () => {
    assert.equal(swapDelay(bucketSelection([1]), bucketSelection([1]), DELAYS), undefined);
    assert.equal(swapDelay(bucketSelection([1]), bucketSelection([1, 2]), DELAYS), 1_000);
    assert.equal(swapDelay(bucketSelection([1, 2]), bucketSelection([2, 3]), DELAYS), 1_000, 'a gain with a loss is a gain');
    assert.equal(swapDelay(bucketSelection([1, 2]), bucketSelection([2]), DELAYS), 30_000);
    assert.equal(swapDelay(bucketSelection([]), bucketSelection([4]), DELAYS), 1_000);
  });

  describe('what a swap tells', () => {
    const before: DependentSelection = bucketSelection([1, 2]);
    const after: DependentSelection = bucketSelection([2, 3]);
    const told = (old: KubeObject[], next: KubeObject[]): string[] =>
      swapChanges(before, after, old, next).map((c) => `${c.type} ${c.obj.metadata.name}@${c.obj.metadata.resourceVersion ?? ''}`);

    it('in buckets both select: what changed, appeared or went while the old watch had not told it yet', () => {
      const old = [obj('same', { [BUCKET]: '2' }, '5'), obj('changed', { [BUCKET]: '2' }, '5'), obj('gone', { [BUCKET]: '2' }, '5')];
      const next = [obj('same', { [BUCKET]: '2' }, '5'), obj('changed', { [BUCKET]: '2' }, '9'), obj('new', { [BUCKET]: '2' }, '8')];
      assert.deepEqual(told(old, next), ['updated changed@9', 'added new@8', 'deleted gone@5']);
      const updated = swapChanges(before, after, old, next).find((c) => c.type === 'updated');
      assert.equal(updated?.type === 'updated' ? updated.old.metadata.resourceVersion : undefined, '5', 'with the copy the owners saw last');
    });

    it('nothing about buckets only one side selects: owners that just came (their passes wait for the swap) or just left', () => {
      const old = [obj('left', { [BUCKET]: '1' }, '5')];
      const next = [obj('came', { [BUCKET]: '3' }, '6')];
      assert.deepEqual(told(old, next), []);
    });

    it('an object whose label moved it between a kept bucket and another one is told', () => {
      const old = [obj('moved', { [BUCKET]: '2' }, '5'), obj('back', { [BUCKET]: '1' }, '5')];
      const next = [obj('moved', { [BUCKET]: '3' }, '6'), obj('back', { [BUCKET]: '2' }, '7')];
      assert.deepEqual(told(old, next), ['updated moved@6', 'updated back@7']);
    });
  });
});
