/**
 * The post-renderer's output: one JSON document per object, `---`-separated. JSON is YAML that
 * every parser on helm's path (kyaml's go-yaml v3, then sigs.k8s.io/yaml's go-yaml v2) reads the
 * same way: every key and string double-quoted, no tags, anchors, merge keys or implicit typing,
 * so what the API server receives is exactly what the post-renderer checked.
 */
import { quote } from './json-text.js';
import type { JsonObject, JsonValue } from './resolve.js';

export function emitManifest(objects: readonly JsonObject[]): string {
  return objects.map((o) => `---\n${toJson(o)}\n`).join('');
}

/** JSON, with bigints as exact integer literals; depth is bounded by the resolver. */
function toJson(value: JsonValue): string {
  if (typeof value === 'bigint') return value.toString();
  if (Array.isArray(value)) return `[${value.map(toJson).join(', ')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.keys(value).map((k) => `${quote(k)}: ${toJson(value[k] as JsonValue)}`).join(', ')}}`;
  }
  if (typeof value === 'string') return quote(value);
  if (typeof value === 'number' && !Number.isFinite(value)) throw new Error('a manifest value cannot be infinite or NaN');
  return JSON.stringify(value);
}
