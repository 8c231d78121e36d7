import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isAllowedTarget, type Confinement, type ObjectScope } from '../../../src/core/confinement.js';

describe('isAllowedTarget', () => {
  const strict: Confinement = { namespace: 'team-a', allowClusterScoped: false, allowCrossNamespace: false };
  const cases: [Partial<Confinement>, string | undefined, ObjectScope, boolean][] = [
    [{}, 'team-a', 'namespaced', true],
    [{}, 'team-b', 'namespaced', false],
    [{}, 'kube-system', 'namespaced', false],
    [{}, undefined, 'namespaced', false],
    [{}, '', 'namespaced', false],
    [{}, undefined, 'cluster', false],
    [{}, 'team-a', 'unknown', false],
    [{ allowCrossNamespace: true }, 'kube-system', 'namespaced', true],
    [{ allowCrossNamespace: true }, undefined, 'cluster', false],
    [{ allowClusterScoped: true }, undefined, 'cluster', true],
    [{ allowClusterScoped: true }, 'team-b', 'namespaced', false],
    [{ allowClusterScoped: true, allowCrossNamespace: true }, 'x', 'unknown', false],
  ];
  for (const [settings, namespace, scope, allowed] of cases) {
    it(`${JSON.stringify(settings)} ${scope} ${namespace ?? '(none)'} → ${allowed ? 'allowed' : 'refused'}`, () => {
      assert.equal(isAllowedTarget({ ...strict, ...settings }, { namespace }, scope), allowed);
    });
  }
});
