import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { protobufMeta } from '../../../src/apiproxy/protobuf-meta.js';

/** A length-delimited protobuf field. */
function bytesField(n: number, value: Buffer): Buffer {
  const len: number[] = [];
  let v = value.length;
  do {
    len.push((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    v >>= 7;
  } while (v > 0);
  return Buffer.concat([Buffer.from([(n << 3) | 2, ...len]), value]);
}
const str = (n: number, s: string): Buffer => bytesField(n, Buffer.from(s));
const envelope = (object: Buffer, before: Buffer = Buffer.alloc(0)): Buffer =>
  Buffer.concat([Buffer.from('k8s\0', 'latin1'), bytesField(1, Buffer.concat([str(1, 'v1'), str(2, 'ConfigMap')])), before, bytesField(2, object), str(4, 'application/vnd.kubernetes.protobuf')]);

describe('protobufMeta', () => {
  it('reads name and namespace from the object metadata inside the envelope', () => {
    const meta = Buffer.concat([str(1, 'escape'), str(2, 'gen-'), str(3, 'kube-system'), bytesField(11, Buffer.from([0x0a, 0x00]))]);
    const object = Buffer.concat([bytesField(1, meta), bytesField(2, str(1, 'data'))]);
    assert.deepEqual(protobufMeta(envelope(object)), { name: 'escape', namespace: 'kube-system' });
  });

  it('skips varint and fixed fields, and reads long names (multi-byte lengths)', () => {
    const long = 'x'.repeat(300);
    const object = bytesField(1, str(1, long));
    const varintAndFixed = Buffer.from([(5 << 3) | 0, 0x96, 0x01, (6 << 3) | 1, 1, 2, 3, 4, 5, 6, 7, 8, (7 << 3) | 5, 1, 2, 3, 4]);
    assert.deepEqual(protobufMeta(envelope(object, varintAndFixed)), { name: long, namespace: undefined });
  });

  it('gives up on anything else: no magic, truncated, no metadata', () => {
    assert.equal(protobufMeta(Buffer.from('{"metadata":{}}')), undefined);
    const whole = envelope(bytesField(1, str(1, 'x')));
    assert.equal(protobufMeta(whole.subarray(0, whole.length - 45)), undefined);
    assert.equal(protobufMeta(Buffer.from('k8s\0', 'latin1')), undefined);
  });
});
