/**
 * Medians over several runs of one bench command (`npm run bench -- --medians a.json,b.json,…`).
 * Issue #30: single runs differ by ±0.3 on the ratios, so the comparison is run at least three
 * times with the contenders in alternating order, and the medians are what is reported.
 *
 * A ratio is honest only within one run (same control plane, same minutes of machine load), so
 * speed-ups are computed per run and their median taken; the medians of the raw figures are shown
 * beside them. Runs on other terms (N, chart, concurrency, scenarios, …) are refused.
 */
import type { BenchResults, ContenderResult } from './report.js';
import type { ScenarioName, ScenarioResult } from './scenario.js';

export class MediansError extends Error {}

/** The median of the values that exist (mean of the middle two for an even count); null for none. */
export function median(values: readonly (number | null | undefined)[]): number | null {
  const v = values.filter((x): x is number => typeof x === 'number' && Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return null;
  const mid = Math.floor(v.length / 2);
  return v.length % 2 === 1 ? (v[mid] ?? null) : ((v[mid - 1] ?? 0) + (v[mid] ?? 0)) / 2;
}

/** The parameters two runs must share to be medians of one measurement. */
function terms(r: BenchResults): Record<string, string> {
  const p = r.parameters;
  return {
    n: String(p.n),
    concurrency: String(p.concurrency),
    chart: p.chart ?? 'webapp',
    chartSource: p.chartSource ?? 'local',
    scenarios: (p.scenarios ?? ['create', 'upgrade', 'idle', 'delete']).join(','),
    idleSeconds: String(p.idleSeconds),
    settleSeconds: String(p.settleSeconds),
    replicas: String(p.replicas ?? 1),
    contenders: [...p.contenders].sort().join(','),
  };
}

/** Throws MediansError naming the first parameter on which the runs differ. */
export function checkSameTerms(runs: readonly BenchResults[]): void {
  if (runs.length < 2) throw new MediansError(`--medians needs at least two results files, got ${String(runs.length)}`);
  const first = terms(runs[0] as BenchResults);
  runs.forEach((r, i) => {
    const t = terms(r);
    for (const [k, v] of Object.entries(first)) {
      if (t[k] !== v) throw new MediansError(`run ${String(i + 1)} (${r.startedAt}) differs from run 1 in ${k}: ${t[k] ?? '–'} against ${v}`);
    }
  });
}

/** The time a phase's comparison is made on: to all Deployed (the floor's helm returning), delete to all gone. */
function phaseSeconds(s: ScenarioResult | undefined): number | undefined {
  if (s === undefined || !s.converged) return undefined;
  return s.deployedSeconds ?? s.wallSeconds;
}

function scenarioOf(r: BenchResults, contender: string, s: ScenarioName): ScenarioResult | undefined {
  const c: ContenderResult | undefined = r.contenders.find((x) => x.name === contender && x.status === 'ok');
  return c?.scenarios.find((x) => x.scenario === s);
}

/** helm's CPU per call (ms): the contender's CPU less its operator process's, over N calls; undefined where helm runs in-process. */
function helmMsPerCall(contender: string, s: ScenarioResult | undefined, n: number): number | undefined {
  if (s === undefined || contender === 'operator-sdk') return undefined;
  return ((s.cpuSeconds - s.cpuOperatorSeconds) / n) * 1000;
}

export interface MedianRow {
  readonly label: string;
  /** One value per run, in the order given (null where the run has none). */
  readonly values: readonly (number | null)[];
  readonly median: number | null;
  /** How to print it: seconds, MiB, a plain count, or a ratio. */
  readonly unit: 's' | 'ms' | 'MiB' | 'count' | 'ratio';
}

const PHASES: readonly ScenarioName[] = ['create', 'upgrade', 'delete'];
const BASES = ['floor', 'operator-sdk'] as const;

/** Every row of the medians table: per-run figures and their median, then the per-run speed-ups. */
export function medianRows(runs: readonly BenchResults[]): MedianRow[] {
  checkSameTerms(runs);
  const first = runs[0] as BenchResults;
  const n = first.parameters.n;
  const contenders = first.contenders.map((c) => c.name).filter((name) => runs.every((r) => r.contenders.some((c) => c.name === name && c.status === 'ok')));
  const rows: MedianRow[] = [];
  const add = (label: string, unit: MedianRow['unit'], pick: (r: BenchResults) => number | null | undefined): void => {
    const values = runs.map((r) => { const v = pick(r); return v === undefined || v === null || !Number.isFinite(v) ? null : v; });
    if (values.every((v) => v === null)) return;
    rows.push({ label, values, median: median(values), unit });
  };
  for (const s of PHASES) {
    for (const c of contenders) {
      add(`${s}: ${c}, ${s === 'delete' ? 'wall time until all gone' : 'wall time until all Deployed'}`, 's', (r) => phaseSeconds(scenarioOf(r, c, s)));
      if (s !== 'delete') add(`${s}: ${c}, settled (every Deployment rolled out, CRs converged)`, 's', (r) => scenarioOf(r, c, s)?.settledSeconds);
      add(`${s}: ${c}, CPU, operator + helm`, 's', (r) => scenarioOf(r, c, s)?.cpuSeconds);
      if (c === 'chartpilot') add(`${s}: ${c}, … of which the operator process`, 's', (r) => scenarioOf(r, c, s)?.cpuOperatorSeconds);
      add(`${s}: ${c}, helm's CPU per call`, 'ms', (r) => helmMsPerCall(c, scenarioOf(r, c, s), n));
    }
    for (const c of contenders) {
      for (const base of BASES) {
        if (c === base || c === 'floor' || !contenders.includes(base)) continue;
        add(`${s}: ${base} ÷ ${c}, time (> 1: ${c} faster)`, 'ratio', (r) => {
          const b = phaseSeconds(scenarioOf(r, base, s));
          const x = phaseSeconds(scenarioOf(r, c, s));
          return b === undefined || x === undefined || x === 0 ? null : b / x;
        });
        if (s !== 'delete') {
          add(`${s}: ${base} ÷ ${c}, settled`, 'ratio', (r) => {
            const b = scenarioOf(r, base, s)?.settledSeconds;
            const x = scenarioOf(r, c, s)?.settledSeconds;
            return b === undefined || x === undefined || x === 0 ? null : b / x;
          });
        }
      }
    }
  }
  for (const c of contenders) {
    add(`idle: ${c}, CPU-s per minute`, 's', (r) => scenarioOf(r, c, 'idle')?.perMinute?.cpuSeconds);
    add(`idle: ${c}, helm processes per minute`, 'count', (r) => scenarioOf(r, c, 'idle')?.perMinute?.helmProcesses);
    add(`idle: ${c}, API writes per minute besides heartbeats`, 'count', (r) => scenarioOf(r, c, 'idle')?.perMinute?.apiWritesExclHeartbeats);
  }
  for (const c of contenders) {
    const overall = (r: BenchResults): ContenderResult['overall'] => r.contenders.find((x) => x.name === c)?.overall;
    add(`all: ${c}, peak RSS of the operator`, 'MiB', (r) => overall(r)?.peakRssMiB);
    add(`all: ${c}, peak RSS, operator + children, summed`, 'MiB', (r) => overall(r)?.peakTreeRssMiB);
    add(`all: ${c}, peak PSS, operator + children, summed`, 'MiB', (r) => overall(r)?.peakTreePssMiB);
  }
  return rows;
}

function fmt(v: number | null, unit: MedianRow['unit']): string {
  if (v === null) return '–';
  if (unit === 'ratio') return `${v.toFixed(2)}×`;
  if (unit === 'count') return Number.isInteger(v) ? String(v) : v.toFixed(1);
  return unit === 'ms' ? v.toFixed(0) : v.toFixed(1);
}

const UNIT_SUFFIX: Record<MedianRow['unit'], string> = { s: ' (s)', ms: ' (ms)', MiB: ' (MiB)', count: '', ratio: '' };

/** The medians as markdown: each run's order, load and commit, then one row per figure. */
export function mediansMarkdown(runs: readonly BenchResults[]): string {
  const rows = medianRows(runs);
  const p = (runs[0] as BenchResults).parameters;
  const lines: string[] = [];
  lines.push(`# Medians of ${String(runs.length)} runs: ${p.chart === undefined ? '' : `${p.chart}, `}N=${String(p.n)}, concurrency ${String(p.concurrency)}`, '');
  lines.push('| run | started (UTC) | contender order | chartpilot | load average (1 min) at the end of each scenario |', '|---|---|---|---|---|');
  runs.forEach((r, i) => {
    const loads = r.contenders.filter((c) => c.status === 'ok').map((c) => `${c.name} ${c.scenarios.map((s) => s.loadAverage.toFixed(1)).join('/')}`).join('; ');
    lines.push(`| ${String(i + 1)} | ${r.startedAt.slice(0, 19).replace('T', ' ')} | ${r.parameters.contenders.join(', ')} | ${r.versions.chartpilot} | ${loads} |`);
  });
  lines.push('', `| figure | ${runs.map((_, i) => `run ${String(i + 1)}`).join(' | ')} | median |`, `|---|${runs.map(() => '---:').join('|')}|---:|`);
  for (const row of rows) {
    lines.push(`| ${row.label}${UNIT_SUFFIX[row.unit]} | ${row.values.map((v) => fmt(v, row.unit)).join(' | ')} | **${fmt(row.median, row.unit)}** |`);
  }
  lines.push('', 'Speed-ups are taken within each run (same control plane, same minutes of load) and their median shown; '
    + 'the median of a ratio is not the ratio of the medians. "helm\'s CPU per call" is the contender\'s CPU less its operator process\'s, over N '
    + '(operator-sdk runs Helm in-process: not separable).', '');
  return lines.join('\n');
}
