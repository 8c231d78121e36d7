import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runFingerprint, type KindInputs } from '../../../../src/engines/ansible/fingerprint.js';

const KIND: KindInputs = {
  runnableDigest: 'role-1',
  finalizerDigest: undefined,
  vars: { state: 'present' },
  finalizer: undefined,
  snakeCaseParameters: true,
  markUnsafe: false,
  allowClusterScoped: false,
  allowCrossNamespace: false,
  serviceAccount: undefined,
  rolesPath: [],
  collectionsPath: [],
  ansibleArgs: [],
  injectOwnerRef: true,
};

describe('runFingerprint', () => {
  const fp = (over: Partial<KindInputs> = {}, spec = 'spec-1', annotations?: Record<string, string>): string =>
    runFingerprint({ specDigest: spec, annotations, kind: { ...KIND, ...over } });

  it('is stable: same inputs, same fingerprint, whatever the key order', () => {
    assert.equal(fp(), fp());
    assert.equal(fp({ vars: { a: 1, b: 2 } }), fp({ vars: { b: 2, a: 1 } }));
    assert.match(fp(), /^[0-9a-f]{40}$/u);
  });

  it('changes with each input', () => {
    const base = fp();
    for (const changed of [
      fp({}, 'spec-2'),
      fp({ runnableDigest: 'role-2' }),
      fp({ finalizerDigest: 'fin' }),
      fp({ vars: { state: 'absent' } }),
      fp({ finalizer: { name: 'x.io/f', vars: {} } }),
      fp({ snakeCaseParameters: false }),
      fp({ markUnsafe: true }),
      fp({ allowClusterScoped: true }),
      fp({ allowCrossNamespace: true }),
      fp({ serviceAccount: 'tenant' }),
      fp({ rolesPath: ['/roles'] }),
      fp({ collectionsPath: ['/c'] }),
      fp({ ansibleArgs: ['--check'] }),
      fp({ injectOwnerRef: false }),
    ]) {
      assert.notEqual(changed, base);
    }
  });

  it('annotations count only with watchAnnotationsChanges, and never kubectl\'s last-applied copy or chartpilot\'s own', () => {
    assert.equal(fp({}, 'spec-1', undefined), fp());
    const watched = fp({}, 'spec-1', { team: 'a' });
    assert.notEqual(watched, fp({}, 'spec-1', { team: 'b' }));
    assert.equal(
      fp({}, 'spec-1', { team: 'a', 'kubectl.kubernetes.io/last-applied-configuration': '{}', 'ansible.chartpilot.io/run': '{}' }),
      watched,
    );
  });
});
