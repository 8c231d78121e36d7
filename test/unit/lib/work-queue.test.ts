import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { realClock } from '../../../src/lib/clock.js';
import { WorkQueue, type WorkQueueOptions, type WorkResult } from '../../../src/lib/work-queue.js';
import { FakeClock, settle } from '../fakes/clock.js';

/** A handler whose calls stay open until the test finishes them. */
class Handler {
  readonly calls: { key: string; signal: AbortSignal; resolve: (r?: WorkResult) => void; reject: (e: unknown) => void }[] = [];
  readonly fn: WorkQueueOptions['handler'] = (key, signal) =>
    new Promise<WorkResult>((resolve, reject) => {
      this.calls.push({ key, signal, resolve, reject });
    });

  keys(): string[] {
    return this.calls.map((c) => c.key);
  }

  /** The one open call for `key` (fails if none). */
  open(key: string): Handler['calls'][number] {
    const c = this.calls.find((x) => x.key === key && !this.done.has(x));
    assert.ok(c, `no open call for ${key}`);
    return c;
  }

  private readonly done = new Set<Handler['calls'][number]>();

  async finish(key: string, r?: WorkResult): Promise<void> {
    const c = this.open(key);
    this.done.add(c);
    c.resolve(r);
    await settle();
  }

  async fail(key: string, err: unknown = new Error('boom')): Promise<void> {
    const c = this.open(key);
    this.done.add(c);
    c.reject(err);
    await settle();
  }
}

function setup(over: Partial<WorkQueueOptions> = {}) {
  const clock = new FakeClock();
  const h = new Handler();
  const q = new WorkQueue({
    name: 'test',
    concurrency: 2,
    handler: h.fn,
    clock,
    random: () => 0.5, // jitter factor exactly 1
    backoff: { baseMs: 500, maxMs: 5 * 60_000 },
    // Every key its own group: these tests are about lanes, retries and timing, not tenants.
    groupOf: (key: string) => key,
    ...over,
  });
  return { clock, h, q };
}

/**
 * Starts `web`; while it runs, a wave of creates (`waiting`) queues, then `web` gets a change (its
 * own finalizer write, echoed before the write's response came back) and a hint (its Deployment
 * became available after the run read it).
 */
async function changeAndHintDuringRun(q: WorkQueue, waiting: readonly string[]): Promise<void> {
  q.start();
  q.add('web');
  await settle();
  for (const k of waiting) q.add(k);
  q.add('web');
  q.add('web', { respectBackoff: true });
}

