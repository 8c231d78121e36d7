/**
 * Objects from chartpilot's resolver and from helm's Go readers, brought to one canonical text
 * each, so that two readings compare as the API server tells them apart: key order is irrelevant,
 * and a number is the value the API server takes from its JSON text — an integer literal within
 * int64 exactly, anything else as the nearest double (sigs.k8s.io/json's rule). chartpilot's
 * numbers count as the text its emitter writes (a bigint's digits, a double's shortest form), the
 * Go program's as the text it wrote; so 9223372036854775808 (a bigint) and Go's
 * 9223372036854776000 (a float64) are the same double, while 9007199254740993 and
 * 9007199254740992 stay two integers.
 */
import { GoNumber } from './go-readers.js';

/** Canonical JSON text of a value: keys sorted, every number in one exact spelling. */
export function canonical(value: unknown): string {
  if (value === null) return 'null';
  if (value instanceof GoNumber) return serverNumber(value.source);
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'string':
      return JSON.stringify(value);
    case 'bigint':
      return serverNumber(value.toString());
    case 'number':
      return serverNumber(JSON.stringify(value));
    case 'object':
      if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
      return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`).join(',')}}`;
    default:
      throw new Error(`not a JSON value: ${typeof value}`);
  }
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** The number the API server reads from a JSON number's text, in one exact decimal spelling. */
function serverNumber(text: string): string {
  if (/^-?[0-9]+$/.test(text)) {
    const n = BigInt(text);
    if (n >= INT64_MIN && n <= INT64_MAX) return n.toString();
  }
  const v = Number(text);
  if (!Number.isFinite(v)) throw new Error(`not a finite number: ${text}`);
  return Number.isInteger(v) ? BigInt(v).toString() : String(v);
}

/**
 * kio's writer drops a metadata.annotations, then a metadata, that is empty (it added annotations
 * to every node and removes them again), and `metadata: null` reads as no metadata: the API server
 * stores the same object either way, so these count as absent on every side.
 */
export function withoutEmptyMetadata(object: unknown): unknown {
  if (typeof object !== 'object' || object === null || Array.isArray(object) || object instanceof GoNumber) return object;
  const o = { ...(object as Record<string, unknown>) };
  const metadata = o['metadata'];
  if (metadata === null) {
    delete o['metadata'];
    return o;
  }
  if (typeof metadata !== 'object' || Array.isArray(metadata) || metadata instanceof GoNumber) return o;
  const m = { ...(metadata as Record<string, unknown>) };
  if (m['annotations'] === null || isEmptyObject(m['annotations'])) delete m['annotations'];
  if (Object.keys(m).length === 0) delete o['metadata'];
  else o['metadata'] = m;
  return o;
}

function isEmptyObject(v: unknown): boolean {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof GoNumber) && Object.keys(v).length === 0;
}

/** The canonical texts of a reading's objects; sorted when the reader reorders them (helm's install order). */
export function canonicalObjects(objects: readonly unknown[], ordered: boolean): string[] {
  const texts = objects.map((o) => canonical(withoutEmptyMetadata(o)));
  return ordered ? texts : texts.sort();
}
