import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { diffRelist } from '../../../src/kube/relist.js';
import type { KubeObject } from '../../../src/kube/types.js';

const obj = (name: string, rv: string, uid = `uid-${name}`, namespace = 'ns'): KubeObject => ({
  metadata: { name, namespace, resourceVersion: rv, uid },
});

describe('diffRelist', () => {
  it('diffRelist: first list adds everything', () => {
    const d = diffRelist(new Map<string, KubeObject>(), [obj('a', '1'), obj('b', '2')]);
    assert.deepEqual(d.added.map((o) => o.metadata.name), ['a', 'b']);
    assert.deepEqual(d.updated, []);
    assert.deepEqual(d.deleted, []);
    assert.deepEqual([...d.cache.keys()], ['ns/a', 'ns/b']);
  });

  it('diffRelist: deleted while away, changed, unchanged, new, recreated', () => {
    const cached = new Map<string, KubeObject>([
      ['ns/same', obj('same', '1')],
      ['ns/changed', obj('changed', '2')],
      ['ns/deleted', obj('deleted', '3')],
      ['ns/recreated', obj('recreated', '4')],
    ]);
    const d = diffRelist(cached, [obj('same', '1'), obj('changed', '9'), obj('new', '10'), obj('recreated', '11', 'uid-other')]);
    assert.deepEqual(d.added.map((o) => o.metadata.name).sort(), ['new', 'recreated']);
    assert.deepEqual(
      d.updated.map(([o, n]) => [o.metadata.resourceVersion, n.metadata.resourceVersion]),
      [['2', '9']],
    );
    assert.deepEqual(d.deleted.map((o) => o.metadata.name).sort(), ['deleted', 'recreated']);
    assert.equal(d.deleted.find((o) => o.metadata.name === 'recreated')?.metadata.uid, 'uid-recreated', 'the old object');
    assert.equal(d.cache.size, 4);
    assert.equal(d.cache.get('ns/changed')?.metadata.resourceVersion, '9');
  });

  it('diffRelist keys by namespace: same name in two namespaces are two objects', () => {
    const cached = new Map<string, KubeObject>([['a/x', obj('x', '1', 'u1', 'a')]]);
    const d = diffRelist(cached, [obj('x', '1', 'u1', 'a'), obj('x', '2', 'u2', 'b')]);
    assert.deepEqual(d.added.map((o) => o.metadata.namespace), ['b']);
    assert.deepEqual(d.deleted, []);
  });
});
