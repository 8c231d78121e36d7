/**
 * The transformation our post-renderer applies: add labels/annotations to the metadata of every
 * object in a multi-document manifest (each item of a `*List` kind instead of the list itself).
 *
 * Pure so it can be unit-tested without spawning helm; `main.ts` wraps it in stdin/stdout.
 */
import { isMap, isSeq, parseAllDocuments, type Document } from 'yaml';

import type { PostRenderSpec } from '../types.js';

/**
 * Parse as YAML 1.1 because helm decodes manifests with sigs.k8s.io/yaml (go-yaml, YAML 1.1):
 * with 1.2 rules `0755` would be re-emitted as `755` and `on`/`yes` would stay unquoted where we
 * insert them, silently changing what the API server receives. Big integers stay exact.
 */
const PARSE_OPTIONS = { version: '1.1', intAsBigInt: true, keepSourceTokens: false } as const;

export class PostRenderInputError extends Error {
  override readonly name = 'PostRenderInputError';
}

export function injectMetadata(manifest: string, spec: PostRenderSpec): string {
  const docs = parseAllDocuments(manifest, PARSE_OPTIONS);
  if (!Array.isArray(docs)) {
    // parseAllDocuments returns an EmptyStream (not an array) for input with no documents.
    return manifest;
  }
  const out: string[] = [];
  for (const doc of docs) {
    const firstError = doc.errors[0];
    if (firstError !== undefined) {
      throw new PostRenderInputError(`manifest is not valid YAML: ${firstError.message}`);
    }
    if (isMap(doc.contents)) {
      const kind = doc.get('kind');
      const items = doc.get('items');
      if (typeof kind === 'string' && kind.endsWith('List') && isSeq(items)) {
        items.items.forEach((_item, i) => {
          if (isMap(doc.getIn(['items', i]))) injectInto(doc, ['items', i], spec);
        });
      } else {
        injectInto(doc, [], spec);
      }
    }
    const text = doc.toString({ lineWidth: 0 });
    // Every document after the first needs its own separator; helm's input always starts
    // with one, so emit it uniformly rather than relying on what the parser remembered.
    out.push(text.startsWith('---') ? text : `---\n${text}`);
  }
  return out.join('');
}

function injectInto(doc: Document, prefix: readonly (string | number)[], spec: PostRenderSpec): void {
  setAll(doc, [...prefix, 'metadata', 'labels'], spec.labels);
  setAll(doc, [...prefix, 'metadata', 'annotations'], spec.annotations);
}

function setAll(doc: Document, path: readonly (string | number)[], entries: Readonly<Record<string, string>>): void {
  const keys = Object.keys(entries);
  if (keys.length === 0) return;
  // `labels:` with no value parses as null; replace anything that is not a map with one.
  const parentPath = path.slice(0, -1);
  if (!isMap(doc.getIn(parentPath))) doc.setIn(parentPath, doc.createNode({}));
  if (!isMap(doc.getIn(path))) doc.setIn(path, doc.createNode({}));
  for (const key of keys) {
    const node = doc.createNode(entries[key]);
    // Always double-quote: label values like "true" or "on" must stay strings for go-yaml.
    node.type = 'QUOTE_DOUBLE';
    doc.setIn([...path, key], node);
  }
}
