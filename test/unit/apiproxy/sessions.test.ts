import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { requestTarget, type ResourceRequest } from '../../../src/apiproxy/request-info.js';
import { SessionRecord, TokenTable, newToken } from '../../../src/apiproxy/sessions.js';
import { isOwnerRef, writtenObjects } from '../../../src/apiproxy/written.js';

describe('run tokens', () => {
  it('are 32 random bytes, base64url, different every time', () => {
    const tokens = new Set(Array.from({ length: 100 }, () => newToken()));
    assert.equal(tokens.size, 100);
    for (const t of tokens) {
      assert.match(t, /^[A-Za-z0-9_-]{43}$/);
      assert.equal(Buffer.from(t, 'base64url').length, 32);
    }
  });

  it('find their run only while it is open, and only by the exact token', () => {
    const table = new TokenTable<string>();
    const a = newToken();
    const b = newToken();
    table.add(a, 'run a');
    table.add(b, 'run b');
    assert.equal(table.get(a), 'run a');
    assert.equal(table.get(b), 'run b');
    assert.equal(table.get(a.slice(0, -1)), undefined);
    assert.equal(table.get(`${a}x`), undefined);
    assert.equal(table.get(''), undefined);
    table.delete(a);
    assert.equal(table.get(a), undefined);
    assert.equal(table.get(b), 'run b');
    assert.equal(table.size, 1);
  });
});

describe('run record', () => {
  const cm = { apiVersion: 'v1', kind: 'ConfigMap', resource: 'configmaps', namespace: 'a', name: 'x' };

  it('keeps one entry per object with its last action; created-then-updated stays created', () => {
    const r = new SessionRecord();
    r.wrote({ ...cm, uid: 'u1', action: 'created' });
    r.wrote({ ...cm, action: 'updated' });
    r.wrote({ ...cm, name: 'y', action: 'updated' });
    assert.deepEqual(r.objects(), [
      { ...cm, uid: 'u1', action: 'created' },
      { ...cm, name: 'y', uid: undefined, action: 'updated' },
    ]);
    r.wrote({ ...cm, action: 'deleted' });
    assert.deepEqual(r.objects()[0], { ...cm, uid: 'u1', action: 'deleted' });
  });

  it('remembers each resource read once per namespace', () => {
    const r = new SessionRecord();
    r.readFrom({ group: '', version: 'v1', resource: 'secrets', namespace: 'a' });
    r.readFrom({ group: '', version: 'v1', resource: 'secrets', namespace: 'a' });
    r.readFrom({ group: '', version: 'v1', resource: 'secrets', namespace: undefined });
    assert.equal(r.reads().length, 2);
  });
});

describe('writtenObjects', () => {
  const info = { group: '', version: 'v1', resource: 'configmaps', kind: 'ConfigMap', namespaced: true, persisted: true };
  const target = (url: string): ResourceRequest => requestTarget(url) as ResourceRequest;
  const answer = (v: unknown): Buffer => Buffer.from(JSON.stringify(v));

  it('names a created object from the answer (generateName), an updated one from the URL', () => {
    assert.deepEqual(writtenObjects('create', 201, target('/api/v1/namespaces/a/configmaps'), info, answer({ metadata: { name: 'gen-x1', uid: 'u' } })), [
      { apiVersion: 'v1', kind: 'ConfigMap', resource: 'configmaps', namespace: 'a', name: 'gen-x1', uid: 'u', action: 'created' },
    ]);
    assert.equal(writtenObjects('update', 200, target('/api/v1/namespaces/a/configmaps/x'), info, answer({ metadata: { name: 'x' } }))[0]?.action, 'updated');
    assert.equal(writtenObjects('patch', 201, target('/api/v1/namespaces/a/configmaps/x'), info, answer({ metadata: { name: 'x' } }))[0]?.action, 'created', 'an apply that created');
  });

  it('reads a delete answered with a Status (uid in details) and a collection delete (its items)', () => {
    assert.deepEqual(writtenObjects('delete', 200, target('/api/v1/namespaces/a/configmaps/x'), info, answer({ kind: 'Status', details: { name: 'x', uid: 'u' } })), [
      { apiVersion: 'v1', kind: 'ConfigMap', resource: 'configmaps', namespace: 'a', name: 'x', uid: 'u', action: 'deleted' },
    ]);
    const listed = writtenObjects('deletecollection', 200, target('/api/v1/namespaces/a/configmaps'), info, answer({ items: [{ metadata: { name: 'p', uid: '1' } }, { metadata: { name: 'q' } }, {}] }));
    assert.deepEqual(listed.map((o) => [o.name, o.uid, o.action]), [['p', '1', 'deleted'], ['q', undefined, 'deleted']]);
    assert.deepEqual(writtenObjects('create', 201, target('/api/v1/namespaces/a/configmaps'), info, Buffer.from('not json')), []);
  });

  it('knows the run’s own custom resource by uid or identity', () => {
    const owner = { apiVersion: 'cache.example.com/v1', kind: 'Memcached', name: 'm', namespace: 'a', uid: 'uid-1' };
    const o = { apiVersion: 'cache.example.com/v2', kind: 'Memcached', resource: 'memcacheds', namespace: 'a', name: 'm', action: 'updated' as const };
    assert.equal(isOwnerRef(owner, o), true);
    assert.equal(isOwnerRef(owner, { ...o, name: 'n', uid: 'uid-1' }), true);
    assert.equal(isOwnerRef(owner, { ...o, name: 'n' }), false);
    assert.equal(isOwnerRef(owner, { ...o, apiVersion: 'other.example.com/v1' }), false);
  });
});
