import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { expandEnv } from '../../../src/config/env-expand.js';

const env = { HTTP_PROXY: 'http://proxy:3128', A: 'a', EMPTY: '', '1': 'one', $: 'dollar' };

describe('expandEnv', () => {
  it('$VAR and ${VAR} expand; unset variables become empty', () => {
    assert.equal(expandEnv('$HTTP_PROXY', env), 'http://proxy:3128');
    assert.equal(expandEnv('${HTTP_PROXY}/x', env), 'http://proxy:3128/x');
    assert.equal(expandEnv('$A$A-${A}', env), 'aa-a');
    assert.equal(expandEnv('pre-$MISSING-post', env), 'pre--post');
    assert.equal(expandEnv('${EMPTY}', env), '');
    assert.equal(expandEnv('no variables', env), 'no variables');
  });

  it('names end at the first character that is not a letter, digit or _', () => {
    assert.equal(expandEnv('$A.b', env), 'a.b');
    assert.equal(expandEnv('$A_b', env), '');
    assert.equal(expandEnv('${A}_b', env), 'a_b');
  });

  it("the corners of Go's os.ExpandEnv", () => {
    assert.equal(expandEnv('cost: 5$', env), 'cost: 5$', 'a trailing $ stays');
    assert.equal(expandEnv('a $ b', env), 'a $ b', '$ before a space stays');
    assert.equal(expandEnv('$$', env), 'dollar', '$$ is the variable named $');
    assert.equal(expandEnv('$1x', env), 'onex', 'a digit is a one-character name');
    assert.equal(expandEnv('${}x', env), 'x', '${} is dropped');
    assert.equal(expandEnv('${A', env), 'A', 'an unclosed ${ is dropped');
    assert.equal(expandEnv('${1}', env), 'one');
  });
});
