/**
 * The objects of a release record's manifest text, as the post-renderer resolves them (so a
 * record is judged on exactly the objects helm and the API server would see).
 */
import { isPlainObject } from '../lib/json.js';
import { parseAllDocuments } from 'yaml';

/** TEMPORARY until the post-renderer's resolver lands on main: YAML 1.1, `items` flattened. */
export function manifestObjects(text: string): Record<string, unknown>[] {
  const docs = parseAllDocuments(text, { version: '1.1', intAsBigInt: true });
  if (!Array.isArray(docs)) return [];
  const out: Record<string, unknown>[] = [];
  const add = (value: unknown): void => {
    if (value === null || value === undefined) return;
    if (!isPlainObject(value)) throw new Error('a manifest document is not an object');
    if (Array.isArray(value.items)) for (const item of value.items) add(item);
    else out.push(value);
  };
  for (const doc of docs) {
    if (doc.errors.length > 0) throw new Error('a manifest document is not valid YAML');
    add(doc.toJS({ maxAliasCount: 100 }));
  }
  return out;
}
