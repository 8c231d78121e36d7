/**
 * The post-renderer's output: one JSON document per object, `---`-separated. JSON is YAML that
 * every parser on helm's path (kyaml's go-yaml v3, then sigs.k8s.io/yaml's go-yaml v2) reads the
 * same way: every key and string double-quoted, no tags, anchors, merge keys or implicit typing,
 * so what the API server receives is exactly what the post-renderer checked.
 */
import { quote } from './json-text.js';
import type { JsonObject, JsonValue } from './resolve.js';

/**
 * What a chart that renders no objects post-renders to: helm's plugin post-renderer refuses an
 * output that is only whitespace ("produced empty output"), while helm without one installs
 * such a chart; a comment is no document to any YAML reader, so helm stores an empty manifest.
 */
export const NO_OBJECTS = '# chartpilot: the chart rendered no objects\n';

export function emitManifest(objects: readonly JsonObject[]): string {
  if (objects.length === 0) return NO_OBJECTS;
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
