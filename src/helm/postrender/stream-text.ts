/**
 * What helm decides on a manifest's raw text before, or apart from, a YAML parser: where its
 * document splitters cut the stream (kyaml's in splitAndDeannotate, apimachinery's YAMLReader in
 * the kube client: both cut at every line that starts with `---`, and both hand each piece to
 * a decoder that reads one document of it), and which characters go-yaml's reader refuses or
 * takes for line breaks. The `yaml` package reads each of these otherwise, so the post-renderer
 * refuses them (test/unit/helm/yaml-readers.test.ts holds each to helm's readers).
 */

export interface TextProblem {
  /** Offset in the manifest where the problem starts. */
  readonly offset: number;
  readonly what: string;
}

/** A bare document separator, as both splitters require: `---`, then at most blanks and a comment. */
const SEPARATOR = /^---(?:[ \t]+(?:#.*)?)?$/;
/** A document end marker (go-yaml: `...` then a blank or the line's end). */
const DOCUMENT_END = /^\.\.\.(?:[ \t].*)?$/;
/** Nothing a document could be made of: blanks, or a comment. */
const NOTHING = /^[ \t]*(?:#.*)?$/;

/**
 * go-yaml's reader allows tab, LF, CR, printable ASCII, NEL, U+00A0–U+D7FF, U+E000–U+FFFD and the
 * astral planes; anything else is "control characters are not allowed". NEL, LS and PS it reads
 * as line breaks (YAML 1.1), the `yaml` package as text; a CR not before a LF is a line break to
 * go-yaml and to the `yaml` package, but not to either splitter.
 */
const UNREADABLE: readonly [RegExp, string][] = [
  [/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u0084\u0086-\u009f\ufffe\uffff]/, 'holds a control character, which go-yaml refuses ("control characters are not allowed")'],
  [/[\u0085\u2028\u2029]/, 'holds a next-line, line-separator or paragraph-separator character, which go-yaml reads as a line break (YAML 1.1) and the post-renderer would not: write it as an escape (\\N, \\L, \\P) in a double-quoted string'],
  [/\r(?!\n)/, "holds a carriage return that does not end a line with a line feed, which helm's document splitters do not take for a line break"],
  [/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/, 'holds an unpaired UTF-16 surrogate, which is no Unicode text'],
];

export function textProblem(manifest: string): TextProblem | undefined {
  for (const [pattern, what] of UNREADABLE) {
    const m = pattern.exec(manifest);
    if (m !== null) return { offset: m.index, what };
  }
  let offset = 0;
  let chunkStart = 0; // where the text between two separators starts
  let content = false; // whether that text has had a line of content yet
  let ended: number | undefined; // offset of a `...` not yet followed by a separator
  for (const raw of manifest.split('\n')) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line.startsWith('---')) {
      if (!SEPARATOR.test(line)) {
        return { offset, what: "has a line that starts with --- but is not a bare document separator (---, blanks, a comment): helm's document splitters cut the stream there and refuse the rest of the line" };
      }
      const trimmed = trimProblem(manifest, chunkStart, offset);
      if (trimmed !== undefined) return trimmed;
      [chunkStart, content, ended] = [offset + raw.length + 1, false, undefined];
    } else if (line.startsWith('%')) {
      return { offset, what: "has a YAML directive (a line starting with %): helm's document splitters part it from the document it belongs to" };
    } else if (DOCUMENT_END.test(line)) {
      if (!content) return { offset, what: 'has a document end marker (...) with no document before it, which go-yaml refuses' };
      ended ??= offset;
    } else if (!NOTHING.test(line)) {
      if (ended !== undefined) return { offset: ended, what: "goes on after a document end marker (...) without a --- separator: helm's decoders read one document between separators and would drop the rest" };
      content = true;
    }
    offset += raw.length + 1;
  }
  return trimProblem(manifest, chunkStart, manifest.length);
}

/**
 * helm's SortManifests trims every document with strings.TrimSpace, which also takes Unicode
 * spaces (U+00A0, U+2000–U+200A, …) off its ends: a value ending a document with one loses it.
 */
const UNICODE_SPACE = /[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]/;

function trimProblem(manifest: string, start: number, end: number): TextProblem | undefined {
  const chunk = manifest.slice(start, end);
  const body = chunk.replace(/^[ \t\r\n]+/, '');
  const first = body[0];
  const last = body.replace(/[ \t\r\n]+$/, '').at(-1);
  if ((first !== undefined && UNICODE_SPACE.test(first)) || (last !== undefined && UNICODE_SPACE.test(last))) {
    return { offset: start, what: 'starts or ends with a Unicode space (such as U+00A0), which helm trims off the document (strings.TrimSpace): quote the value' };
  }
  return undefined;
}

/** How many pieces kyaml's splitDocuments cuts the stream into (its regexp, after CRLF → LF). */
export function kyamlPieces(manifest: string): number {
  return 1 + (manifest.replaceAll('\r\n', '\n').match(/\n---.*\n/g)?.length ?? 0);
}

/** 1-based line of `offset` in `text`. */
export function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) line++;
  return line;
}
