import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  applyOverrides,
  overrideValuesToTree,
  parseSetPath,
  parseSetValue,
} from '../../../src/config/overrides.js';

function reason(path: string): string {
  const r = parseSetPath(path);
  assert.equal(r.ok, false, `${path} parsed`);
  return r.reason;
}

describe('overrideValues', () => {
  it('--set paths: dots, escaped dots and list indexes', () => {
    assert.deepEqual(parseSetPath('image.tag'), { ok: true, segments: [{ key: 'image' }, { key: 'tag' }] });
    assert.deepEqual(parseSetPath('a\\.b.c'), { ok: true, segments: [{ key: 'a.b' }, { key: 'c' }] });
    assert.deepEqual(parseSetPath('nodeSelector.kubernetes\\.io/os'), {
      ok: true,
      segments: [{ key: 'nodeSelector' }, { key: 'kubernetes.io/os' }],
    });
    assert.deepEqual(parseSetPath('list[0].name'), {
      ok: true,
      segments: [{ key: 'list' }, { index: 0 }, { key: 'name' }],
    });
    assert.deepEqual(parseSetPath('m[1][2]'), { ok: true, segments: [{ key: 'm' }, { index: 1 }, { index: 2 }] });
    assert.deepEqual(parseSetPath('with space'), { ok: true, segments: [{ key: 'with space' }] });
  });

  it('invalid --set paths say what is wrong and show valid ones', () => {
    assert.match(reason(''), /\(it is empty\)/u);
    assert.match(reason('a..b'), /empty key at position 3/u);
    assert.match(reason('.a'), /empty key at position 1/u);
    assert.match(reason('a.'), /ends with "\."/u);
    assert.match(reason('[0]'), /must start with a key, not a list index/u);
    assert.match(reason('a[x]'), /list index "\[x\]" must be a whole number >= 0/u);
    assert.match(reason('a[-1]'), /list index "\[-1\]" must be a whole number/u);
    assert.match(reason('a[0'), /"\[" without a closing "\]"/u);
    assert.match(reason('a]'), /unexpected "\]" at position 2; escape it as \\\]/u);
    assert.match(reason('a=b'), /unexpected "=" at position 2/u);
    assert.match(reason('a,b'), /unexpected "," at position 2/u);
    assert.match(reason('a[0]b'), /unexpected "b" at position 5/u);
    assert.match(reason('a[70000]'), /above Helm's limit of 65536/u);
    assert.match(reason('a\\'), /lone backslash/u);
    assert.match(reason('a..b'), /e\.g\. image\.tag, a\\\.dotted\\\.key or list\[0\]\.name$/u);
  });

  it('values are typed the way helm --set types them', () => {
    assert.equal(parseSetValue('true'), true);
    assert.equal(parseSetValue('FALSE'), false);
    assert.equal(parseSetValue('null'), null);
    assert.equal(parseSetValue('0'), 0);
    assert.equal(parseSetValue('42'), 42);
    assert.equal(parseSetValue('-7'), -7);
    assert.equal(parseSetValue('+012'), 12);
    assert.equal(parseSetValue('012'), '012', 'a leading zero keeps it a string');
    assert.equal(parseSetValue('1.5'), '1.5', 'floats stay strings');
    assert.equal(parseSetValue('1e3'), '1e3');
    assert.equal(parseSetValue('9007199254740993'), '9007199254740993', 'beyond 2^53 stays exact as a string');
    assert.equal(parseSetValue('99999999999999999999'), '99999999999999999999', 'beyond int64 stays a string');
    assert.equal(parseSetValue('yes'), 'yes', 'only true/false are booleans');
    assert.equal(parseSetValue(''), '');
    assert.equal(parseSetValue('quay.io/x:1'), 'quay.io/x:1');
  });

  it('backslash escapes and {a,b} lists follow Helm', () => {
    assert.equal(parseSetValue('a\\,b'), 'a,b');
    assert.equal(parseSetValue('a,b'), 'a,b', 'an unescaped comma is kept rather than rejected');
    assert.equal(parseSetValue('C:\\\\dir'), 'C:\\dir');
    assert.equal(parseSetValue('\\true'), true);
    assert.deepEqual(parseSetValue('{a,2,true}'), ['a', 2, true]);
    assert.deepEqual(parseSetValue('{a\\,b,c}'), ['a,b', 'c']);
    assert.deepEqual(parseSetValue('{}'), []);
    assert.equal(parseSetValue('{open'), '{open');
  });

  it('stringValues keeps every value a string, like --set-string and operator-sdk', () => {
    assert.equal(parseSetValue('true', { stringValues: true }), 'true');
    assert.equal(parseSetValue('42', { stringValues: true }), '42');
    assert.deepEqual(parseSetValue('{1,2}', { stringValues: true }), ['1', '2']);
    assert.deepEqual(overrideValuesToTree({ 'a.b': '3' }, { stringValues: true }), { a: { b: '3' } });
  });

  it('overrideValuesToTree builds nested values', () => {
    assert.deepEqual(
      overrideValuesToTree({
        'image.repository': 'quay.io/mynginx',
        'image.tag': '1.10',
        replicaCount: '3',
        'service.enabled': 'false',
        'a\\.b': 'x',
        'env[1].name': 'SECOND',
        'env[0].value': 'v',
        'matrix[1][0]': '7',
      }),
      {
        image: { repository: 'quay.io/mynginx', tag: '1.10' },
        replicaCount: 3,
        service: { enabled: false },
        'a.b': 'x',
        env: [{ value: 'v' }, { name: 'SECOND' }],
        matrix: [null, [7]],
      },
    );
  });

  it('later overrides win where paths overlap, in the order given', () => {
    assert.deepEqual(overrideValuesToTree({ a: 'x', 'a.b': 'y' }), { a: { b: 'y' } });
    assert.deepEqual(overrideValuesToTree({ 'a.b': 'y', a: 'x' }), { a: 'x' });
    assert.deepEqual(overrideValuesToTree({ 'l[2]': 'c' }), { l: [null, null, 'c'] });
  });

  it('applyOverrides keeps what the overrides do not name, including list items', () => {
    const spec = {
      image: { repository: 'nginx', tag: 'latest', pullPolicy: 'Always' },
      env: [
        { name: 'A', value: '1' },
        { name: 'B', value: '2' },
      ],
      replicaCount: 1,
    };
    const before = structuredClone(spec);
    const out = applyOverrides(spec, { 'image.repository': 'quay.io/x', 'env[1].value': 'override', replicaCount: '2' });
    assert.deepEqual(out, {
      image: { repository: 'quay.io/x', tag: 'latest', pullPolicy: 'Always' },
      env: [
        { name: 'A', value: '1' },
        { name: 'B', value: 'override' },
      ],
      replicaCount: 2,
    });
    assert.deepEqual(spec, before, 'the spec is not mutated');
    out.env = [];
    assert.deepEqual(spec, before, 'the result shares nothing with the spec');
  });

  it('an override replaces a non-map in its way', () => {
    assert.deepEqual(applyOverrides({ a: 'text', l: 'x' }, { 'a.b': '1', 'l[0]': 'y' }), { a: { b: 1 }, l: ['y'] });
  });

  it('__proto__ in a path is stored as data and never reaches Object.prototype', () => {
    const out = overrideValuesToTree({ '__proto__.polluted': 'yes' });
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
    assert.deepEqual(Object.keys(out), ['__proto__']);
    assert.deepEqual(Object.getOwnPropertyDescriptor(out, '__proto__')?.value, { polluted: 'yes' });
  });

  it('applyOverrides refuses a path that was never validated', () => {
    assert.throws(() => applyOverrides({}, { 'a..b': '1' }), /invalid override path: "a\.\.b" is not a valid Helm --set path/u);
  });
});
