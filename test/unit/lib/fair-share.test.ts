import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FairQueue, FairSemaphore, shareCap } from '../../../src/lib/fair-share.js';

const tick = () => new Promise<void>((r) => setImmediate(r));

describe('shareCap', () => {
  const table: [slots: number, cap: number][] = [
    [1, 1], // nothing to keep back: the one slot is shared in turns
    [2, 1],
    [3, 2],
    [10, 9],
  ];
  for (const [slots, cap] of table) {
    it(`${slots} slot(s): one group holds at most ${cap}`, () => {
      assert.equal(shareCap(slots), cap);
    });
  }
});

describe('FairQueue', () => {
  /** Pushes `items` as `group:item` strings, then takes everything in the order the queue gives. */
  function order(items: string[], mayTake?: (group: string) => boolean): string[] {
    const q = new FairQueue<string>();
    for (const it of items) q.push(it.split(':')[0] as string, it);
    const out: string[] = [];
    for (let next = q.take(mayTake); next !== undefined; next = q.take(mayTake)) out.push(next.item);
    return out;
  }

  const table: { name: string; items: string[]; mayTake?: (g: string) => boolean; expect: string[] }[] = [
    { name: 'one group is FIFO', items: ['a:1', 'a:2', 'a:3'], expect: ['a:1', 'a:2', 'a:3'] },
    {
      name: 'groups take turns: a backlog of a does not hold b back',
      items: ['a:1', 'a:2', 'a:3', 'a:4', 'b:1', 'c:1', 'b:2'],
      expect: ['a:1', 'b:1', 'c:1', 'a:2', 'b:2', 'a:3', 'a:4'],
    },
    { name: 'a group that may not take keeps its items', items: ['a:1', 'b:1', 'a:2'], mayTake: (g) => g !== 'a', expect: ['b:1'] },
    { name: 'empty', items: [], expect: [] },
  ];
  for (const row of table) {
    it(row.name, () => {
      assert.deepEqual(order(row.items, row.mayTake), row.expect);
    });
  }

  it('a group skipped for its cap keeps its place in the turn order', () => {
    const q = new FairQueue<string>();
    q.push('a', 'a1');
    q.push('b', 'b1');
    q.push('c', 'c1');
    assert.equal(q.take((g) => g !== 'a')?.item, 'b1');
    assert.equal(q.take()?.item, 'a1');
    assert.equal(q.take()?.item, 'c1');
  });

  it('remove takes an item out of its group, and drain empties', () => {
    const q = new FairQueue<string>();
    q.push('a', 'a1');
    q.push('a', 'a2');
    q.push('b', 'b1');
    assert.equal(q.remove('a', 'a1'), true);
    assert.equal(q.remove('a', 'nope'), false);
    assert.equal(q.remove('b', 'b1'), true);
    assert.equal(q.size, 1);
    assert.deepEqual(q.drain(), ['a2']);
    assert.equal(q.size, 0);
    assert.equal(q.take(), undefined);
  });
});

describe('FairSemaphore', () => {
  /** Starts a holder of `group` that stays until the test releases it. */
  function holder(s: FairSemaphore, group: string, log: string[], name: string) {
    let release!: () => void;
    const done = s.run(group, () => {
      log.push(name);
      return new Promise<void>((r) => (release = r));
    });
    return { done, release: () => { release(); } };
  }

  it('one group never holds the last slot; others get it at once and in turns', async () => {
    const s = new FairSemaphore(2);
    const log: string[] = [];
    const hostile = [1, 2, 3].map((i) => holder(s, 'a', log, `a${i}`));
    await tick();
    assert.deepEqual(log, ['a1']);
    assert.equal(s.inUse, 1);
    const b = holder(s, 'b', log, 'b1');
    const c = holder(s, 'c', log, 'c1');
    await tick();
    assert.deepEqual(log, ['a1', 'b1']);
    b.release();
    await b.done;
    await tick();
    // c waited (its turn came before a's queued calls, which are at their cap anyway).
    assert.deepEqual(log, ['a1', 'b1', 'c1']);
    c.release();
    await c.done;
    hostile[0]?.release();
    await tick();
    await tick();
    assert.deepEqual(log, ['a1', 'b1', 'c1', 'a2']);
    assert.equal(s.heldByGroup('a'), 1);
    hostile[1]?.release();
    await tick();
    await tick();
    hostile[2]?.release();
    await Promise.all(hostile.map((h) => h.done));
    assert.equal(s.inUse, 0);
  });

  it('with one permit it is a fair turn-taker (nothing can be kept back)', async () => {
    const s = new FairSemaphore(1);
    const log: string[] = [];
    const a1 = holder(s, 'a', log, 'a1');
    const a2 = holder(s, 'a', log, 'a2');
    const b1 = holder(s, 'b', log, 'b1');
    await tick();
    a1.release();
    await a1.done;
    await tick();
    assert.deepEqual(log, ['a1', 'a2']);
    a2.release();
    await a2.done;
    await tick();
    b1.release();
    await b1.done;
    assert.deepEqual(log, ['a1', 'a2', 'b1']);
  });

  it('close turns the waiting away and frees nothing held', async () => {
    const s = new FairSemaphore(2);
    const log: string[] = [];
    const a1 = holder(s, 'a', log, 'a1');
    const a2 = s.run('a', () => Promise.resolve('never'));
    await tick();
    s.close(new Error('stopping'));
    await assert.rejects(a2, /stopping/);
    await assert.rejects(s.run('b', () => Promise.resolve(1)), /stopping/);
    a1.release();
    await a1.done;
    assert.equal(s.inUse, 0);
  });

  it('validates permits', () => {
    assert.throws(() => new FairSemaphore(0), RangeError);
    assert.throws(() => new FairSemaphore(1.5), RangeError);
  });
});
