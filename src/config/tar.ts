/**
 * Just enough of the tar format to look inside a packaged chart (`helm package` output) without
 * a dependency: ustar names with prefix, GNU long names and pax `path` records.
 */

export interface TarFile {
  readonly name: string;
  readonly data: Uint8Array;
}

const BLOCK = 512;

function cString(buf: Uint8Array, start: number, length: number): string {
  const slice = buf.subarray(start, start + length);
  const nul = slice.indexOf(0);
  return new TextDecoder().decode(nul === -1 ? slice : slice.subarray(0, nul));
}

function octal(buf: Uint8Array, start: number, length: number): number {
  const text = cString(buf, start, length).trim();
  if (!/^[0-7]*$/u.test(text)) throw new Error(`bad size field "${text}" in a tar header`);
  return text === '' ? 0 : parseInt(text, 8);
}

function paxPath(data: Uint8Array): string | undefined {
  // Records are "<len> <key>=<value>\n".
  const text = new TextDecoder().decode(data);
  for (const line of text.split('\n')) {
    const m = /^\d+ path=(.*)$/u.exec(line);
    if (m) return m[1];
  }
  return undefined;
}

/** Regular files of an uncompressed tar archive, in order. Throws on a truncated or garbled archive. */
export function* tarFiles(buf: Uint8Array): Generator<TarFile> {
  let offset = 0;
  let longName: string | undefined;
  while (offset + BLOCK <= buf.length) {
    const header = buf.subarray(offset, offset + BLOCK);
    if (header.every((b) => b === 0)) return; // end-of-archive marker
    const size = octal(header, 124, 12);
    const type = String.fromCharCode(header[156] ?? 0);
    const dataStart = offset + BLOCK;
    if (dataStart + size > buf.length) throw new Error('the archive is truncated');
    const data = buf.subarray(dataStart, dataStart + size);
    offset = dataStart + Math.ceil(size / BLOCK) * BLOCK;
    if (type === 'L') {
      longName = cString(data, 0, data.length);
      continue;
    }
    if (type === 'x') {
      longName = paxPath(data) ?? longName;
      continue;
    }
    if (type === 'g') continue;
    const magic = cString(header, 257, 6);
    const prefix = magic.startsWith('ustar') ? cString(header, 345, 155) : '';
    const name = longName ?? (prefix === '' ? cString(header, 0, 100) : `${prefix}/${cString(header, 0, 100)}`);
    longName = undefined;
    if (type === '0' || type === '\0' || type === '7') yield { name, data };
  }
  throw new Error('the archive ends without an end-of-archive marker');
}
