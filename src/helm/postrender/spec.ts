/** The post-renderer's input contract, shared by the client (writer) and the script (reader). */
import type { PostRenderOwner, PostRenderSpec } from '../types.js';
import { isPlainObject } from '../../lib/json.js';

/** Fallback channel for the spec when no argument is given (e.g. a hand-run script). */
export const SPEC_ENV = 'CHARTPILOT_POSTRENDER_SPEC';

/** Why a render was refused, as the script writes it for the operator (helm drops its stderr). */
export interface RenderRefusal {
  readonly message: string;
  readonly unknownKinds: readonly string[];
}

export function serializeRefusal(r: RenderRefusal): string {
  return JSON.stringify(r);
}

/** The refusal file's content; plain text (an older script) is taken as the message. */
export function parseRefusalFile(text: string): RenderRefusal {
  try {
    const parsed: unknown = JSON.parse(text);
    if (isPlainObject(parsed) && typeof parsed['message'] === 'string') {
      const kinds = parsed['unknownKinds'];
      return { message: parsed['message'], unknownKinds: Array.isArray(kinds) ? kinds.filter((k): k is string => typeof k === 'string') : [] };
    }
  } catch {
    // not JSON: the message itself
  }
  return { message: text, unknownKinds: [] };
}

/** What the script receives: the spec plus where to explain a refusal (helm drops its stderr). */
export interface PostRenderInput extends PostRenderSpec {
  readonly errorFile?: string | undefined;
}

export function serializePostRenderSpec(spec: PostRenderSpec, errorFile?: string): string {
  return JSON.stringify({
    labels: spec.labels,
    annotations: spec.annotations,
    ...(spec.owner === undefined ? {} : { owner: spec.owner }),
    ...(errorFile === undefined ? {} : { errorFile }),
  });
}

/** Validates strictly: a malformed spec must fail the render, not produce unlabelled objects. */
export function parsePostRenderSpec(raw: string): PostRenderInput {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (err) {
    throw new Error('post-render spec is not valid JSON', { cause: err });
  }
  if (!isPlainObject(parsed)) {
    throw new Error('post-render spec must be a JSON object with "labels" and "annotations"');
  }
  const errorFile = parsed['errorFile'];
  if (errorFile !== undefined && typeof errorFile !== 'string') throw new Error('post-render spec: "errorFile" must be a string');
  return {
    labels: stringMap(parsed['labels'], 'labels'),
    annotations: stringMap(parsed['annotations'], 'annotations'),
    ...(parsed['owner'] === undefined ? {} : { owner: parseOwner(parsed['owner']) }),
    ...(errorFile === undefined ? {} : { errorFile }),
  };
}

function str(v: unknown, field: string): string {
  if (typeof v !== 'string' || v === '') throw new Error(`post-render spec: "${field}" must be a non-empty string`);
  return v;
}

function bool(v: unknown, field: string): boolean {
  if (typeof v !== 'boolean') throw new Error(`post-render spec: "${field}" must be a boolean`);
  return v;
}

function parseOwner(value: unknown): PostRenderOwner {
  if (!isPlainObject(value) || !isPlainObject(value['reference'])) throw new Error('post-render spec: "owner" must be an object with a "reference"');
  const ref = value['reference'];
  const kinds = stringList(value['clusterScopedKinds'], 'owner.clusterScopedKinds');
  const namespaced = stringList(value['namespacedKinds'], 'owner.namespacedKinds');
  return {
    reference: {
      apiVersion: str(ref['apiVersion'], 'owner.reference.apiVersion'),
      kind: str(ref['kind'], 'owner.reference.kind'),
      name: str(ref['name'], 'owner.reference.name'),
      uid: str(ref['uid'], 'owner.reference.uid'),
    },
    namespace: str(value['namespace'], 'owner.namespace'),
    clusterScopedKinds: kinds,
    namespacedKinds: namespaced,
    nonOwnedAnnotations: stringMap(value['nonOwnedAnnotations'], 'owner.nonOwnedAnnotations'),
    allowClusterScoped: bool(value['allowClusterScoped'], 'owner.allowClusterScoped'),
    allowCrossNamespace: bool(value['allowCrossNamespace'], 'owner.allowCrossNamespace'),
  };
}

function stringList(value: unknown, field: string): string[] {
  if (!Array.isArray(value) || !value.every((k) => typeof k === 'string')) throw new Error(`post-render spec: "${field}" must be a list of strings`);
  return value;
}

function stringMap(value: unknown, field: string): Record<string, string> {
  if (value === undefined) return {};
  if (!isPlainObject(value)) {
    throw new Error(`post-render spec: "${field}" must be an object of strings`);
  }
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(value)) {
    if (typeof v !== 'string') throw new Error(`post-render spec: ${field}["${k}"] must be a string`);
    out[k] = v;
  }
  return out;
}