describe('WorkQueue', () => {
  it('validates its options', () => {
    assert.throws(() => new WorkQueue({ name: 'x', concurrency: 0, handler: async () => {} }), RangeError);
    assert.throws(() => new WorkQueue({ name: 'x', concurrency: 1.5, handler: async () => {} }), RangeError);
    assert.throws(() => new WorkQueue({ name: 'x', concurrency: 1, handler: async () => {}, backoff: { baseMs: 10, maxMs: 5 } }), RangeError);
  });

  it('coalesces repeated adds of a waiting key into one run', async () => {
    const { h, q } = setup({ concurrency: 1 });
    q.add('a');
    q.add('a');
    q.add('b');
    q.add('a');
    assert.equal(q.length, 2);
    q.start();
    await settle();
    assert.deepEqual(h.keys(), ['a']);
    await h.finish('a');
    await h.finish('b');
    assert.deepEqual(h.keys(), ['a', 'b']);
    assert.equal(q.length, 0);
    assert.equal(q.active, 0);
  });

  it('does not run before start()', async () => {
    const { h, q } = setup();
    q.add('a');
    await settle();
    assert.equal(h.calls.length, 0);
    q.start();
    await settle();
    assert.deepEqual(h.keys(), ['a']);
  });

  it('never runs one key twice at once; an add while running runs it once more afterwards', async () => {
    const { h, q } = setup({ concurrency: 4 });
    q.start();
    q.add('a');
    await settle();
    q.add('a');
    q.add('a');
    q.add('a');
    await settle();
    assert.equal(q.active, 1, 'still one run of a');
    assert.equal(h.calls.length, 1);
    await h.finish('a');
    assert.equal(h.calls.length, 2, 'ran again once');
    await h.finish('a');
    assert.equal(h.calls.length, 2, 'and only once');
    assert.equal(q.active, 0);
  });

  it('runs at most `concurrency` handlers at once, in FIFO order', async () => {
    const { h, q } = setup({ concurrency: 2 });
    q.start();
    for (const k of ['a', 'b', 'c', 'd']) q.add(k);
    await settle();
    assert.deepEqual(h.keys(), ['a', 'b']);
    assert.equal(q.active, 2);
    assert.equal(q.length, 2);
    await h.finish('b');
    assert.deepEqual(h.keys(), ['a', 'b', 'c']);
    await h.finish('a');
    assert.deepEqual(h.keys(), ['a', 'b', 'c', 'd']);
    assert.equal(q.active, 2);
  });

  it('takes keys round-robin across namespaces: a backlog of one tenant does not hold another’s first key back', async () => {
    const { h, q } = setup({ concurrency: 1, groupOf: undefined });
    for (let i = 0; i < 5; i++) q.add(`a/cr${i}`);
    q.add('b/victim');
    q.add('a/cr5');
    q.add('c/other');
    q.start();
    for (let i = 0; i < 3; i++) await h.finish(h.keys().at(-1) as string);
    assert.deepEqual(h.keys(), ['a/cr0', 'b/victim', 'c/other', 'a/cr1']);
  });

  it('one namespace runs on at most all but one shared worker, so a newcomer always finds one', async () => {
    const { h, q } = setup({ concurrency: 3, groupOf: undefined });
    for (let i = 0; i < 10; i++) q.add(`a/cr${i}`);
    q.start();
    await settle();
    // a's reconciles may all hang (e.g. waiting for a helm slot): the third worker stays free.
    assert.deepEqual(h.keys(), ['a/cr0', 'a/cr1']);
    q.add('b/victim');
    await settle();
    assert.deepEqual(h.keys(), ['a/cr0', 'a/cr1', 'b/victim']);
    await h.finish('b/victim');
    // The free worker is not a's to take.
    assert.deepEqual(h.keys(), ['a/cr0', 'a/cr1', 'b/victim']);
    await h.finish('a/cr0');
    assert.deepEqual(h.keys(), ['a/cr0', 'a/cr1', 'b/victim', 'a/cr2']);
  });

  it('follow-up workers are shared the same way', async () => {
    const { h, q } = setup({ concurrency: 1, followUpWorkers: 2, groupOf: undefined });
    q.add('x/busy');
    for (let i = 0; i < 4; i++) q.add(`a/f${i}`, { lane: 'followUp' });
    q.start();
    await settle();
    // The shared worker is busy with a change; a holds one of the two follow-up workers, not both.
    assert.deepEqual(h.keys(), ['a/f0', 'x/busy']);
    q.add('b/f', { lane: 'followUp' });
    await settle();
    assert.deepEqual(h.keys(), ['a/f0', 'x/busy', 'b/f']);
  });

  it('takes turns between lanes: a follow-up or a deletion does not wait behind a backlog of changes', async () => {
    const { h, q } = setup({ concurrency: 1 });
    for (const k of ['c1', 'c2', 'c3', 'c4']) q.add(k);
    q.add('ready-1', { respectBackoff: true }); // a dependent became available: followUp lane
    q.add('gone-1', { lane: 'delete' });
    q.add('ready-2', { respectBackoff: true });
    q.add('c4', { lane: 'delete' }); // deleted while it waits: out of the change lane
    q.add('c1', { lane: 'change' }); // already waiting: keeps its place
    assert.equal(q.length, 7);
    q.start();
    await settle();
    for (const k of ['c1', 'gone-1', 'ready-1', 'c2', 'c4', 'ready-2', 'c3']) await h.finish(k);
    assert.deepEqual(h.keys(), ['c1', 'gone-1', 'ready-1', 'c2', 'c4', 'ready-2', 'c3']);
    assert.equal(q.length, 0);
  });

  it('a follow-up for a key still waiting behind a wave of changes runs at the follow-ups’ turn', async () => {
    const { h, q } = setup({ concurrency: 1 });
    for (const k of ['c1', 'c2', 'c3', 'web']) q.add(k);
    q.add('web', { respectBackoff: true }); // its Deployment became available
    q.start();
    await settle();
    await h.finish('c1');
    assert.deepEqual(h.keys(), ['c1', 'web']);
  });

  it('requeues a handler asks for come back as follow-ups; retries as changes', async () => {
    const { clock, h, q } = setup({ concurrency: 1 });
    q.start();
    q.add('paced');
    await settle();
    await h.finish('paced', { requeueAfterMs: 100 });
    q.add('failing');
    await settle();
    await h.fail('failing');
    for (const k of ['c1', 'c2']) q.add(k);
    await settle();
    await clock.advance(500);
    // c1 ran when 'failing' ended; then the turns: follow-up (paced), change (c2), …, change (failing).
    for (const k of ['c1', 'paced', 'c2', 'failing']) await h.finish(k);
    assert.deepEqual(h.keys(), ['paced', 'failing', 'c1', 'paced', 'c2', 'failing']);
  });

  it('no lane starves another: a stream of follow-ups still lets changes through every other turn', async () => {
    const { h, q } = setup({ concurrency: 1 });
    q.start();
    q.add('busy');
    await settle();
    for (let i = 0; i < 3; i++) q.add(`change-${String(i)}`);
    for (let i = 0; i < 3; i++) q.add(`hint-${String(i)}`, { respectBackoff: true });
    await h.finish('busy');
    for (let i = 0; i < 6; i++) {
      const open = h.keys()[h.keys().length - 1] as string;
      // Each follow-up that runs brings another one along, as a flapping dependent would.
      if (open.startsWith('hint')) q.add(`hint-${String(10 + i)}`, { respectBackoff: true });
      await h.finish(open);
    }
    // 'busy' came from the change lane, so the follow-ups have the next turn.
    assert.deepEqual(h.keys().slice(1, 7), ['hint-0', 'change-0', 'hint-1', 'change-1', 'hint-2', 'change-2']);
  });

  it('follow-up workers take follow-ups beside a full set of change workers, and nothing else', async () => {
    const { h, q } = setup({ concurrency: 2, followUpWorkers: 1 });
    q.start();
    for (const k of ['c1', 'c2', 'c3']) q.add(k);
    await settle();
    assert.deepEqual(h.keys(), ['c1', 'c2']); // the follow-up worker does not take a change
    q.add('ready-1', { respectBackoff: true });
    q.add('ready-2', { respectBackoff: true });
    await settle();
    // One follow-up runs at once on its own worker although both change workers are busy.
    assert.deepEqual(h.keys(), ['c1', 'c2', 'ready-1']);
    assert.equal(q.active, 3);
    await h.finish('ready-1');
    assert.deepEqual(h.keys(), ['c1', 'c2', 'ready-1', 'ready-2']);
    await h.finish('ready-2');
    assert.equal(q.active, 2);
    // A change worker that comes free takes turns as before (c3 is the only key waiting).
    await h.finish('c1');
    assert.deepEqual(h.keys(), ['c1', 'c2', 'ready-1', 'ready-2', 'c3']);
    assert.equal(q.active, 2);
  });

  it('without follow-up workers a follow-up waits for a shared worker', async () => {
    const { h, q } = setup({ concurrency: 1 });
    q.start();
    q.add('c1');
    q.add('ready-1', { respectBackoff: true });
    await settle();
    assert.deepEqual(h.keys(), ['c1']);
    assert.throws(() => new WorkQueue({ name: 'x', concurrency: 1, followUpWorkers: -1, handler: async () => {} }), RangeError);
  });

  it('a rerun keeps the strongest reason it was asked for while running', async () => {
    const { h, q } = setup({ concurrency: 1 });
    q.start();
    q.add('a');
    await settle();
    q.add('a', { respectBackoff: true });
    q.add('a', { lane: 'delete' });
    q.add('a', { respectBackoff: true });
    for (const k of ['c1', 'c2']) q.add(k);
    await h.finish('a');
    // 'a' went back to the delete lane, whose turn is next, not behind the waiting changes.
    assert.deepEqual(h.keys(), ['a', 'a']);
    await h.finish('a');
    assert.deepEqual(h.keys(), ['a', 'a', 'c1']);
  });

  it('a hint during a run that also got a change: the rerun takes the follow-ups’ turn, not the back of the change lane', async () => {
    const { h, q } = setup({ concurrency: 1 });
    await changeAndHintDuringRun(q, ['c1', 'c2', 'c3']);
    await h.finish('web');
    assert.deepEqual(h.keys(), ['web', 'web'], 'the rerun does not wait behind c1…c3');
    await h.finish('web');
    assert.deepEqual(h.keys(), ['web', 'web', 'c1']);
  });

  it('… and on follow-up workers it runs beside the changes at once', async () => {
    const { h, q } = setup({ concurrency: 1, followUpWorkers: 1 });
    await changeAndHintDuringRun(q, ['c1', 'c2']);
    await h.finish('web');
    assert.deepEqual(h.keys(), ['web', 'web', 'c1'], 'the follow-up worker takes web, the shared one c1');
  });

  it('a failed run with a hint and a change still retries with the changes (the hint does not cut a backoff)', async () => {
    const { h, q } = setup({ concurrency: 1 });
    await changeAndHintDuringRun(q, ['c1', 'c2']);
    await h.fail('web');
    // The change that came while it ran reruns it, in the change lane behind c1 and c2.
    for (const k of ['c1', 'c2']) await h.finish(k);
    assert.deepEqual(h.keys(), ['web', 'c1', 'c2', 'web']);
  });

  it('retries a failing key with exponential backoff and resets it on success', async () => {
    const errors: [string, number][] = [];
    const { clock, h, q } = setup({ onError: (key, _err, attempt) => errors.push([key, attempt]) });
    q.start();
    q.add('a');
    await settle();
    const expected = [500, 1000, 2000, 4000];
    for (const [i, delay] of expected.entries()) {
      await h.fail('a');
      assert.deepEqual(clock.pendingDelays(), [delay], `retry ${i + 1} after ${delay} ms`);
      await clock.advance(delay - 1);
      assert.equal(h.calls.length, i + 1, 'not before the delay');
      await clock.advance(1);
      assert.equal(h.calls.length, i + 2, 'right at the delay');
    }
    assert.deepEqual(errors, [['a', 1], ['a', 2], ['a', 3], ['a', 4]]);
    await h.finish('a'); // success resets
    q.add('a');
    await settle();
    await h.fail('a');
    assert.deepEqual(clock.pendingDelays(), [500], 'backoff starts over after a success');
  });

  it('caps the backoff and keeps jitter small', async () => {
    const delays: number[] = [];
    for (const r of [0, 0.9999999]) {
      const { clock, h, q } = setup({ random: () => r, backoff: { baseMs: 1000, maxMs: 8000 } });
      q.start();
      q.add('a');
      await settle();
      for (let i = 0; i < 6; i++) {
        await h.fail('a');
        const [d] = clock.pendingDelays();
        assert.ok(d !== undefined);
        delays.push(d);
        await clock.advance(d);
      }
    }
    // random 0 → factor 0.9; random ~1 → ~1.1 (capped at maxMs)
    assert.deepEqual(delays.slice(0, 6), [900, 1800, 3600, 7200, 7200, 7200]);
    assert.deepEqual(delays.slice(6).map(Math.round), [1100, 2200, 4400, 8000, 8000, 8000]);
  });

  it('an add during backoff runs immediately (an event must not wait for the backoff)', async () => {
    const { clock, h, q } = setup();
    q.start();
    q.add('a');
    await settle();
    await h.fail('a');
    assert.equal(q.scheduledCount, 1);
    q.add('a');
    await settle();
    assert.equal(h.calls.length, 2);
    assert.equal(q.scheduledCount, 0, 'the scheduled retry was superseded');
    assert.equal(clock.pending, 0);
    await h.fail('a');
    assert.deepEqual(clock.pendingDelays(), [1000], 'the failure count carries on');
  });

  it('an add while a failing run is in flight reruns right after it, not after the backoff', async () => {
    const { h, q } = setup();
    q.start();
    q.add('a');
    await settle();
    q.add('a'); // e.g. the user fixed the spec while the failing reconcile ran
    await h.fail('a');
    assert.equal(h.calls.length, 2);
    assert.equal(q.scheduledCount, 0);
  });

  it('a soft add (respectBackoff) never cuts the backoff of a failing key short', async () => {
    const { clock, h, q } = setup();
    q.start();
    q.add('a');
    await settle();
    q.add('a', { respectBackoff: true }); // e.g. the failed attempt's own apply changed a dependent
    await h.fail('a');
    assert.equal(h.calls.length, 1, 'no rerun right after the failure');
    assert.deepEqual(clock.pendingDelays(), [500], 'the retry waits for its backoff');
    q.add('a', { respectBackoff: true }); // e.g. the rollback changed a dependent
    await settle();
    assert.equal(h.calls.length, 1, 'the scheduled retry stands');
    assert.deepEqual(clock.pendingDelays(), [500]);
    await clock.advance(500);
    assert.equal(h.calls.length, 2);
    q.add('a'); // a change of the key itself (the user fixed the spec) still runs at once after it
    await h.fail('a');
    assert.equal(h.calls.length, 3);
  });

  it('a soft add during a successful run reruns it right after (e.g. readiness changed)', async () => {
    const { h, q } = setup();
    q.start();
    q.add('a');
    await settle();
    q.add('a', { respectBackoff: true });
    await h.finish('a');
    assert.equal(h.calls.length, 2);
    await h.finish('a');
    q.add('a', { respectBackoff: true }); // no failures: a plain add
    await settle();
    assert.equal(h.calls.length, 3);
  });

  it('requeueAfterMs re-adds after the delay', async () => {
    const { clock, h, q } = setup();
    q.start();
    q.add('a');
    await settle();
    await h.finish('a', { requeueAfterMs: 60_000 });
    assert.equal(q.scheduledCount, 1);
    await clock.advance(59_999);
    assert.equal(h.calls.length, 1);
    await clock.advance(1);
    assert.equal(h.calls.length, 2);
  });

  it('an add wins over a pending requeueAfter (events do not wait for the period)', async () => {
    const { clock, h, q } = setup();
    q.start();
    q.add('a');
    await settle();
    await h.finish('a', { requeueAfterMs: 60_000 });
    await clock.advance(10_000);
    q.add('a');
    await settle();
    assert.equal(h.calls.length, 2, 'ran at once');
    await h.finish('a', { requeueAfterMs: 60_000 });
    await clock.advance(50_000);
    assert.equal(h.calls.length, 2, 'the old period timer was dropped');
    await clock.advance(10_000);
    assert.equal(h.calls.length, 3, 'the new period counts from the last run');
  });

  it('requeueAfter while the key was re-added during the run: runs now, no extra timer', async () => {
    const { h, q } = setup();
    q.start();
    q.add('a');
    await settle();
    q.add('a');
    await h.finish('a', { requeueAfterMs: 60_000 });
    assert.equal(h.calls.length, 2);
    assert.equal(q.scheduledCount, 0);
  });

  it('addAfter keeps the earliest time and is a no-op for a key already waiting', async () => {
    const { clock, h, q } = setup();
    q.start();
    q.addAfter('a', 5000);
    q.addAfter('a', 9000);
    assert.deepEqual(clock.pendingDelays(), [5000]);
    q.addAfter('a', 2000);
    assert.deepEqual(clock.pendingDelays(), [2000], 'an earlier time replaces the later one');
    await clock.advance(2000);
    assert.equal(h.calls.length, 1);
    await clock.advance(10_000);
    assert.equal(h.calls.length, 1, 'one run only');

    const s = setup({ concurrency: 1 });
    s.q.add('x');
    s.q.add('y');
    s.q.addAfter('y', 1000); // y is queued already
    assert.equal(s.q.scheduledCount, 0);
  });

  it('a delayed hint never moves a failing key’s retry, and one during a run looks again after it', async () => {
    const { clock, h, q } = setup();
    q.start();
    q.add('a');
    await settle();
    q.addAfter('a', 5_000, { respectBackoff: true }); // progress seen while it runs
    await h.finish('a');
    assert.equal(h.calls.length, 1);
    assert.deepEqual(clock.pendingDelays(), [5_000], 'looks again after the pace');
    await clock.advance(5_000);
    assert.equal(h.calls.length, 2);
    await h.fail('a');
    assert.deepEqual(clock.pendingDelays(), [500]);
    q.addAfter('a', 100, { respectBackoff: true });
    assert.deepEqual(clock.pendingDelays(), [500], 'the retry stands');
  });

  it('drops the hints a running key got before its run read what they were about, not later ones', async () => {
    const { clock, h, q } = setup();
    q.start();
    q.add('a');
    await settle();
    q.add('a', { respectBackoff: true }); // helm's own create of a dependent
    q.addAfter('a', 5_000, { respectBackoff: true }); // a rollout's progress
    q.dropSoftAdds('a'); // the run reads the caches now
    await h.finish('a');
    assert.equal(h.calls.length, 1, 'no rerun');
    assert.deepEqual(clock.pendingDelays(), []);
    q.add('a');
    await settle();
    q.dropSoftAdds('a');
    q.add('a', { respectBackoff: true }); // the Deployment became available after the read
    await h.finish('a');
    assert.equal(h.calls.length, 3, 'a later hint still reruns it');
    q.dropSoftAdds('b'); // not running: nothing to drop, no error
  });

  it('a deletion added while its key runs reruns it after the run, whatever the run ends with and whatever its run read', async () => {
    for (const end of ['requeue', 'fail'] as const) {
      const { clock, h, q } = setup({ concurrency: 1 });
      q.start();
      q.add('a'); // a spec change's run (an Ansible run, a helm upgrade)
      await settle();
      q.add('a', { lane: 'delete' }); // the user deletes the CR meanwhile
      q.dropSoftAdds('a'); // the run reads the caches: hints are covered, the deletion is not
      q.add('b');
      if (end === 'requeue') await h.finish('a', { requeueAfterMs: 60_000 });
      else await h.fail('a');
      assert.deepEqual(h.keys(), ['a', 'a'], `${end}: the deletion runs at once, before b and without waiting for the period or a backoff`);
      assert.deepEqual(clock.pendingDelays(), [], `${end}: no timer left for a`);
    }
  });

  it('addAfter with a non-positive delay is an add', async () => {
    const { h, q } = setup();
    q.start();
    q.addAfter('a', 0);
    await settle();
    assert.equal(h.calls.length, 1);
  });

  it('shutdown drops queued and scheduled work, waits for running handlers, and ignores later adds', async () => {
    const { clock, h, q } = setup({ concurrency: 1 });
    q.start();
    q.add('a');
    q.add('b');
    q.addAfter('c', 1000);
    await settle();
    let done = false;
    const p = q.shutdown().then(() => (done = true));
    await settle();
    assert.equal(done, false, 'waits for a');
    assert.equal(clock.pending, 0, 'scheduled timers cleared');
    q.add('d');
    await h.finish('a');
    await p;
    assert.equal(done, true);
    assert.deepEqual(h.keys(), ['a'], 'b, c and d never ran');
  });

  it('shutdown aborts running handlers after drainTimeoutMs', async () => {
    const { clock, h, q } = setup();
    q.start();
    q.add('a');
    await settle();
    const p = q.shutdown({ drainTimeoutMs: 10_000 });
    const call = h.open('a');
    call.signal.addEventListener('abort', () => {
      call.reject(call.signal.reason);
    });
    await clock.advance(9_999);
    assert.equal(call.signal.aborted, false);
    await clock.advance(1);
    assert.equal(call.signal.aborted, true);
    await p;
    assert.equal(q.active, 0);
  });

  it('shutdown with nothing running resolves at once', async () => {
    const { q } = setup();
    q.start();
    await q.shutdown();
  });

  it('reports metrics hooks', async () => {
    const seen = { adds: [] as string[], depth: [] as number[], retries: [] as string[], latency: [] as number[], work: [] as number[] };
    const { clock, h, q } = setup({
      concurrency: 1,
      metrics: {
        onAdd: (k) => seen.adds.push(k),
        onDepth: (n) => seen.depth.push(n),
        onRetry: (k) => seen.retries.push(k),
        onQueueLatency: (ms) => seen.latency.push(ms),
        onWorkDuration: (ms) => seen.work.push(ms),
      },
    });
    q.add('a');
    q.add('a'); // coalesced: not counted
    await clock.advance(300);
    q.start();
    await settle();
    await clock.advance(200);
    await h.fail('a');
    assert.deepEqual(seen.adds, ['a']);
    assert.deepEqual(seen.retries, ['a']);
    assert.deepEqual(seen.latency, [300]);
    assert.deepEqual(seen.work, [200]);
    assert.deepEqual(seen.depth, [1, 0]);
  });

  it('reports depth and wait per lane', async () => {
    const depth: string[] = [];
    const waits: string[] = [];
    const { clock, h, q } = setup({
      concurrency: 1,
      metrics: {
        onLaneDepth: (lane, n) => depth.push(`${lane}=${String(n)}`),
        onQueueLatency: (ms, lane) => waits.push(`${lane ?? '?'}:${String(ms)}`),
      },
    });
    q.add('ns/a');
    q.add('ns/b', { lane: 'delete' });
    q.add('ns/c', { respectBackoff: true });
    await clock.advance(100);
    q.start();
    await settle();
    await h.finish('ns/a');
    await settle();
    await h.finish('ns/b');
    await settle();
    await h.finish('ns/c');
    assert.deepEqual(depth, ['change=1', 'delete=1', 'followUp=1', 'change=0', 'delete=0', 'followUp=0']);
    // Turns go round the lanes: change, delete, then followUp, each having waited since it was added.
    assert.equal(waits.length, 3);
    assert.deepEqual(
      waits.map((w) => w.split(':')[0]),
      ['change', 'delete', 'followUp'],
    );
    assert.equal(waits[0], 'change:100');
  });

  it('a handler that throws synchronously is retried like a rejection', async () => {
    const clock = new FakeClock();
    let calls = 0;
    const q = new WorkQueue({
      name: 't',
      concurrency: 1,
      clock,
      random: () => 0.5,
      handler: () => {
        calls++;
        throw new Error('sync');
      },
    });
    q.start();
    q.add('a');
    await settle();
    assert.equal(calls, 1);
    await clock.advance(500);
    assert.equal(calls, 2);
    await q.shutdown();
  });

  it('the real clock never keeps the process alive and is monotonic', () => {
    const t = realClock.setTimeout(() => undefined, 3_600_000) as NodeJS.Timeout;
    assert.equal(t.hasRef(), false);
    realClock.clearTimeout(t);
    const a = realClock.now();
    assert.ok(realClock.now() >= a);
  });
});
