/**
 * Scalars, escapes and names that helm reads otherwise than the `yaml` package the post-renderer
 * reads with: go-yaml v2 (sigs.k8s.io/yaml, in the kube client that builds the objects) on the
 * text itself, or on what kyaml (go-yaml v3, in splitAndDeannotate) writes back of it, which is
 * what helm applies. The post-renderer refuses them; each rule is held to the Go readers by
 * test/unit/helm/yaml-readers.test.ts.
 */

/**
 * A double-quoted scalar's source (quotes included): escapes the `yaml` package reads but go-yaml
 * refuses ("found unknown escape character", "found invalid Unicode character escape code").
 */
export function doubleQuotedProblem(source: string): string | undefined {
  for (let i = 0; i < source.length; i++) {
    if (source[i] !== '\\') continue;
    const next = source[i + 1] ?? '';
    if (next === '/') return 'has the escape \\/ in a double-quoted string, which go-yaml does not know: write / alone';
    const digits = { x: 2, u: 4, U: 8 }[next];
    if (digits !== undefined) {
      const code = Number.parseInt(source.slice(i + 2, i + 2 + digits), 16);
      if ((code >= 0xd800 && code <= 0xdfff) || code > 0x10ffff) {
        return `has the escape ${source.slice(i, i + 2 + digits)}, a UTF-16 surrogate or no code point, which go-yaml refuses: write the character itself (or \\U and its code point)`;
      }
      i += 1 + digits;
      continue;
    }
    i++; // the escaped character, whatever it is: never the start of another escape
  }
  return undefined;
}

/**
 * A folded block scalar's source (header line included): go-yaml v3 folds the line break before a
 * more-indented line into two, v2 and the `yaml` package into one.
 */
export function foldedProblem(source: string): string | undefined {
  const lines = source.split('\n').slice(1).map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l)).filter((l) => l.trim() !== '');
  const indents = new Set(lines.map((l) => /^[ \t]*/.exec(l)?.[0] ?? ''));
  if (indents.size > 1 || [...indents].some((i) => i.includes('\t'))) {
    return 'has a folded block scalar (>) with more-indented lines, which go-yaml v2 and v3 fold differently: use a literal block (|)';
  }
  return undefined;
}

/** go-yaml allows only letters, digits, `_` and `-` in anchor and alias names. */
const GO_YAML_ANCHOR = /^[A-Za-z0-9_-]+$/;

export function anchorProblem(name: string): string | undefined {
  return GO_YAML_ANCHOR.test(name) ? undefined : `has the anchor or alias name "${name}", which go-yaml refuses (only letters, digits, _ and -)`;
}
