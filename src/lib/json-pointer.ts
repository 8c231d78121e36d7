/**
 * RFC 6901 JSON pointers (`/spec/template/spec/containers/0/image`), the way drift ignore rules
 * name fields (as Flux's do). Segments stay strings: `0` is an array index or a map key, decided
 * by the document it is applied to.
 */

export type PointerResult = { readonly ok: true; readonly segments: readonly string[] } | { readonly ok: false; readonly reason: string };

/** Parses `text`, or says why it is not a JSON pointer to a field (the whole document, "", is refused). */
export function parsePointer(text: string): PointerResult {
  if (text === '' || text === '/') return { ok: false, reason: `"${text}" points at the whole object; name a field, e.g. /spec/replicas` };
  if (!text.startsWith('/')) {
    const hint = text.includes('.') && !text.includes('/') ? `/${text.split('.').join('/')}` : `/${text}`;
    return { ok: false, reason: `"${text}" is not a JSON pointer: it must start with "/" (e.g. ${hint})` };
  }
  const segments: string[] = [];
  for (const raw of text.slice(1).split('/')) {
    if (/~(?![01])/u.test(raw)) {
      return { ok: false, reason: `"${text}" has a "~" not followed by 0 or 1; write ~0 for "~" and ~1 for "/" inside a key` };
    }
    segments.push(raw.replace(/~1/gu, '/').replace(/~0/gu, '~'));
  }
  return { ok: true, segments };
}

/** `["metadata", "annotations", "a/b"]` → `/metadata/annotations/a~1b`. */
export function formatPointer(segments: readonly (string | number)[]): string {
  return segments.map((s) => `/${String(s).replace(/~/gu, '~0').replace(/\//gu, '~1')}`).join('');
}

/** Whether `prefix` names `path` or a field it is inside of (numbers compare as their text). */
export function isWithin(path: readonly (string | number)[], prefix: readonly string[]): boolean {
  if (prefix.length > path.length) return false;
  return prefix.every((seg, i) => String(path[i]) === seg);
}
