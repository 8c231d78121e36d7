/** How a problem names a JSON value it did not expect: its kind, or a string quoted (clipped at 60 characters). */
export function describeValue(v: unknown): string {
  if (Array.isArray(v)) return 'a list';
  if (v === null) return 'null';
  if (v === undefined) return 'missing';
  if (typeof v === 'object') return 'a map';
  if (typeof v === 'string') return `"${v.length > 60 ? `${v.slice(0, 60)}…` : v}"`;
  return `a ${typeof v}`;
}
