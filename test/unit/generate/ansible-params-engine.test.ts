/**
 * The CRD's spec keys (generate's use of config/paramconv.ts specKeyFor) must become the role's
 * options when the engine turns a CR's spec into extra vars (engines/ansible/extra-vars.ts, through the
 * same paramconv.ToSnake): checked on many names (a fixed pseudo-random set, so failures repeat),
 * through extraVarsFor itself rather than the shared function, so the engine's use is covered.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { extraVarsFor } from '../../../src/engines/ansible/extra-vars.js';
import { specKeyFor, toSnake } from '../../../src/config/paramconv.js';
import type { AnsibleSource } from '../../../src/config/types.js';

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

const SOURCE: AnsibleSource = {
  role: '/r',
  vars: {},
  finalizer: undefined,
  manageStatus: true,
  watchClusterScopedResources: false,
  snakeCaseParameters: true,
  watchAnnotationsChanges: false,
  markUnsafe: false,
  blacklist: [],
  maxRunnerArtifacts: 20,
};

describe('the CRD\'s spec keys and the engine\'s extra vars', () => {
  it('every key specKeyFor proposes reaches the role as its option', () => {
    const options = [...new Set(names(5000).map((n) => toSnake(n)))].filter((o) => /^[a-z][a-z0-9_]*$/u.test(o) && !o.startsWith('ansible_'));
    assert.ok(options.length > 500, `only ${String(options.length)} options`);
    const spec: Record<string, string> = {};
    const want = new Map<string, string>();
    for (const option of options) {
      const key = specKeyFor(option, true);
      if (!key.ok || Object.hasOwn(spec, key.key)) continue;
      spec[key.key] = option;
      want.set(option, option);
    }
    const cr = { apiVersion: 'demo.example.com/v1', kind: 'App', metadata: { name: 'a', namespace: 'n' }, spec };
    const vars = extraVarsFor(cr, SOURCE, { group: 'demo.example.com', version: 'v1', kind: 'App' });
    const missing = [...want.keys()].filter((o) => !Object.hasOwn(vars, o));
    assert.deepEqual(missing.slice(0, 10), []);
  });
});
