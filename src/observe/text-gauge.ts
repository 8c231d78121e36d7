/**
 * A gauge family with one series per custom resource, kept as exposition text instead of
 * prom-client series. prom-client rebuilds every series' text at every scrape (labels escaped,
 * objects allocated per series): for 10,000 CRs that was most of a scrape's CPU, for lines that
 * change only when a CR comes or goes. Here each series' line is built once when it is set, and
 * the family's text once after a change; an unchanged scrape joins nothing.
 *
 * Only what the text format 0.0.4 needs (prom-client's registry content type): HELP, TYPE and
 * `name{labels} value` lines, label values escaped as that format says.
 */

/** A label value as the text format wants it: backslash, double quote and newline escaped. */
export function escapeLabelValue(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** HELP text escaping: backslash and newline. */
function escapeHelp(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

/** A sample value as prom-client writes it (integers without a point, NaN and infinities by name). */
function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

export class TextGauge<L extends string> {
  private readonly lines = new Map<string, string>();
  private text: string | undefined;
  private readonly header: string;

  constructor(
    private readonly name: string,
    help: string,
    private readonly labelNames: readonly L[],
  ) {
    this.header = `# HELP ${name} ${escapeHelp(help)}\n# TYPE ${name} gauge\n`;
  }

  set(labels: Record<L, string>, value: number): void {
    const key = this.keyOf(labels);
    const pairs = this.labelNames.map((l) => `${l}="${escapeLabelValue(labels[l])}"`).join(',');
    const line = `${this.name}{${pairs}} ${formatValue(value)}`;
    if (this.lines.get(key) === line) return;
    this.lines.set(key, line);
    this.text = undefined;
  }

  remove(labels: Record<L, string>): void {
    if (this.lines.delete(this.keyOf(labels))) this.text = undefined;
  }

  get size(): number {
    return this.lines.size;
  }

  /** The family's exposition text (HELP and TYPE even with no series, as prom-client writes them). */
  render(): string {
    if (this.text === undefined) {
      this.text = this.lines.size === 0 ? this.header : `${this.header}${[...this.lines.values()].join('\n')}\n`;
    }
    return this.text;
  }

  private keyOf(labels: Record<L, string>): string {
    return this.labelNames.map((l) => labels[l]).join('\u0000');
  }
}
