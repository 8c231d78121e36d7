/**
 * Go's `os.ExpandEnv`, which operator-sdk applies to every overrideValues value: `$VAR` and
 * `${VAR}` are replaced by the variable's value, an unset variable by ''. Ported rule for rule
 * (including the odd corners: `$$`, `$1`, a trailing `$`, `${}`) so the same file expands to the
 * same values here.
 */

const SPECIAL = new Set(['*', '#', '$', '@', '!', '?', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9']);
const ALNUM = /[A-Za-z0-9_]/u;

export function expandEnv(text: string, env: Readonly<Record<string, string | undefined>>): string {
  let out = '';
  let i = 0;
  for (let j = 0; j < text.length; j++) {
    if (text[j] !== '$' || j + 1 >= text.length) continue;
    out += text.slice(i, j);
    const [name, width] = shellName(text.slice(j + 1));
    if (name === '' && width > 0) {
      // Invalid syntax such as "${}" or an unclosed "${": Go drops those characters.
    } else if (name === '') {
      out += '$'; // "$" not followed by a name stays as it is.
    } else {
      out += env[name] ?? '';
    }
    j += width;
    i = j + 1;
  }
  return out + text.slice(i);
}

function shellName(s: string): [string, number] {
  const c0 = s.charAt(0);
  if (c0 === '{') {
    const c1 = s.charAt(1);
    if (s.length > 2 && SPECIAL.has(c1) && s.charAt(2) === '}') return [c1, 3];
    for (let i = 1; i < s.length; i++) {
      if (s[i] === '}') return i === 1 ? ['', 2] : [s.slice(1, i), i + 1];
    }
    return ['', 1];
  }
  if (SPECIAL.has(c0)) return [c0, 1];
  let i = 0;
  while (i < s.length && ALNUM.test(s.charAt(i))) i++;
  return [s.slice(0, i), i];
}
