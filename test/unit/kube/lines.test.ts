import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LineDecoder } from '../../../src/kube/lines.js';

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

describe('LineDecoder', () => {
  it('LineDecoder joins lines split across chunks and skips blank lines', () => {
    const d = new LineDecoder();
    assert.deepEqual(d.push(enc('{"a":1}\n{"b"')), ['{"a":1}']);
    assert.deepEqual(d.push(enc(':2}\n\n  \n{"c":3}')), ['{"b":2}']);
    assert.deepEqual(d.end(), ['{"c":3}'], 'a final line without newline is kept');
    assert.deepEqual(d.end(), []);
  });

  it('LineDecoder survives a chunk boundary inside a multi-byte character', () => {
    const bytes = enc('{"v":"ü€😀"}\n');
    const d = new LineDecoder();
    const out: string[] = [];
    for (const b of bytes) out.push(...d.push(Uint8Array.of(b))); // one byte at a time
    assert.deepEqual(out, ['{"v":"ü€😀"}']);
  });

  it('LineDecoder handles CRLF and many lines in one chunk', () => {
    const d = new LineDecoder();
    assert.deepEqual(d.push(enc('1\r\n2\r\n3\r\n')), ['1', '2', '3']);
  });
});
