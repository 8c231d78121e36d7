/** The bundle's files as ASCII (scripts/ascii-source.ts): comments only, columns kept, code untouched. */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { asciiReplaced, asciiSource, isAscii } from '../../../scripts/ascii-source.js';
import { BUNDLE_DIR, packageRoot } from '../../../src/lib/package-root.js';

describe('ASCII bundle source', () => {
  it('replaces each UTF-16 unit by one character, so every column after it stays where it was', () => {
    const code = '// a → b … c’s § d — e\nlet x = 1; /* ≤ 😀 */ let y = 2;\n';
    const ascii = asciiReplaced(code);
    assert.equal(ascii, "// a > b . c's S d - e\nlet x = 1; /* < ?? */ let y = 2;\n");
    assert.equal(ascii.length, code.length);
    assert.equal(ascii.indexOf('let y'), code.indexOf('let y'));
  });

  it('rewrites a file whose only non-ASCII characters are in comments', () => {
    const code = '/** The queue → its lanes. */\nexport const a = "\\u2192"; // undici: response’s type\n';
    const ascii = asciiSource(code);
    assert.ok(ascii !== undefined && isAscii(ascii));
    assert.match(ascii, /export const a = "\\u2192";/u);
  });

  it('leaves a file alone where a character is code: a string, a regular expression, a raw template', () => {
    for (const code of ['export const a = "→"; // →\n', 'export const r = /[→]/u;\n', 'export const t = String.raw`…`;\n']) {
      assert.equal(asciiSource(code), undefined, code);
    }
  });

  it('hands back an ASCII file as it is', () => {
    const code = 'export const a = 1; // plain\n';
    assert.equal(asciiSource(code), code);
  });

  it('the built bundle is ASCII throughout (npm run build rewrote what needed it)', () => {
    const dir = join(packageRoot(), BUNDLE_DIR);
    const files = readdirSync(dir).filter((f) => f.endsWith('.js'));
    assert.ok(files.length > 0, `no bundle in ${dir}: npm run build first`);
    const twoByte = files.filter((f) => !isAscii(readFileSync(join(dir, f), 'utf8')));
    assert.deepEqual(twoByte, []);
  });
});
