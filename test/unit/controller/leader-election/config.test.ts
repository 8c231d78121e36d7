import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defaultLeaseName, resolveLeaseNamespace } from '../../../../src/controller/leader-election/config.js';

const memcached = { group: 'cache.example.com', version: 'v1', kind: 'Memcached' };
const nginx = { group: '', version: 'v1', kind: 'Nginx' };

describe('lease settings', () => {
  it('takes the namespace from the flag, then the service account file, then POD_NAMESPACE', () => {
    assert.deepEqual(resolveLeaseNamespace('flagged', { POD_NAMESPACE: 'env' }, () => 'file'), {
      ok: true,
      namespace: 'flagged',
      source: '--leader-election-namespace',
    });
    const fromFile = resolveLeaseNamespace('', { POD_NAMESPACE: 'env' }, () => 'operators\n');
    assert.equal(fromFile.ok && fromFile.namespace, 'operators');
    const fromEnv = resolveLeaseNamespace('', { POD_NAMESPACE: 'env' }, () => undefined);
    assert.equal(fromEnv.ok && fromEnv.namespace, 'env');
    const none = resolveLeaseNamespace('', {}, () => undefined);
    assert.ok(!none.ok);
    assert.match(none.problem, /--leader-election-namespace/);
  });

  it('derives a stable lease name from the watched kinds, independent of their order', () => {
    const name = defaultLeaseName([memcached, nginx]);
    assert.match(name, /^chartpilot-[0-9a-f]{10}$/);
    assert.equal(defaultLeaseName([nginx, memcached]), name);
    assert.notEqual(defaultLeaseName([memcached]), name);
  });
});
