/**
 * A string as the post-renderer writes it: JSON, with the few characters YAML 1.1 does not allow
 * unescaped (C1 controls, DEL) or reads as line breaks inside a double-quoted scalar (NEL, LS, PS)
 * or as a byte-order mark escaped too — JSON.stringify leaves those as they are. Shared by the
 * emitter and by the resolver, which refuses keys too long for go-yaml to read back in this form.
 */
const YAML_UNSAFE = /[\u007f-\u009f\u2028\u2029\ufeff\ufffe\uffff]/g;

export function quote(s: string): string {
  return JSON.stringify(s).replace(YAML_UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * go-yaml (v2 and v3, after libyaml) gives up on a key that does not end within 1024 characters
 * of where it starts ("could not find expected ':'"), quoted or not, and so would helm on ours.
 */
export const MAX_EMITTED_KEY_CHARS = 1024;

/** Characters (code points, as go-yaml counts them) of `key` as the emitter writes it. */
export function emittedKeyLength(key: string): number {
  let n = 0;
  for (const _ of quote(key)) n++;
  return n;
}
