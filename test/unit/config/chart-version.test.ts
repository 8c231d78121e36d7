import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseConstraint, pickVersion, satisfies } from '../../../src/config/chart-version.js';

const versions = (...vs: string[]): { version: string }[] => vs.map((version) => ({ version }));
const picked = (vs: { version: string }[], c: string | undefined): string | undefined => {
  const p = pickVersion(vs, c);
  return p.ok ? p.chosen.version : undefined;
};

describe('chart versions', () => {
  it('accepts exact versions, ranges and Masterminds-style comma lists; refuses nonsense', () => {
    for (const c of ['1.4.2', '^1.4', '~1.4.2', '>=1.2.0 <2.0.0', '>= 1.2, < 2', '1.x', '^1.0 || ^2.0', 'v1.2.3', undefined, ''])
      assert.ok(parseConstraint(c).ok, String(c));
    const bad = parseConstraint('latest please');
    if (bad.ok) assert.fail('expected a refusal');
    assert.match(bad.reason, /"latest please" is neither a version nor a semver range; write e\.g\. 1\.4\.2, \^1\.4/u);
  });

  it('picks the newest version a range allows, and the newest stable one without a range', () => {
    const vs = versions('1.0.0', '1.4.0', '1.4.3', '1.10.0', '2.0.0', '2.1.0-rc.1');
    assert.equal(picked(vs, '^1.4'), '1.10.0');
    assert.equal(picked(vs, '~1.4.0'), '1.4.3');
    assert.equal(picked(vs, '>= 1.2, < 1.5'), '1.4.3');
    assert.equal(picked(vs, undefined), '2.0.0', 'prereleases are not picked unless asked for');
    assert.equal(picked(vs, '^2.1.0-rc'), '2.1.0-rc.1');
    assert.equal(picked(vs, '1.4.0'), '1.4.0');
  });

  it('reads tags as Helm writes them: a v prefix, and _ for the + of build metadata', () => {
    assert.equal(picked(versions('v1.2.3', 'v1.3.0'), '^1.2'), 'v1.3.0');
    assert.equal(picked(versions('v1.2.3'), 'v1.2.3'), 'v1.2.3');
    assert.equal(picked(versions('1.2.3_build.7', '1.2.2', 'latest', 'sha-abc'), '^1.2'), '1.2.3_build.7');
  });

  it('names the nearest versions when nothing matches, newest first', () => {
    const vs = versions('0.9.0', '1.0.0', '1.1.0', '1.2.0', '3.0.0', '3.1.0', '4.0.0');
    const p = pickVersion(vs, '^2.0');
    if (p.ok) assert.fail('expected no match');
    assert.deepEqual(p.nearest, ['3.1.0', '3.0.0', '1.2.0', '1.1.0', '1.0.0']);
    const none = pickVersion(versions('latest', 'main'), '^1');
    assert.deepEqual(none.ok ? undefined : [none.nearest, none.available], [[], 0]);
  });

  it('tells whether a cached version still satisfies an entry', () => {
    assert.equal(satisfies('1.4.2', '^1.4'), true);
    assert.equal(satisfies('2.0.0', '^1.4'), false);
    assert.equal(satisfies('1.0.0', undefined), true);
  });
});
