import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RunRecord, TokenTable, newToken } from '../../../../src/ansible/proxy/runs.js';

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
    const r = new RunRecord();
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
    const r = new RunRecord();
    r.readFrom({ group: '', version: 'v1', resource: 'secrets', namespace: 'a' });
    r.readFrom({ group: '', version: 'v1', resource: 'secrets', namespace: 'a' });
    r.readFrom({ group: '', version: 'v1', resource: 'secrets', namespace: undefined });
    assert.equal(r.reads().length, 2);
  });
});
