// Reading Prometheus' text exposition format in assertions.

/** Sum of every sample of `name` whose labels include all of `labels`; undefined when there is none. */
export function metric(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  let sum: number | undefined;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (m?.[1] !== name) continue;
    const have = m[3] ?? '';
    if (Object.entries(labels).every(([k, v]) => have.includes(`${k}="${v}"`))) sum = (sum ?? 0) + Number(m[4]);
  }
  return sum;
}
