/**
 * Keeping a CR's values out of messages: every string leaf of the values is replaced, in the
 * spellings a template or task may have turned it into, by `<redacted>`. Shared by helm's errors
 * and Ansible's failed tasks, whose messages both end up in status conditions and Events.
 */

/** Strings shorter than this are not redacted: they carry little secret and match everywhere. */
const MIN_REDACT_LENGTH = 4;
export const REDACTED = '<redacted>';

/**
 * How a value may show up in a message once a chart or a role has transformed it: as it is,
 * quoted Go/JSON-style (helm prints templates inside `tpl` that way), upper or lower case
 * (`upper`, `lower`), base64 in both alphabets with and without padding, also of the value with a
 * trailing newline (`b64enc`, `toYaml | b64enc`), and hex (`printf "%x"`). Hashes (`sha256sum`)
 * are not secrets. A value mixed with other text before encoding is not caught: see docs/security/threat-model.md.
 */
export function spellingsOf(secret: string): string[] {
  const quoted = JSON.stringify(secret).slice(1, -1);
  const out = [secret, quoted, secret.toUpperCase(), secret.toLowerCase(), quoted.toUpperCase(), quoted.toLowerCase()];
  for (const raw of [secret, `${secret}\n`]) {
    const bytes = Buffer.from(raw, 'utf8');
    const std = bytes.toString('base64');
    const url = bytes.toString('base64url');
    out.push(std, std.replace(/=+$/u, ''), url, `${url}${'='.repeat((4 - (url.length % 4)) % 4)}`);
    const hex = bytes.toString('hex');
    out.push(hex, hex.toUpperCase());
  }
  return out;
}

/** `message` with every spelling of every secret (of at least 4 characters) replaced by `<redacted>`. */
export function redactSecrets(message: string, secrets: readonly string[]): string {
  // Longest first, so a secret containing another is replaced whole.
  const spellings = new Set<string>();
  for (const s of secrets) if (s.length >= MIN_REDACT_LENGTH) for (const spelling of spellingsOf(s)) spellings.add(spelling);
  const sorted = [...spellings].filter((s) => s.length >= MIN_REDACT_LENGTH).sort((a, b) => b.length - a.length);
  let out = message;
  for (const s of sorted) out = out.split(s).join(REDACTED);
  return out;
}

/** Every string leaf of a values tree (the strings to keep out of messages). */
export function stringLeaves(value: unknown): string[] {
  // Iterative: values of any depth must not exhaust the stack here.
  const out: string[] = [];
  const stack: unknown[] = [value];
  for (let v = stack.pop(); stack.length > 0 || v !== undefined; v = stack.pop()) {
    if (typeof v === 'string') out.push(v);
    else if (Array.isArray(v)) for (let i = v.length - 1; i >= 0; i--) stack.push(v[i]);
    else if (typeof v === 'object' && v !== null) {
      const children = Object.values(v);
      for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]);
    }
  }
  return out;
}
