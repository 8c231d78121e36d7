/**
 * The markdown of the audit-log and watch figures, per scenario: who wrote how much over the
 * equal window, the contender's writes by verb and resource, the Ready lag and the per-CR timeline.
 */
import type { ContenderResult } from './results.js';
import type { ScenarioName, ScenarioResult } from './scenario.js';
import type { Distribution } from './stats.js';

const num = (v: number | undefined, digits = 2): string => (v === undefined || !Number.isFinite(v) ? '–' : v.toFixed(digits));

function table(header: string[], rows: string[][]): string[] {
  return [
    `| ${header.join(' | ')} |`,
    `|${header.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ];
}

const dist3 = (d: Distribution | undefined, digits = 2): string =>
  (d === undefined ? '–' : `${num(d.p50, digits)} / ${num(d.p99, digits)} / ${num(d.max, digits)}`);

export function measureSections(s: ScenarioName, ok: readonly ContenderResult[], n: number): string[] {
  const of = (c: ContenderResult): ScenarioResult | undefined => c.scenarios.find((x) => x.scenario === s);
  const measured = ok.filter((c) => of(c)?.writes !== undefined);
  if (measured.length === 0) return [];
  const out: string[] = [];
  const window = s === 'idle' ? 'the idle window' : s === 'delete' ? 'phase start → converged' : 'phase start → settled';
  out.push(`### ${s}: API writes by who made them (audit log, ${window})`, '');
  const w = (c: ContenderResult): NonNullable<ScenarioResult['writes']> | undefined => of(c)?.writes;
  const components = [...new Set(measured.flatMap((c) => Object.keys(w(c)?.controlPlaneByComponent ?? {})))].sort();
  const row = (label: string, pick: (x: NonNullable<ScenarioResult['writes']>) => number | undefined, digits = 0): string[] =>
    [label, ...measured.map((c) => { const x = w(c); return x === undefined ? '–' : num(pick(x), digits); })];
  out.push(...table(['figure', ...measured.map((c) => c.name)], [
    row('window (s)', (x) => x.seconds, 1),
    row('all clients but the bench', (x) => x.total),
    row('the contender: operator + helm', (x) => x.contender),
    ...(s === 'idle' ? [] : [row('… per CR', (x) => x.contenderPerCr, 2)]),
    row('… the operator process', (x) => x.operator),
    row('… helm', (x) => x.helm),
    row('… refused by the API server (≥ 400)', (x) => x.contenderRefused),
    row('the control plane', (x) => x.controlPlane),
    ...components.map((k) => row(`… ${k}`, (x) => x.controlPlaneByComponent[k] ?? 0)),
    ...(s === 'idle' ? [] : [row('cross-check: all but the bench, start → converged (vs API writes above)', (x) => x.toConverged)]),
  ]));
  out.push('');

  // The contender's writes by verb and resource, the operator's and helm's apart.
  const cols = measured.flatMap((c) => (['operator', 'helm'] as const)
    .filter((who) => (who === 'operator' ? (w(c)?.operator ?? 0) : (w(c)?.helm ?? 0)) > 0)
    .map((who) => ({ c, who })));
  const byKey = (c: ContenderResult, who: 'operator' | 'helm'): Record<string, number> =>
    (who === 'operator' ? w(c)?.operatorByKey : w(c)?.helmByKey) ?? {};
  const keys = [...new Set(cols.flatMap(({ c, who }) => Object.keys(byKey(c, who))))];
  const total = (k: string): number => cols.reduce((sum, { c, who }) => sum + (byKey(c, who)[k] ?? 0), 0);
  keys.sort((a, b) => total(b) - total(a) || a.localeCompare(b));
  if (cols.length > 0) {
    const perCr = s !== 'idle';
    out.push(`### ${s}: the contender's writes by verb and resource${perCr ? `, per CR (÷ ${String(n)})` : ' (counts)'}`, '');
    const cell = (v: number): string => (v === 0 ? '' : perCr ? num(v / n) : String(v));
    out.push(...table(['verb resource', ...cols.map(({ c, who }) => `${c.name} ${who}`)], [
      ...keys.map((k) => [k, ...cols.map(({ c, who }) => cell(byKey(c, who)[k] ?? 0))]),
      ['**all**', ...cols.map(({ c, who }) => cell(Object.values(byKey(c, who)).reduce((a, b) => a + b, 0)))],
    ]));
    out.push('');
  }

  const lagged = measured.filter((c) => of(c)?.readyLag !== undefined);
  if (lagged.length > 0) {
    const what = s === 'upgrade' ? 'Deployment rolled out at the new spec' : 'Deployment Available';
    out.push(`### ${s}: Ready lag per CR, CR Ready seen − ${what} seen (s)`, '');
    out.push(...table(['contender', 'CRs', 'p50', 'p90', 'p99', 'max'], lagged.map((c) => {
      const d = of(c)?.readyLag;
      return [c.name, String(d?.count ?? 0), num(d?.p50), num(d?.p90), num(d?.p99), num(d?.max)];
    })));
    out.push('');
  }

  const timed = measured.filter((c) => (of(c)?.timeline?.gaps.length ?? 0) > 0);
  if (timed.length > 0) {
    out.push(`### ${s}: per-CR timeline, p50 / p99 / max over the CRs (s)`, '');
    const labels = [...new Set(timed.flatMap((c) => of(c)?.timeline?.gaps.map((g) => g.label) ?? []))];
    const gap = (c: ContenderResult, label: string): Distribution | undefined => of(c)?.timeline?.gaps.find((g) => g.label === label)?.seconds;
    out.push(...table(['step', ...timed.map((c) => c.name)], [
      ...labels.map((l) => [l, ...timed.map((c) => dist3(gap(c, l)))]),
      ['status writes per CR (count)', ...timed.map((c) => dist3(of(c)?.timeline?.statusWritesPerCr, 0))],
    ]));
    out.push('');
  }
  return out;
}
