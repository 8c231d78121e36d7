import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { describe, it } from 'node:test';
import {
  defaultLeaseName,
  newIdentity,
  resolveLeaseLocation,
  resolveLeaseNamespace,
  SERVICE_ACCOUNT_NAMESPACE_FILE,
} from '../../../../src/controller/leader-election/config.js';

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

  it('says where the namespace came from, and skips blank sources', () => {
    assert.deepEqual(resolveLeaseNamespace('', {}, () => 'operators\n'), { ok: true, namespace: 'operators', source: SERVICE_ACCOUNT_NAMESPACE_FILE });
    assert.deepEqual(resolveLeaseNamespace('', { POD_NAMESPACE: ' env ' }, () => ' \n'), { ok: true, namespace: 'env', source: 'POD_NAMESPACE' });
    const none = resolveLeaseNamespace('', { POD_NAMESPACE: '  ' }, () => '');
    assert.ok(!none.ok);
    assert.match(none.problem, /POD_NAMESPACE is unset/);
  });

  it('derives a stable lease name from the watched kinds, independent of their order', () => {
    const name = defaultLeaseName([memcached, nginx]);
    assert.match(name, /^chartpilot-[0-9a-f]{10}$/);
    assert.equal(defaultLeaseName([nginx, memcached]), name);
    assert.notEqual(defaultLeaseName([memcached]), name);
  });
});

describe('resolveLeaseLocation', () => {
  it('uses the given name and namespace as they are', () => {
    assert.deepEqual(resolveLeaseLocation({ id: 'my-op.example.com', namespace: 'ops' }, [memcached], {}, () => 'pods-ns'), {
      ok: true,
      lease: { name: 'my-op.example.com', namespace: 'ops' },
    });
  });

  it('derives the name from the watched kinds and detects the namespace when neither is given', () => {
    assert.deepEqual(resolveLeaseLocation({ id: '', namespace: '' }, [memcached, nginx], { POD_NAMESPACE: 'env' }, () => undefined), {
      ok: true,
      lease: { name: defaultLeaseName([memcached, nginx]), namespace: 'env' },
    });
  });

  it('fails with the namespace problem when no namespace can be found', () => {
    const r = resolveLeaseLocation({ id: 'named', namespace: '' }, [memcached], {}, () => undefined);
    assert.ok(!r.ok);
    assert.match(r.problem, /^--leader-elect needs a namespace for its Lease.*set --leader-election-namespace$/);
  });
});

describe('newIdentity', () => {
  it('is the host name plus a suffix unique per call', () => {
    const a = newIdentity();
    assert.ok(a.startsWith(`${hostname()}_`), a);
    assert.match(a.slice(hostname().length + 1), /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    assert.notEqual(newIdentity(), a);
  });
});
