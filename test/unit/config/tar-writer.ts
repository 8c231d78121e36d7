/** Builds tar archives for tests, including the long-name forms real tools emit. */

export interface TarEntry {
  readonly name: string;
  readonly data?: string | Uint8Array;
  /** '0' file (default), '5' directory, 'x' pax header, 'L' GNU long name. */
  readonly type?: '0' | '5' | 'x' | 'L';
  /** ustar prefix field (for names split across prefix/name). */
  readonly prefix?: string;
}

const BLOCK = 512;

function field(buf: Uint8Array, offset: number, length: number, text: string): void {
  buf.set(new TextEncoder().encode(text).subarray(0, length), offset);
}

function header(entry: TarEntry, size: number): Uint8Array {
  const h = new Uint8Array(BLOCK);
  field(h, 0, 100, entry.name);
  field(h, 100, 8, '0000644\0');
  field(h, 108, 8, '0000000\0');
  field(h, 116, 8, '0000000\0');
  field(h, 124, 12, size.toString(8).padStart(11, '0') + '\0');
  field(h, 136, 12, '00000000000\0');
  field(h, 156, 1, entry.type ?? '0');
  field(h, 257, 6, 'ustar\0');
  field(h, 263, 2, '00');
  if (entry.prefix !== undefined) field(h, 345, 155, entry.prefix);
  field(h, 148, 8, '        ');
  const sum = h.reduce((a, b) => a + b, 0);
  field(h, 148, 8, sum.toString(8).padStart(6, '0') + '\0 ');
  return h;
}

export function tar(entries: readonly TarEntry[], { endMarker = true } = {}): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const e of entries) {
    const data = typeof e.data === 'string' ? new TextEncoder().encode(e.data) : (e.data ?? new Uint8Array());
    parts.push(header(e, data.length));
    const padded = new Uint8Array(Math.ceil(data.length / BLOCK) * BLOCK);
    padded.set(data);
    parts.push(padded);
  }
  if (endMarker) parts.push(new Uint8Array(BLOCK * 2));
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

export function paxRecord(key: string, value: string): string {
  // The length prefix counts itself, so find the fixed point.
  const body = ` ${key}=${value}\n`;
  let len = body.length + 1;
  while (`${len}${body}`.length !== len) len = `${len}${body}`.length;
  return `${len}${body}`;
}
