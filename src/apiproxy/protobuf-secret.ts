/**
 * A v1 Secret in Kubernetes' protobuf envelope, read strictly into the JSON object it stands for:
 * what client-go's typed clients send (helm's release storage among them, since client-go 0.35
 * prefers protobuf for built-in kinds). The proxy checks that JSON and sends it on as JSON, so
 * what it checked is exactly what the API server receives.
 *
 * Strict: only the fields a Secret write can carry (ObjectMeta's name, namespace, labels and
 * annotations; data, type, immutable) are read; any other field holding a value — an
 * ownerReference, a finalizer, stringData, a resourceVersion, a field this reader does not know —
 * makes it undefined, and the proxy then refuses the write rather than guess. Pure.
 */
import type { PlainMap } from '../lib/json.js';

const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

type Field = { readonly num: number; readonly wire: 0; readonly value: bigint } | { readonly num: number; readonly wire: 2; readonly bytes: Buffer };

/** `body` as a Secret object (apiVersion v1, kind Secret); undefined when it is anything else. */
export function decodeProtobufSecret(body: Buffer): PlainMap | undefined {
  if (body.length < MAGIC.length || !body.subarray(0, MAGIC.length).equals(MAGIC)) return undefined;
  const envelope = fields(body.subarray(MAGIC.length));
  if (envelope === undefined) return undefined;
  let typeMeta: Buffer | undefined;
  let raw: Buffer | undefined;
  for (const f of envelope) {
    if (f.wire !== 2) return undefined;
    if (f.num === 1) typeMeta = f.bytes;
    else if (f.num === 2) raw = f.bytes;
    else if (f.bytes.length > 0) return undefined; // contentEncoding/contentType: none for a plain object
  }
  if (typeMeta === undefined || raw === undefined) return undefined;
  const type = strings(typeMeta, { 1: 'apiVersion', 2: 'kind' });
  if (type === undefined || type['apiVersion'] !== 'v1' || type['kind'] !== 'Secret') return undefined;
  return secretOf(raw);
}

function secretOf(raw: Buffer): PlainMap | undefined {
  const list = fields(raw);
  if (list === undefined) return undefined;
  const secret: PlainMap = { apiVersion: 'v1', kind: 'Secret' };
  const data: Record<string, string> = {};
  let hasData = false;
  for (const f of list) {
    if (f.num === 1 && f.wire === 2) {
      const meta = metadataOf(f.bytes);
      if (meta === undefined) return undefined;
      secret['metadata'] = meta;
    } else if (f.num === 2 && f.wire === 2) {
      const entry = mapEntry(f.bytes);
      if (entry === undefined) return undefined;
      data[entry.key] = entry.value.toString('base64');
      hasData = true;
    } else if (f.num === 3 && f.wire === 2) {
      secret['type'] = f.bytes.toString('utf8');
    } else if (f.num === 5 && f.wire === 0) {
      if (f.value !== 0n) secret['immutable'] = true;
    } else if (!isEmpty(f)) {
      return undefined; // stringData (4) or anything unknown
    }
  }
  if (hasData) secret['data'] = data;
  return secret;
}

const META_STRINGS: Readonly<Record<number, string>> = { 1: 'name', 3: 'namespace' };
/** generateName, selfLink, uid, resourceVersion, generation, creationTimestamp: empty in a write the proxy checks. */
const META_EMPTY = new Set([2, 4, 5, 6, 7, 8]);

function metadataOf(bytes: Buffer): PlainMap | undefined {
  const list = fields(bytes);
  if (list === undefined) return undefined;
  const meta: PlainMap = {};
  const maps = new Map<number, Record<string, string>>();
  for (const f of list) {
    const stringKey = META_STRINGS[f.num];
    if (stringKey !== undefined && f.wire === 2) {
      if (f.bytes.length > 0) meta[stringKey] = f.bytes.toString('utf8');
    } else if ((f.num === 11 || f.num === 12) && f.wire === 2) {
      const entry = mapEntry(f.bytes);
      if (entry === undefined) return undefined;
      const map = maps.get(f.num) ?? {};
      map[entry.key] = entry.value.toString('utf8');
      maps.set(f.num, map);
    } else if (!(META_EMPTY.has(f.num) && isEmpty(f))) {
      return undefined;
    }
  }
  const labels = maps.get(11);
  const annotations = maps.get(12);
  if (labels !== undefined) meta['labels'] = labels;
  if (annotations !== undefined) meta['annotations'] = annotations;
  return meta;
}

/** A field with nothing in it: 0, empty bytes, or a message whose every field is empty (a zero Time). */
function isEmpty(f: Field): boolean {
  if (f.wire === 0) return f.value === 0n;
  if (f.bytes.length === 0) return true;
  const inner = fields(f.bytes);
  return inner !== undefined && inner.every(isEmpty);
}

/** A map entry message: key (1, text), value (2, bytes). */
function mapEntry(bytes: Buffer): { key: string; value: Buffer } | undefined {
  const list = fields(bytes);
  if (list === undefined) return undefined;
  let key = '';
  let value: Buffer = Buffer.alloc(0);
  for (const f of list) {
    if (f.wire !== 2 || (f.num !== 1 && f.num !== 2)) return undefined;
    if (f.num === 1) key = f.bytes.toString('utf8');
    else value = f.bytes;
  }
  return { key, value };
}

function strings(bytes: Buffer, names: Readonly<Record<number, string>>): Record<string, string> | undefined {
  const list = fields(bytes);
  if (list === undefined) return undefined;
  const out: Record<string, string> = {};
  for (const f of list) {
    const name = names[f.num];
    if (name === undefined || f.wire !== 2) return undefined;
    out[name] = f.bytes.toString('utf8');
  }
  return out;
}

/** Every field of a message (varint and length-delimited only, as Kubernetes uses); undefined when malformed. */
function fields(buf: Buffer): Field[] | undefined {
  const out: Field[] = [];
  let at = 0;
  while (at < buf.length) {
    const key = varint(buf, at);
    if (key === undefined) return undefined;
    at = key.next;
    const num = Number(key.value >> 3n);
    const wire = Number(key.value & 7n);
    if (num === 0) return undefined;
    if (wire === 0) {
      const v = varint(buf, at);
      if (v === undefined) return undefined;
      out.push({ num, wire: 0, value: v.value });
      at = v.next;
    } else if (wire === 2) {
      const len = varint(buf, at);
      if (len === undefined) return undefined;
      const end = len.next + Number(len.value);
      if (len.value > BigInt(buf.length) || end > buf.length) return undefined;
      out.push({ num, wire: 2, bytes: buf.subarray(len.next, end) });
      at = end;
    } else {
      return undefined; // fixed64/32 and groups: no Secret field uses them
    }
  }
  return out;
}

function varint(buf: Buffer, start: number): { value: bigint; next: number } | undefined {
  let value = 0n;
  let shift = 0n;
  for (let at = start; at < buf.length && at < start + 10; at++) {
    const byte = buf[at] ?? 0;
    value |= BigInt(byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return { value, next: at + 1 };
    shift += 7n;
  }
  return undefined;
}
