/**
 * Lines of a child's output with a bound on each: readline keeps a line whole however long it
 * grows, and one task printing `{{ '-' * width }}` with a width from a CR's spec would put a
 * gigabyte line in the operator's memory, taking down every tenant's reconciles. A longer line
 * is skipped (counted), its bytes dropped as they arrive.
 */
import type { Readable } from 'node:stream';

/** The longest stdout line kept: an event with a whole k8s_info answer fits, a runaway does not. */
export const MAX_LINE_BYTES = 32 * 1024 * 1024;

export interface LineReader {
  readonly lines: AsyncIterable<string>;
  /** How many lines were longer than the bound (and skipped), so far. */
  skipped(): number;
}

export function boundedLines(input: Readable, maxBytes: number = MAX_LINE_BYTES): LineReader {
  let skipped = 0;
  async function* read(): AsyncGenerator<string> {
    // The line being read: its parts so far, or dropping when it outgrew the bound.
    const cur = { parts: [] as Buffer[], size: 0, dropping: false };
    const take = (b: Buffer): void => {
      if (cur.dropping) return;
      if (cur.size + b.length > maxBytes) {
        cur.dropping = true;
        cur.parts = [];
        cur.size = 0;
        return;
      }
      cur.parts.push(b);
      cur.size += b.length;
    };
    const finish = (): string | undefined => {
      const line = cur.dropping ? undefined : Buffer.concat(cur.parts).toString('utf8').replace(/\r$/u, '');
      if (cur.dropping) skipped++;
      cur.parts = [];
      cur.size = 0;
      cur.dropping = false;
      return line;
    };
    for await (const chunk of input) {
      const buf = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : (chunk as Buffer);
      let start = 0;
      for (let nl = buf.indexOf(10, start); nl >= 0; nl = buf.indexOf(10, start)) {
        take(buf.subarray(start, nl));
        const line = finish();
        if (line !== undefined) yield line;
        start = nl + 1;
      }
      if (start < buf.length) take(buf.subarray(start));
    }
    if (cur.size > 0 || cur.dropping) {
      const line = finish();
      if (line !== undefined) yield line;
    }
  }
  return { lines: read(), skipped: () => skipped };
}
