import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { deepMerge } from '../../../src/lib/deep-merge.js';

describe('deepMerge', () => {
  it('maps merge recursively and the override wins', () => {
    assert.deepEqual(
      deepMerge(
        { image: { repository: 'nginx', tag: 'latest' }, replicas: 1, keep: true },
        { image: { tag: '1.25' }, replicas: 3, added: 'x' },
      ),
      { image: { repository: 'nginx', tag: '1.25' }, replicas: 3, keep: true, added: 'x' },
    );
  });

  it('lists, scalars and null replace rather than merge', () => {
    assert.deepEqual(deepMerge({ l: [1, 2, 3] }, { l: [9] }), { l: [9] });
    assert.deepEqual(deepMerge({ m: { a: 1 } }, { m: 'flat' }), { m: 'flat' });
    assert.deepEqual(deepMerge({ s: 'flat' }, { s: { a: 1 } }), { s: { a: 1 } });
    assert.deepEqual(deepMerge({ m: { a: 1 } }, { m: null }), { m: null });
    assert.deepEqual(deepMerge({ m: { a: 1 } }, { m: [] }), { m: [] });
  });

  it('neither input is mutated and the result shares nothing with them', () => {
    const base = { a: { b: { c: 1 } }, l: [{ x: 1 }] };
    const override = { a: { b: { d: 2 } }, o: { deep: [1] } };
    const baseCopy = structuredClone(base);
    const overrideCopy = structuredClone(override);
    const out = deepMerge(base, override);
    assert.deepEqual(base, baseCopy);
    assert.deepEqual(override, overrideCopy);
    assert.deepEqual(out, { a: { b: { c: 1, d: 2 } }, l: [{ x: 1 }], o: { deep: [1] } });
    (out.l as { x: number }[])[0] = { x: 99 };
    out.o.deep.push(2);
    (out.a as { b: Record<string, number> }).b.c = 5;
    assert.deepEqual(base, baseCopy);
    assert.deepEqual(override, overrideCopy);
  });

  it('a __proto__ key from parsed JSON merges as data', () => {
    const override = JSON.parse('{"__proto__": {"polluted": true}}') as Record<string, unknown>;
    const out = deepMerge({}, override);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
    assert.deepEqual(Object.getOwnPropertyDescriptor(out, '__proto__')?.value, { polluted: true });
  });
});
