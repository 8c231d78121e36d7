import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { findCycle, notReadyBecause, resolveKind, splitDependencies } from '../../../src/config/depends-on.js';
import { entry, problems } from './entry-fixture.js';

const SETTINGS = { specField: 'dependsOn', allowCrossNamespace: false };

describe('watches.yaml dependsOn', () => {
  it('reads specField and allowCrossNamespace', async () => {
    assert.deepEqual((await entry('  dependsOn: {specField: dependsOn, allowCrossNamespace: true}\n')).dependsOn, { specField: 'dependsOn', allowCrossNamespace: true });
    assert.deepEqual((await entry('  dependsOn: {specField: needs}\n')).dependsOn, { specField: 'needs', allowCrossNamespace: false });
  });

  it('names the line and the fix', async () => {
    const found = await problems('  dependsOn:\n    specfield: dependsOn\n');
    assert.match(found[0] ?? '', /line 6: dependsOn has the unknown key "specfield"/);
    assert.match((await problems('  dependsOn: {allowCrossNamespace: true}\n'))[0] ?? '', /dependsOn\.specField is missing/);
    const both = await problems('  dependsOn: {specField: x}\n  valuesFrom: {specField: x}\n');
    assert.match(both[0] ?? '', /dependsOn\.specField and valuesFrom\.specField are both "x"/);
  });
});

describe('a spec with dependencies', () => {
  it('takes the field out of the values and lists what it depends on', () => {
    const split = splitDependencies({ replicas: 1, dependsOn: [{ kind: 'Database', name: 'db' }, { apiVersion: 'demo.example.com/v1', kind: 'Cache', name: 'c', namespace: 'shared' }] }, SETTINGS);
    assert.ok(split.ok);
    assert.deepEqual(split.spec, { replicas: 1 });
    assert.deepEqual(split.dependencies, [
      { kind: 'Database', name: 'db' },
      { kind: 'Cache', name: 'c', namespace: 'shared', apiVersion: 'demo.example.com/v1' },
    ]);
  });

  it('says what is wrong with a bad list, where', () => {
    for (const [field, expected] of [
      ['db', /^spec\.dependsOn is "db"; expected a list/],
      [[{ kind: 'database', name: 'db' }], /^spec\.dependsOn\[0\]\.kind is "database"/],
      [[{ kind: 'Database' }], /^spec\.dependsOn\[0\]\.name is missing/],
      [[{ kind: 'Database', name: 'db', uid: 'x' }], /^spec\.dependsOn\[0\] has the unknown key "uid"/],
    ] as const) {
      const split = splitDependencies({ dependsOn: field }, SETTINGS);
      assert.ok(!split.ok);
      assert.equal(split.reason, 'DependencyInvalid');
      assert.match(split.problem, expected);
    }
  });
});

describe('dependency judgement', () => {
  const served = [
    { group: 'db.example.com', version: 'v1', kind: 'Database' },
    { group: 'db.example.com', version: 'v2', kind: 'Database' },
    { group: 'a.example.com', version: 'v1', kind: 'Cache' },
    { group: 'b.example.com', version: 'v1', kind: 'Cache' },
  ];

  it('resolves a kind by name, by group when two share it, and says when it is not served', () => {
    const db = resolveKind({ kind: 'Database', name: 'x' }, served);
    assert.ok(db.ok);
    assert.equal(db.kind.group, 'db.example.com');
    const ambiguous = resolveKind({ kind: 'Cache', name: 'x' }, served);
    assert.ok(!ambiguous.ok);
    assert.match(ambiguous.problem, /served in several groups \(a\.example\.com, b\.example\.com\); say which with apiVersion/);
    const b = resolveKind({ kind: 'Cache', name: 'x', apiVersion: 'b.example.com/v1' }, served);
    assert.ok(b.ok);
    assert.equal(b.kind.group, 'b.example.com');
    const missing = resolveKind({ kind: 'Queue', name: 'x' }, served);
    assert.ok(!missing.ok);
    assert.match(missing.problem, /^Queue is not a kind this operator serves \(it serves Cache, Database\)/);
  });

  it('is Ready only for the current generation, and says why not', () => {
    assert.equal(notReadyBecause(undefined, 'Database ns/db'), 'Database ns/db does not exist');
    assert.equal(notReadyBecause({ deleting: true, ready: { status: 'True' } }, 'd'), 'd is being deleted');
    assert.equal(notReadyBecause({ deleting: false }, 'd'), 'd is not Ready (no Ready condition yet)');
    assert.equal(notReadyBecause({ deleting: false, ready: { status: 'False', message: '0/1 pods ready' } }, 'd'), 'd is not Ready (0/1 pods ready)');
    assert.match(notReadyBecause({ deleting: false, generation: 3, ready: { status: 'True', observedGeneration: 2 } }, 'd') ?? '', /Ready for generation 2, not yet for its current spec \(generation 3\)/);
    assert.equal(notReadyBecause({ deleting: false, generation: 3, observedGeneration: 3, ready: { status: 'True' } }, 'd'), undefined);
  });

  it('finds a cycle through any length of edges, and none in a diamond', () => {
    const graph = new Map<string, string[]>([
      ['a', ['b', 'c']],
      ['b', ['d']],
      ['c', ['d']],
      ['d', []],
    ]);
    const edges = (id: string) => graph.get(id) ?? [];
    assert.equal(findCycle('a', edges), undefined);
    graph.set('d', ['a']);
    assert.deepEqual(findCycle('a', edges), ['a', 'c', 'd', 'a']);
    assert.deepEqual(findCycle('d', edges), ['d', 'a', 'c', 'd']);
    graph.set('x', ['x']);
    assert.deepEqual(findCycle('x', edges), ['x', 'x']);
  });
});
