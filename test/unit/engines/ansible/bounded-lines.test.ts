/** Reading a run's stdout line by line with a bound on each line (a runaway line is skipped, not held). */
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { boundedLines } from '../../../../src/engines/ansible/bounded-lines.js';

async function collect(chunks: readonly (string | Buffer)[], max: number): Promise<{ lines: string[]; skipped: number }> {
  const reader = boundedLines(Readable.from(chunks), max);
  const lines: string[] = [];
  for await (const l of reader.lines) lines.push(l);
  return { lines, skipped: reader.skipped() };
}

describe('boundedLines', () => {
  it('splits lines across chunks, drops \\r, keeps a last line without newline', async () => {
    assert.deepEqual(await collect(['{"a"', ':1}\r\nsecond\n', '', 'thi', 'rd'], 100), { lines: ['{"a":1}', 'second', 'third'], skipped: 0 });
  });

  it('keeps a multi-byte character split between chunks', async () => {
    const euro = Buffer.from('€\n', 'utf8');
    assert.deepEqual(await collect([euro.subarray(0, 1), euro.subarray(1)], 100), { lines: ['€'], skipped: 0 });
  });

  it('skips a line longer than the bound, in whatever chunks it comes, and reads on after it', async () => {
    const huge = Array.from({ length: 64 }, () => 'x'.repeat(1024 * 1024));
    const r = await collect(['before\n', ...huge, '\nafter\n', 'y'.repeat(11)], 10 * 1024 * 1024);
    assert.deepEqual(r, { lines: ['before', 'after', 'y'.repeat(11)], skipped: 0 + 1 });
    const last = await collect(['ok\n', 'z'.repeat(20)], 10);
    assert.deepEqual(last, { lines: ['ok'], skipped: 1 });
  });

  it('holds at most about the bound while a runaway line streams in', async () => {
    const before = process.memoryUsage().arrayBuffers;
    let peak = 0;
    function* source(): Generator<Buffer> {
      const mb = Buffer.alloc(1024 * 1024, 0x78);
      for (let i = 0; i < 512; i++) {
        yield mb;
        if (i % 64 === 0) peak = Math.max(peak, process.memoryUsage().arrayBuffers - before);
      }
      yield Buffer.from('\nend\n');
    }
    const reader = boundedLines(Readable.from(source()), 4 * 1024 * 1024);
    const lines: string[] = [];
    for await (const l of reader.lines) lines.push(l);
    assert.deepEqual(lines, ['end']);
    assert.equal(reader.skipped(), 1);
    assert.ok(peak < 64 * 1024 * 1024, `held ${String(Math.round(peak / 1024 / 1024))} MiB for a 512 MiB line`);
  });
});
