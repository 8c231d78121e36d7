/** The post-renderer's input contract, shared by the client (writer) and the script (reader). */
import type { PostRenderSpec } from '../types.js';

/** Fallback channel for the spec when no argument is given (e.g. a hand-run script). */
export const SPEC_ENV = 'CHARTPILOT_POSTRENDER_SPEC';

export function serializePostRenderSpec(spec: PostRenderSpec): string {
  return JSON.stringify({ labels: spec.labels, annotations: spec.annotations });
}

/** Validates strictly: a malformed spec must fail the render, not produce unlabelled objects. */
export function parsePostRenderSpec(raw: string): PostRenderSpec {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (err) {
    throw new Error('post-render spec is not valid JSON', { cause: err });
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new Error('post-render spec must be a JSON object with "labels" and "annotations"');
  }
  const obj = parsed as Record<string, unknown>;
  return { labels: stringMap(obj['labels'], 'labels'), annotations: stringMap(obj['annotations'], 'annotations') };
}

function stringMap(value: unknown, field: string): Record<string, string> {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error(`post-render spec: "${field}" must be an object of strings`);
  }
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(value)) {
    if (typeof v !== 'string') throw new Error(`post-render spec: ${field}["${k}"] must be a string`);
    out[k] = v;
  }
  return out;
}
