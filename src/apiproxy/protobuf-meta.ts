/**
 * The name and namespace in a protobuf-encoded write body (what kubectl's typed commands, such as
 * `kubectl create configmap`, send for built-in kinds), so a refusal can name the object and a
 * body namespace differing from the URL's is caught as for JSON. Only read, never rewritten: the
 * proxy stamps such objects after the write. Kubernetes' envelope: the magic `k8s\0`, then a
 * `runtime.Unknown` whose field 2 holds the object, whose field 1 is its ObjectMeta (name 1,
 * namespace 3). Pure; undefined for anything it cannot read.
 */

const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

export interface ProtobufMeta {
  readonly name: string | undefined;
  readonly namespace: string | undefined;
}

export function protobufMeta(body: Buffer): ProtobufMeta | undefined {
  if (body.length < MAGIC.length || !body.subarray(0, MAGIC.length).equals(MAGIC)) return undefined;
  const object = field(body.subarray(MAGIC.length), 2);
  const meta = object === undefined ? undefined : field(object, 1);
  if (meta === undefined) return undefined;
  const text = (n: number): string | undefined => {
    const v = field(meta, n);
    return v === undefined ? undefined : v.toString('utf8');
  };
  return { name: text(1), namespace: text(3) };
}

/** The first length-delimited field `wanted` of message `buf`; undefined when absent or malformed. */
function field(buf: Buffer, wanted: number): Buffer | undefined {
  let at = 0;
  while (at < buf.length) {
    const key = varint(buf, at);
    if (key === undefined) return undefined;
    at = key.next;
    const num = Math.floor(key.value / 8);
    const wire = key.value % 8;
    if (wire === 0) {
      const v = varint(buf, at);
      if (v === undefined) return undefined;
      at = v.next;
    } else if (wire === 1) {
      at += 8;
    } else if (wire === 5) {
      at += 4;
    } else if (wire === 2) {
      const len = varint(buf, at);
      if (len === undefined || len.next + len.value > buf.length) return undefined;
      if (num === wanted) return buf.subarray(len.next, len.next + len.value);
      at = len.next + len.value;
    } else {
      return undefined; // groups (3, 4) are not used by Kubernetes
    }
  }
  return undefined;
}

function varint(buf: Buffer, start: number): { value: number; next: number } | undefined {
  let value = 0;
  let factor = 1;
  for (let at = start; at < buf.length && at < start + 8; at++) {
    const byte = buf[at] ?? 0;
    value += (byte & 0x7f) * factor;
    if ((byte & 0x80) === 0) return { value, next: at + 1 };
    factor *= 128;
  }
  return undefined;
}
