/**
 * Reading a protobuf-encoded Secret (client-go's typed clients, helm's release storage) strictly:
 * the fields a Secret write carries become its JSON; anything else makes it unreadable, so the
 * proxy refuses instead of guessing. The bodies are encoded here field by field as gogo-protobuf
 * encodes k8s.io/api/core/v1.Secret (empty strings and zero Times included, as it writes them);
 * that helm's own bodies read the same is test/integration/records.test.ts's.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeProtobufSecret } from '../../../src/apiproxy/protobuf-secret.js';

function varint(n: number): Buffer {
  const out: number[] = [];
  let v = n;
  while (v >= 0x80) {
    out.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return Buffer.from(out);
}

const bytesField = (num: number, b: Buffer | string): Buffer => {
  const body = typeof b === 'string' ? Buffer.from(b, 'utf8') : b;
  return Buffer.concat([varint(num * 8 + 2), varint(body.length), body]);
};
const varintField = (num: number, v: number): Buffer => Buffer.concat([varint(num * 8), varint(v)]);
const entry = (num: number, key: string, value: Buffer | string): Buffer => bytesField(num, Buffer.concat([bytesField(1, key), bytesField(2, value)]));

interface Parts {
  readonly meta?: Buffer[];
  readonly secret?: Buffer[];
  readonly kind?: string;
}

/** `k8s\0` + runtime.Unknown{typeMeta, raw: Secret{metadata, data, type}}. */
function encode(p: Parts = {}): Buffer {
  const meta = Buffer.concat(
    p.meta ?? [
      bytesField(1, 'sh.helm.release.v1.web.v1'),
      bytesField(2, ''),
      bytesField(3, ''),
      bytesField(4, ''),
      bytesField(5, ''),
      bytesField(6, ''),
      varintField(7, 0),
      bytesField(8, Buffer.alloc(0)), // a zero creationTimestamp
      entry(11, 'owner', 'helm'),
      entry(11, 'version', '1'),
    ],
  );
  const secret = Buffer.concat([bytesField(1, meta), ...(p.secret ?? [entry(2, 'release', Buffer.from([0, 1, 2, 255])), bytesField(3, 'helm.sh/release.v1')])]);
  const typeMeta = Buffer.concat([bytesField(1, 'v1'), bytesField(2, p.kind ?? 'Secret')]);
  return Buffer.concat([Buffer.from('k8s\0', 'latin1'), bytesField(1, typeMeta), bytesField(2, secret), bytesField(3, ''), bytesField(4, '')]);
}

describe('API proxy: protobuf Secrets', () => {
  it('reads a Secret write into the JSON it stands for', () => {
    assert.deepEqual(decodeProtobufSecret(encode()), {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'sh.helm.release.v1.web.v1', labels: { owner: 'helm', version: '1' } },
      data: { release: Buffer.from([0, 1, 2, 255]).toString('base64') },
      type: 'helm.sh/release.v1',
    });
    const annotated = encode({ meta: [bytesField(1, 'x'), bytesField(3, 'team-a'), entry(12, 'a', 'b')], secret: [varintField(5, 1)] });
    assert.deepEqual(decodeProtobufSecret(annotated), { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'x', namespace: 'team-a', annotations: { a: 'b' } }, immutable: true });
  });

  it('refuses what it does not read whole: other kinds, stringData, ownerReferences, finalizers, a resourceVersion, unknown fields, broken bytes', () => {
    const refused: [string, Buffer][] = [
      ['a ConfigMap', encode({ kind: 'ConfigMap' })],
      ['stringData', encode({ secret: [entry(4, 'release', 'x')] })],
      ['an ownerReference', encode({ meta: [bytesField(1, 'x'), bytesField(13, bytesField(1, 'v1'))] })],
      ['a finalizer', encode({ meta: [bytesField(1, 'x'), bytesField(14, 'keep')] })],
      ['a resourceVersion', encode({ meta: [bytesField(1, 'x'), bytesField(6, '42')] })],
      ['a generation', encode({ meta: [bytesField(1, 'x'), varintField(7, 3)] })],
      ['a creationTimestamp', encode({ meta: [bytesField(1, 'x'), bytesField(8, varintField(1, 1_700_000_000))] })],
      ['a field this reader does not know', encode({ secret: [bytesField(9, 'x')] })],
      ['a fixed64 field', encode({ secret: [Buffer.from([0x31, 0, 0, 0, 0, 0, 0, 0, 0])] })],
      ['a length past the end', Buffer.concat([Buffer.from('k8s\0', 'latin1'), Buffer.from([0x12, 0x7f, 0x01])])],
      ['no magic', encode().subarray(4)],
      ['JSON', Buffer.from('{"kind":"Secret"}')],
    ];
    for (const [what, body] of refused) assert.equal(decodeProtobufSecret(body), undefined, what);
  });
});
