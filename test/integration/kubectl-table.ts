// What the real `kubectl get` prints as a table (its printer columns, from the API server's Table
// answer), read back into rows. Only plain `kubectl get` shows the columns a CRD declares, so
// tests of those columns run the real kubectl, once per look (kubectl-get.ts answers JSON only).
import type { TestCluster } from './harness.js';

/** One row: column header (as printed, upper case) → cell text ('' when kubectl printed `<none>`). */
export type Row = Readonly<Record<string, string>>;

export interface Table {
  /** kubectl's output as printed, for assertion messages. */
  readonly text: string;
  readonly headers: readonly string[];
  /** By NAME. */
  readonly rows: ReadonlyMap<string, Row>;
}

/**
 * kubectl's table as rows. A cell starts where its header starts (kubectl pads every column to
 * one width); the last column runs to the end of the line, so a message with spaces stays whole.
 */
export function parseTable(text: string): Table {
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  const header = lines[0] ?? '';
  const starts = [...header.matchAll(/\S+/gu)].map((m) => ({ name: m[0], at: m.index }));
  const rows = new Map<string, Row>();
  for (const line of lines.slice(1)) {
    const row: Record<string, string> = {};
    starts.forEach((s, i) => {
      const end = starts[i + 1]?.at ?? line.length;
      const cell = line.slice(s.at, i === starts.length - 1 ? undefined : end).trim();
      row[s.name] = cell === '<none>' ? '' : cell;
    });
    rows.set(row['NAME'] ?? '', row);
  }
  return { text, headers: starts.map((s) => s.name), rows };
}

/** `kubectl get <resource> -n <ns>` (with `-o wide` when asked), parsed. */
export async function kubectlTable(cluster: TestCluster, resource: string, ns: string, wide = false): Promise<Table> {
  const r = await cluster.kubectl(['get', resource, '-n', ns, ...(wide ? ['-o', 'wide'] : [])]);
  return parseTable(r.stdout);
}

/** The row of `name`, or a failure that shows the whole table. */
export function rowOf(table: Table, name: string): Row {
  const row = table.rows.get(name);
  if (row === undefined) throw new Error(`no row ${name} in:\n${table.text}`);
  return row;
}
