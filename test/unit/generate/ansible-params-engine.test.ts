/**
 * The CRD's spec keys (generate/ansible-params.ts) and the engine's conversion of a CR's spec into
 * the role's variables (ansible/extra-vars.ts) must agree: both port paramconv.ToSnake, and this
 * checks them against each other on many names (a fixed pseudo-random set, so failures repeat),
 * and that every key specKeyFor proposes becomes its option when the engine converts it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { toSnake as engineToSnake } from '../../../src/ansible/extra-vars.js';
import { specKeyFor, toSnake } from '../../../src/generate/ansible-params.js';

const ATOMS = ['a', 'b', 'x', 'Q', 'Z', 'http', 'url', 'ip', 'HTTP', 'URL', 'IP', 's', '_', '-', '1', '23', 'cert', 'Name', 'ID', ' ', 'ips', 'URLs'];

function names(count: number): string[] {
  // xorshift32: exact in 32-bit integer arithmetic, so the set is the same on every run.
  let seed = 2026;
  const next = (n: number): number => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    seed >>>= 0;
    return seed % n;
  };
  const out = new Set<string>();
  for (let tries = 0; out.size < count && tries < count * 10; tries++) {
    let w = '';
    const len = 1 + next(6);
    for (let i = 0; i < len; i++) w += ATOMS[next(ATOMS.length)] ?? '';
    w = w.trim();
    if (w !== '') out.add(w);
  }
  return [...out];
}

describe('the CRD\'s spec keys and the engine\'s extra vars', () => {
  it('convert every name the same way', () => {
    const all = names(5000);
    assert.ok(all.length > 4000, `only ${String(all.length)} distinct names`);
    const differ = all.filter((n) => toSnake(n) !== engineToSnake(n));
    assert.deepEqual(differ.slice(0, 10).map((n) => [n, toSnake(n), engineToSnake(n)]), []);
  });

  it('turn every key specKeyFor proposes back into its option', () => {
    const options = names(5000).map((n) => toSnake(n)).filter((o) => o !== '');
    for (const option of options) {
      const key = specKeyFor(option, true);
      if (key.ok) assert.equal(engineToSnake(key.key), option, `${option} via ${key.key}`);
    }
  });
});
