/**
 * The bundle's files as pure ASCII. V8 keeps every loaded script's source text for lazy
 * compilation, one byte per character only if all of it is Latin-1; one "→" in a comment stores
 * the whole file at two bytes per character. esbuild escapes non-ASCII characters in code (its
 * default `charset: 'ascii'`) but copies comments as they are, and three of the chunks the operator
 * loads carry such comments (ours and undici's): 2.8 MB more heap for the life of the process
 * (heap snapshot at 1000 CRs, bench/RESULTS.md run AO).
 */
import { transformSync } from 'esbuild';

/** Same-length stand-ins, so a source map's columns still hold on the line. */
const ASCII_FOR: Readonly<Record<string, string>> = {
  '\u2018': "'", '\u2019': "'", '\u201c': '"', '\u201d': '"', '\u00a7': 'S', '\u2192': '>', '\u2190': '<',
  '\u2194': '-', '\u2026': '.', '\u2014': '-', '\u2013': '-', '\u2264': '<', '\u2265': '>', '\u00d7': 'x',
};

export function isAscii(code: string): boolean {
  return !/[^\x00-\x7f]/u.test(code);
}

/** Every non-ASCII UTF-16 unit replaced by one ASCII character (a look-alike, else `?`). */
export function asciiReplaced(code: string): string {
  // Without the u flag a character outside the BMP is two units, and so two characters here.
  return code.replace(/[^\x00-\x7f]/g, (c) => ASCII_FOR[c] ?? '?');
}

/** The same program once comments are gone: what a change limited to comments leaves equal. */
function withoutComments(code: string): string {
  return transformSync(code, { minifyWhitespace: true, legalComments: 'none', charset: 'utf8', format: 'esm', target: 'esnext' }).code;
}

/**
 * `code` in ASCII if only its comments held other characters; undefined if a character sits in
 * code esbuild could not escape (say a tagged template's raw text), where replacing it would
 * change what runs: that file keeps its characters and its two-byte source.
 */
export function asciiSource(code: string): string | undefined {
  if (isAscii(code)) return code;
  const ascii = asciiReplaced(code);
  return withoutComments(ascii) === withoutComments(code) ? ascii : undefined;
}
