/** Multi-document YAML as the generators print it: stable, unfolded, with comments kept. */
import { Document } from 'yaml';

/** Never fold long strings (descriptions, jsonPaths): a diff of generated files stays readable. */
const TO_STRING = { lineWidth: 0, minContentWidth: 0 } as const;

export function yamlStream(docs: readonly (Document | Record<string, unknown>)[]): string {
  return docs
    .map((d) => {
      const doc = d instanceof Document ? d : new Document(d, { aliasDuplicateObjects: false });
      return doc.toString(TO_STRING);
    })
    .map((text, i) => (i === 0 ? text : `---\n${text}`))
    .join('');
}

/** A Document with a comment above it (the comment text without "#"s). */
export function withComment(value: Record<string, unknown>, comment: string): Document {
  const doc = new Document(value, { aliasDuplicateObjects: false });
  doc.commentBefore = comment;
  return doc;
}
