import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolveOperatorNamespace } from '../../../src/cli/operator-namespace.js';
import { SERVICE_ACCOUNT_NAMESPACE_FILE } from '../../../src/controller/leader-election/config.js';

const FLAG = '--leader-election-namespace';
const noPod = (): undefined => undefined;

describe('the operator namespace (where the seal key is)', () => {
  it('in a pod is the pod\'s own, whatever the flag and POD_NAMESPACE say', () => {
    assert.deepEqual(resolveOperatorNamespace({ name: FLAG, value: 'leases' }, { POD_NAMESPACE: 'env' }, () => 'operators\n'), {
      ok: true,
      namespace: 'operators',
      source: SERVICE_ACCOUNT_NAMESPACE_FILE,
    });
  });

  it('outside a pod is POD_NAMESPACE (the pod namespace\'s stand-in), else the flag', () => {
    assert.deepEqual(resolveOperatorNamespace({ name: FLAG, value: 'leases' }, { POD_NAMESPACE: ' env ' }, () => ' \n'), { ok: true, namespace: 'env', source: 'POD_NAMESPACE' });
    assert.deepEqual(resolveOperatorNamespace({ name: FLAG, value: 'leases' }, {}, noPod), { ok: true, namespace: 'leases', source: FLAG });
  });

  it('is never default: with nothing set it is an error naming what to set', () => {
    for (const env of [{}, { POD_NAMESPACE: '' }, { POD_NAMESPACE: '  ' }]) {
      const r = resolveOperatorNamespace({ name: FLAG, value: '' }, env, noPod);
      assert.ok(!r.ok);
      assert.match(r.problem, /^the operator's namespace \(where its seal key Secret is kept\) is unknown: not in a pod .* set POD_NAMESPACE \(or --leader-election-namespace\) to the namespace the operator runs in/);
      assert.doesNotMatch(r.problem, /\n/, 'one line');
    }
  });

  it('refuses a POD_NAMESPACE that is no namespace name', () => {
    const r = resolveOperatorNamespace({ name: FLAG, value: '' }, { POD_NAMESPACE: 'Team_A' }, noPod);
    assert.ok(!r.ok);
    assert.match(r.problem, /^POD_NAMESPACE is "Team_A"/);
  });
});
