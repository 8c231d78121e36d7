import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FieldContests } from '../../../src/dependents/contest.js';

/** A clock that moves only when the test says so. */
class HandClock {
  private t = 1_000;
  now(): number {
    return this.t;
  }
  advance(ms: number): void {
    this.t += ms;
  }
}

const POLICY = { repairs: 3, windowMs: 60_000 };

describe('FieldContests: a fight is told from drift', () => {
  it('repairs a field until it has been set back `repairs` times within the window, then gives it up once', () => {
    const clock = new HandClock();
    const book = new FieldContests(() => clock.now(), POLICY);
    for (let i = 0; i < 3; i++) {
      assert.deepEqual(book.judge('Deployment web', '/spec/replicas'), { kind: 'repair' }, `round ${String(i + 1)}`);
      book.repaired('Deployment web', '/spec/replicas');
      clock.advance(15_000); // the HPA's sync period
    }
    assert.deepEqual(book.judge('Deployment web', '/spec/replicas'), { kind: 'contested', repairs: 3, withinMs: 45_000 });
    assert.deepEqual(book.judge('Deployment web', '/spec/replicas'), { kind: 'given-up' }, 'told once');
    clock.advance(3_600_000);
    assert.deepEqual(book.judge('Deployment web', '/spec/replicas'), { kind: 'given-up' }, 'and stays given up');
    assert.deepEqual(book.givenUp('Deployment web'), ['/spec/replicas']);
    assert.deepEqual(book.givenUp('Deployment api'), []);
  });

  it('keeps repairing drift that comes back slower than the window: someone editing by hand now and then', () => {
    const clock = new HandClock();
    const book = new FieldContests(() => clock.now(), POLICY);
    for (let i = 0; i < 10; i++) {
      assert.equal(book.judge('Deployment web', '/spec/replicas').kind, 'repair');
      book.repaired('Deployment web', '/spec/replicas');
      clock.advance(30_001);
    }
  });

  it('counts each field of each object apart', () => {
    const clock = new HandClock();
    const book = new FieldContests(() => clock.now(), POLICY);
    for (let i = 0; i < 3; i++) {
      book.repaired('Deployment web', '/spec/replicas');
      book.repaired('Deployment web', '/spec/template/spec/containers/0/image');
      book.repaired('Deployment api', '/spec/replicas');
    }
    book.repaired('Deployment web', '/metadata/labels/x');
    assert.equal(book.judge('Deployment web', '/spec/replicas').kind, 'contested');
    assert.equal(book.judge('Deployment web', '/metadata/labels/x').kind, 'repair');
    assert.equal(book.judge('Deployment api', '/spec/replicas').kind, 'contested');
    assert.deepEqual(book.givenUp('Deployment web'), ['/spec/replicas']);
  });

  it('forgets set-backs older than the window, but never a field given up', () => {
    const clock = new HandClock();
    const book = new FieldContests(() => clock.now(), { repairs: 1, windowMs: 10_000 });
    book.repaired('Deployment web', '/a');
    book.repaired('Deployment web', '/b');
    assert.equal(book.judge('Deployment web', '/a').kind, 'contested');
    clock.advance(10_000);
    book.prune();
    assert.deepEqual(book.judge('Deployment web', '/b'), { kind: 'repair' }, 'pruned: a fresh start');
    assert.deepEqual(book.givenUp('Deployment web'), ['/a']);
  });

  it('refuses a policy that could never or always give up', () => {
    assert.throws(() => new FieldContests(() => 0, { repairs: 0, windowMs: 1 }), /repairs must be a whole number of at least 1/);
    assert.throws(() => new FieldContests(() => 0, { repairs: 3, windowMs: 0 }), /windowMs must be positive/);
  });
});
