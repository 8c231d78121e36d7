import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Semaphore } from '../../../src/lib/semaphore.js';

/** A promise the test settles. */
function gate(): { promise: Promise<void>; open: () => void; fail: (e: unknown) => void } {
  let open!: () => void;
  let fail!: (e: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    open = res;
    fail = rej;
  });
  return { promise, open, fail };
}

const tick = () => new Promise<void>((r) => setImmediate(r));

describe('Semaphore', () => {
  it('lets `permits` holders in at once and the rest in arrival order, also after a failure', async () => {
    const s = new Semaphore(2);
    const started: string[] = [];
    const gates = new Map<string, ReturnType<typeof gate>>();
    const results = ['a', 'b', 'c', 'd'].map((k) => {
      const g = gate();
      gates.set(k, g);
      return s.run(async () => {
        started.push(k);
        await g.promise;
        return k;
      });
    });
    await tick();
    assert.deepEqual(started, ['a', 'b']);
    assert.equal(s.inUse, 2);
    gates.get('b')?.fail(new Error('boom'));
    await assert.rejects(results[1] as Promise<string>, /boom/);
    await tick();
    assert.deepEqual(started, ['a', 'b', 'c']);
    gates.get('a')?.open();
    assert.equal(await results[0], 'a');
    await tick();
    assert.deepEqual(started, ['a', 'b', 'c', 'd']);
    gates.get('c')?.open();
    gates.get('d')?.open();
    assert.deepEqual(await Promise.all([results[2], results[3]]), ['c', 'd']);
    assert.equal(s.inUse, 0);
  });

  it('once closed, turns away the waiting and later runs without running them, and lets holders finish', async () => {
    const s = new Semaphore(1);
    const holder = gate();
    const ran: string[] = [];
    const held = s.run(async () => {
      ran.push('holder');
      await holder.promise;
      return 'held';
    });
    const waiting = s.run(() => {
      ran.push('waiter');
      return Promise.resolve('waited');
    });
    await tick();
    s.close(new Error('stopping'));
    await assert.rejects(waiting, /stopping/);
    await assert.rejects(
      s.run(() => {
        ran.push('late');
        return Promise.resolve('late');
      }),
      /stopping/,
    );
    holder.open();
    assert.equal(await held, 'held');
    assert.deepEqual(ran, ['holder']);
    assert.equal(s.inUse, 0);
  });

  it('refuses a permit count that is not a positive integer', () => {
    assert.throws(() => new Semaphore(0), RangeError);
    assert.throws(() => new Semaphore(1.5), RangeError);
  });
});
