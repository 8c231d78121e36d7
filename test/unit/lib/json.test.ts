import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { canonicalJson, canonicalJsonOfAnyDepth } from '../../../src/lib/json.js';
import { stringLeaves } from '../../../src/helm/errors.js';
import { specHash } from '../../../src/dependents/spec-hash.js';
import { MAX_VALUES_DEPTH, valuesShapeProblem } from '../../../src/engines/helm/values.js';

function nested(levels: number, leaf: unknown = 'x'): unknown {
  let v = leaf;
  for (let i = 0; i < levels; i++) v = i % 3 === 0 ? [v, 1] : { b: v, a: null, u: undefined };
  return v;
}

describe('walks over values of any depth', () => {
  it('canonicalJsonOfAnyDepth writes what canonicalJson writes', () => {
    const samples: unknown[] = [
      null,
      'a"b\n',
      3.5,
      true,
      [],
      {},
      { z: 1, a: [1, undefined, { y: 'q', b: false }], m: { u: undefined, k: [[]] } },
      nested(50),
      [Number.NaN, Infinity],
    ];
    for (const s of samples) assert.equal(canonicalJsonOfAnyDepth(s), canonicalJson(s));
  });

  it('walk 9000 levels without exhausting the stack', () => {
    const deep = nested(9000, 'secret');
    assert.throws(() => canonicalJson(deep), RangeError, 'the recursive one does exhaust it');
    assert.ok(canonicalJsonOfAnyDepth(deep).length > 9000);
    assert.deepEqual(stringLeaves(deep), ['secret']);
    assert.match(specHash({ apiVersion: 'v1', kind: 'X', metadata: { name: 'n' }, spec: deep }), /^[\w-]{43}$/);
  });

  it('valuesShapeProblem measures depth and size iteratively', () => {
    assert.equal(valuesShapeProblem(nested(MAX_VALUES_DEPTH - 1)), undefined);
    assert.equal(valuesShapeProblem(nested(MAX_VALUES_DEPTH + 1))?.reason, 'ValuesTooDeep');
    assert.equal(valuesShapeProblem(nested(9000))?.reason, 'ValuesTooDeep');
    assert.equal(valuesShapeProblem({ a: 'x'.repeat(1024 * 1024) })?.reason, 'ValuesTooLarge');
    assert.equal(valuesShapeProblem({ a: 'x'.repeat(1000 * 1024) }), undefined);
    assert.equal(valuesShapeProblem({ many: Array.from({ length: 300_000 }, () => ({ k: 1 })) })?.reason, 'ValuesTooLarge');
  });
});
