/**
 * Request bodies of writes, read as the API server will read them and sent on as the JSON we
 * read: what the proxy checked (namespace, name) and stamped (owner) is then exactly what the
 * server gets, whatever YAML forms the text used. The python kubernetes client sends JSON;
 * server-side apply (`application/apply-patch+yaml`) may carry YAML, read as YAML 1.1 as the
 * API server's decoder (go-yaml v2 through sigs.k8s.io/yaml) reads it.
 */
import { parse as parseYaml } from 'yaml';

export type BodyFormat = 'json' | 'json-patch' | 'merge-patch' | 'strategic-merge-patch' | 'apply' | 'yaml';

/** The body format of a content type; undefined for one the proxy does not read (protobuf, …). */
export function bodyFormat(contentType: string | undefined): BodyFormat | undefined {
  const mediaType = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  switch (mediaType) {
    case 'application/json':
      return 'json';
    case 'application/json-patch+json':
      return 'json-patch';
    case 'application/merge-patch+json':
      return 'merge-patch';
    case 'application/strategic-merge-patch+json':
      return 'strategic-merge-patch';
    case 'application/apply-patch+yaml':
      return 'apply';
    case 'application/yaml':
      return 'yaml';
    default:
      return undefined;
  }
}

/** What the body is sent as once re-serialized (YAML is sent as JSON, which every YAML reader reads alike). */
export function sentContentType(format: BodyFormat): string {
  switch (format) {
    case 'json':
    case 'yaml':
      return 'application/json';
    case 'json-patch':
      return 'application/json-patch+json';
    case 'merge-patch':
      return 'application/merge-patch+json';
    case 'strategic-merge-patch':
      return 'application/strategic-merge-patch+json';
    case 'apply':
      return 'application/apply-patch+yaml';
  }
}

export class BodyError extends Error {
  override readonly name = 'BodyError';
}

/** Parses `raw` in `format`; throws BodyError with a message for the role's author. */
export function parseBody(raw: Buffer, format: BodyFormat): unknown {
  const text = raw.toString('utf8');
  if (format === 'apply' || format === 'yaml') {
    // JSON first (helm and client-go send their server-side applies as JSON): the YAML parser costs
    // a few milliseconds a body. Either way the body is sent on as what was read, so a duplicate
    // key JSON.parse resolves (last wins) reaches the server resolved, not as written.
    if (/^\s*\{/u.test(text)) {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        // YAML's flow syntax, not JSON: read it as YAML below.
      }
    }
    try {
      // uniqueKeys: a duplicate key is refused, not resolved one way here and another there.
      return parseYaml(text, { version: '1.1', uniqueKeys: true, merge: true, maxAliasCount: 1000 }) as unknown;
    } catch (err) {
      throw new BodyError(`the request body is not valid YAML: ${err instanceof Error ? err.message.split('\n')[0] ?? '' : String(err)}`);
    }
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new BodyError('the request body is not valid JSON');
  }
}
