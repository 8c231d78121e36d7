/** The results file's shape and its markdown rendering (tables with ratios, then the targets). */
import type { ContenderName } from './contenders.js';
import type { ContenderResult } from './results.js';
import type { MetricsProbe } from './metrics-probe.js';
import { measureSections } from './report-measure.js';
import { shares as sharesOf } from './replica-figures.js';
import type { ScenarioName, ScenarioResult } from './scenario.js';

export type { ContenderResult } from './results.js';

export interface BenchResults {
  startedAt: string;
  finishedAt: string;
  command: string;
  parameters: { n: number; scenarios?: readonly string[]; replicas?: number; concurrency: number; idleSeconds: number; settleSeconds: number; contenders: ContenderName[]; chartSource?: string; chart?: string };
  machine: { cores: number; cpuModel: string; memoryMiB: number; kernel: string };
  versions: { node: string; helm: string; kubernetes: string; helmOperator: string; chartpilot: string };
  helmOperatorBuild?: { cached: boolean; ok: boolean; seconds?: number; error?: string };
  contenders: ContenderResult[];
  /** value(contender) / value(base) per scenario and figure, base = floor and operator-sdk. */
  ratios: Record<string, Record<string, Record<string, number | null>>>;
}

const FIGURES = [
  'wallSeconds', 'deployedSeconds', 'rolledOutSeconds', 'settledSeconds', 'cpuSeconds', 'cpuOperatorSeconds', 'helmProcesses', 'apiRequests', 'apiWrites',
  'windowWrites', 'contenderWritesPerCr', 'peakRssMiB', 'peakTreeRssMiB', 'peakTreePssMiB',
] as const;
type Figure = (typeof FIGURES)[number];

function scenarioOf(results: BenchResults, name: ContenderName, s: ScenarioName): ScenarioResult | undefined {
  const c = results.contenders.find((x) => x.name === name && x.status === 'ok');
  return c?.scenarios.find((x) => x.scenario === s);
}

const ratio = (a: number | null | undefined, b: number | null | undefined): number | null =>
  a === null || a === undefined || b === null || b === undefined || b === 0 ? null : a / b;

/** ratios[`${contender}/${base}`][scenario][figure]. */
export function computeRatios(results: Omit<BenchResults, 'ratios'>): BenchResults['ratios'] {
  const out: BenchResults['ratios'] = {};
  const r = results as BenchResults;
  for (const base of ['floor', 'operator-sdk'] as const) {
    for (const c of results.contenders) {
      if (c.name === base || c.status !== 'ok' || c.name === 'floor') continue;
      const byScenario: Record<string, Record<string, number | null>> = {};
      for (const s of c.scenarios) {
        const b = scenarioOf(r, base, s.scenario);
        if (b === undefined) continue;
        byScenario[s.scenario] = Object.fromEntries(FIGURES.map((f) => [f, ratio(s[f], b[f])]));
      }
      if (Object.keys(byScenario).length > 0) out[`${c.name}/${base}`] = byScenario;
    }
  }
  return out;
}

const LABELS: Record<Figure, string> = {
  wallSeconds: 'wall time to converge, Ready where reported (s)',
  deployedSeconds: 'wall time until all Deployed, readiness not awaited (s)',
  cpuSeconds: 'CPU, operator + helm (s)',
  cpuOperatorSeconds: '… of which the operator process (s)',
  helmProcesses: 'helm processes',
  apiRequests: 'API requests',
  apiWrites: 'API writes',
  rolledOutSeconds: 'every Deployment rolled out, as the bench\'s watch saw it (s)',
  settledSeconds: 'settled: converged and every Deployment rolled out (s)',
  windowWrites: 'API writes over the equal window, all clients but the bench (audit log)',
  contenderWritesPerCr: 'API writes by the contender (operator + helm) per CR, equal window',
  peakRssMiB: 'peak RSS, operator (MiB)',
  peakTreeRssMiB: 'peak RSS, operator + children, summed (MiB)',
  peakTreePssMiB: 'peak PSS, operator + children, summed (MiB; shared pages once)',
};

const fmt = (v: number | null | undefined, digits = 1): string =>
  v === null || v === undefined ? '–' : Number.isInteger(v) && digits <= 1 ? String(v) : v.toFixed(digits);
const fmtRatio = (v: number | null | undefined): string => (v === null || v === undefined ? '–' : `${v.toFixed(2)}×`);

export function toMarkdown(results: BenchResults): string {
  const p = results.parameters;
  const ok = results.contenders.filter((c) => c.status === 'ok');
  const ratioCols = Object.keys(results.ratios);
  const lines: string[] = [];
  lines.push(`# chartpilot benchmark: ${p.chart === undefined ? '' : `${p.chart}, `}N=${p.n}, concurrency ${p.concurrency}, idle ${p.idleSeconds} s${p.chartSource === undefined ? '' : `, chartpilot's chart from a registry (${p.chartSource})`}`);
  lines.push('');
  lines.push(`Run ${results.startedAt} → ${results.finishedAt} with \`${results.command}\`.`);
  lines.push('');
  lines.push(`Machine: ${results.machine.cores} cores (${results.machine.cpuModel}), ${Math.round(results.machine.memoryMiB)} MiB, Linux ${results.machine.kernel}. `
    + `Versions: node ${results.versions.node}, helm ${results.versions.helm}, Kubernetes ${results.versions.kubernetes}, `
    + `helm-operator ${results.versions.helmOperator}, chartpilot ${results.versions.chartpilot}.`);
  lines.push('');
  for (const c of results.contenders.filter((x) => x.status !== 'ok')) {
    // URLs out: the markdown is meant to be pasted into committed notes; the JSON keeps them.
    lines.push(`- **${c.name}: ${c.status}** — ${(c.reason ?? '').replace(/https?:\/\/\S+/g, '<url>')}`.replace(/\s+/g, ' '));
  }
  if (results.contenders.some((x) => x.status !== 'ok')) lines.push('');

  const scenarios: ScenarioName[] = ['create', 'upgrade', 'idle', 'delete'];
  for (const s of scenarios) {
    if (!ok.some((c) => c.scenarios.some((x) => x.scenario === s))) continue;
    lines.push(`## ${s}`);
    lines.push('');
    const row = (cells: string[]): void => { lines.push(`| ${cells.join(' | ')} |`); };
    const blank = ratioCols.map(() => '');
    row(['figure', ...ok.map((c) => c.name), ...ratioCols]);
    row(['---', ...ok.map(() => '---:'), ...ratioCols.map(() => '---:')]);
    const figures: Figure[] = s === 'idle'
      ? ['cpuSeconds', 'cpuOperatorSeconds', 'helmProcesses', 'apiRequests', 'apiWrites', 'peakRssMiB', 'peakTreeRssMiB', 'peakTreePssMiB']
      : FIGURES.filter((f) => s !== 'delete' || (f !== 'settledSeconds' && f !== 'rolledOutSeconds'));
    for (const f of figures) {
      const cells = ok.map((c) => fmt(c.scenarios.find((x) => x.scenario === s)?.[f]));
      const rs = ratioCols.map((k) => fmtRatio(results.ratios[k]?.[s]?.[f]));
      row([LABELS[f], ...cells, ...rs]);
    }
    if (s === 'idle') {
      const per = (pick: (m: NonNullable<ScenarioResult['perMinute']>) => number, label: string, digits: number): void => {
        const cells = ok.map((c) => {
          const m = c.scenarios.find((x) => x.scenario === s)?.perMinute;
          const v = m === undefined ? Number.NaN : pick(m);
          return Number.isNaN(v) ? '–' : v.toFixed(digits);
        });
        row([label, ...cells, ...blank]);
      };
      per((m) => m.cpuSeconds, 'CPU s / minute', 2);
      per((m) => m.helmProcesses, 'helm processes / minute', 1);
      per((m) => m.apiWrites, 'API writes / minute (all clients)', 1);
      per((m) => m.apiWritesExclHeartbeats, 'API writes / minute, without Lease and Node heartbeats', 1);
      if (ok.some((c) => c.scenarios.find((x) => x.scenario === s)?.perMinute?.chartRequests !== undefined)) {
        per((m) => m.chartRequests ?? Number.NaN, 'chart registry requests / minute (chart from a registry)', 2);
      }
    }
    lines.push(...metricsRows(ok.map((c) => c.scenarios.find((x) => x.scenario === s)?.metrics), blank));
    row(['machine CPU busy, all processes (s)', ...ok.map((c) => fmt(c.scenarios.find((x) => x.scenario === s)?.machineBusySeconds)), ...blank]);
    row(['load average (1 min) at the end', ...ok.map((c) => fmt(c.scenarios.find((x) => x.scenario === s)?.loadAverage, 2)), ...blank]);
    const notConverged = ok.flatMap((c) => c.scenarios.filter((x) => x.scenario === s && !x.converged).map((x) => `${c.name}: ${x.done}/${p.n} (${x.detail ?? ''})`));
    if (notConverged.length > 0) {
      lines.push('');
      lines.push(`Did not converge: ${notConverged.join('; ')}`);
    }
    lines.push('');
    lines.push(...measureSections(s, ok, p.n));
  }

  lines.push(...restartSection(ok, p.n));
  for (const c of ok) {
    const r = c.scenarios.find((x) => x.scenario === 'reference-change');
    if (r !== undefined) lines.push('## reference-change', '', `${c.name}: ${r.converged ? 'exactly the referencing CRs upgraded' : '**not exactly the referencing CRs upgraded**'}; ${r.detail ?? ''}; operator CPU ${fmt(r.cpuOperatorSeconds)} s, ${fmt(r.apiRequests, 0)} API requests.`, '');
  }
  for (const c of ok.filter((x) => x.replicas !== undefined)) {
    const reps = c.replicas ?? [];
    lines.push(`## ${c.name}: ${String(reps.length)} replicas sharing the CRs (run --shards)`, '');
    lines.push('| replica | CPU, whole run (s) | peak RSS (MiB) |', '|---|---:|---:|');
    for (const r of reps) lines.push(`| ${r.name} | ${fmt(r.cpuSeconds)} | ${fmt(r.peakRssMiB)} |`);
    lines.push('');
  }
  lines.push(...replicaSections(ok));
  lines.push(...cgroupSection(results.contenders, p.n));
  lines.push('## Overall peak memory');
  lines.push('');
  lines.push('| contender | operator (MiB) | operator + children, RSS summed (MiB) | operator + children, PSS summed (MiB) | RSS after start-up (MiB) | start-up (s) |');
  lines.push('|---|---:|---:|---:|---:|---:|');
  for (const c of ok) {
    lines.push(`| ${c.name} | ${fmt(c.overall?.peakRssMiB)} | ${fmt(c.overall?.peakTreeRssMiB)} | ${fmt(c.overall?.peakTreePssMiB)} | ${fmt(c.startupRssMiB)} | ${fmt(c.startupSeconds)} |`);
  }
  lines.push('');

  lines.push('## Targets (measured, not asserted)');
  lines.push('');
  const cpCreate = scenarioOf(results, 'chartpilot', 'create');
  const flCreate = scenarioOf(results, 'floor', 'create');
  const osCreate = scenarioOf(results, 'operator-sdk', 'create');
  const cpIdle = scenarioOf(results, 'chartpilot', 'idle');
  const flIdle = scenarioOf(results, 'floor', 'idle');
  const target = (ok2: boolean | undefined, text: string): string => `- ${ok2 === undefined ? 'n/a' : ok2 ? 'met' : 'NOT met'}: ${text}`;
  // The floor's helm runs without --wait: compare its wall time with chartpilot's time to Deployed.
  const vsFloor = ratio(cpCreate?.deployedSeconds, flCreate?.wallSeconds);
  const vsFloorReady = ratio(cpCreate?.wallSeconds, flCreate?.wallSeconds);
  lines.push(target(vsFloor === null ? undefined : vsFloor <= 1.2,
    `chartpilot converges N=${p.n} within 1.2× of the floor's wall time (Deployed: ${fmtRatio(vsFloor)}; Ready: ${fmtRatio(vsFloorReady)})`));
  const vsOsdk = ratio(osCreate?.wallSeconds, cpCreate?.deployedSeconds);
  lines.push(target(vsOsdk === null ? undefined : vsOsdk >= 2, `chartpilot ≥ 2× faster than operator-sdk (operator-sdk / chartpilot = ${fmtRatio(vsOsdk)})`));
  // The targets name the create wave; the upgrade wave is the other convergence a user waits for.
  const cpUpgrade = scenarioOf(results, 'chartpilot', 'upgrade');
  const upFloor = ratio(cpUpgrade?.deployedSeconds, scenarioOf(results, 'floor', 'upgrade')?.wallSeconds);
  const upOsdk = ratio(scenarioOf(results, 'operator-sdk', 'upgrade')?.wallSeconds, cpUpgrade?.deployedSeconds);
  lines.push(`- for reference, the upgrade wave: chartpilot / floor = ${fmtRatio(upFloor)} (Deployed), operator-sdk / chartpilot = ${fmtRatio(upOsdk)}`);
  if (cpIdle?.perMinute !== undefined) {
    const w = cpIdle.perMinute.apiWritesExclHeartbeats;
    const baseline = flIdle?.perMinute?.apiWritesExclHeartbeats;
    lines.push(target(cpIdle.perMinute.helmProcesses === 0, `idle: zero helm processes per minute (${cpIdle.perMinute.helmProcesses.toFixed(1)})`));
    lines.push(target(w === 0, `idle: no API writes per minute besides the control plane's heartbeats (chartpilot ${w.toFixed(1)}/min; `
      + `with no operator ${baseline === undefined ? '–' : baseline.toFixed(1)}/min)`));
    const crWrites = Object.entries(cpIdle.writesByResource ?? {}).filter(([k]) => k.includes('bench.chartpilot.io/')).reduce((sum, [, v]) => sum + v, 0);
    lines.push(target(crWrites === 0, `idle: no writes to the custom resources (chartpilot: ${String(crWrites)} in ${String(p.idleSeconds)} s)`));
    if (cpIdle.perMinute.chartRequests !== undefined) {
      lines.push(`- idle with the chart from an OCI registry: ${cpIdle.perMinute.chartRequests.toFixed(2)} registry requests / minute (each refresh: a tag list and a manifest HEAD)`);
    }
  }
  const cp = results.contenders.find((c) => c.name === 'chartpilot');
  if (cp?.overall?.peakRssMiB != null) {
    lines.push(`- ${p.n >= 1000 ? (cp.overall.peakRssMiB < 150 ? 'met' : 'NOT met') : 'not measured at N=1000'}: peak RSS at N=1000 below 150 MiB (this run, N=${p.n}: ${fmt(cp.overall.peakRssMiB)} MiB)`);
  }
  lines.push('');
  lines.push('Notes: API figures are deltas of `apiserver_request_total` (all clients, so they include the controller manager, scheduler and kwok reacting to the workload) minus the bench\'s own requests; '
    + 'the floor\'s figures show what the workload alone costs. CPU counts the operator process and every helm process it reaped (helm-operator runs Helm in-process). '
    + 'Idle writes "without heartbeats" leave out Lease renewals and kwok\'s Node status, which the control plane writes whatever runs. '
    + `The idle window starts ${p.settleSeconds} s after the upgrade converged. `
    + 'The audit-log figures attribute every write to who made it, by user agent, over an equal window for every contender: '
    + 'create and upgrade from the phase start until the contender converged AND every Deployment of its namespace was rolled out ("settled"); delete until converged. '
    + 'Ready lag and the per-CR timeline come from the bench\'s watches (when it saw a Deployment available and a CR Ready) and the audit log (when each write took effect).');
  lines.push('');
  return lines.join('\n');
}

/**
 * With --memory-limit-mib: each operator's memory cgroup over its whole run, and whether it stayed
 * inside the limit (every scenario converged, nothing OOM-killed).
 */
export function cgroupSection(contenders: readonly ContenderResult[], n: number): string[] {
  const limited = contenders.filter((c) => c.cgroup !== undefined);
  if (limited.length === 0) return [];
  const lines = [`## Inside a memory limit (a cgroup, as a pod's limit), N=${String(n)}`, ''];
  lines.push('| contender | limit (MiB) | peak charged, page cache included (MiB) | working set at the end (MiB) | OOM kills | stayed inside |');
  lines.push('|---|---:|---:|---:|---:|---|');
  for (const c of limited) {
    const g = c.cgroup;
    if (g === undefined) continue;
    const inside = g.oomKills === 0 && c.status === 'ok' && c.scenarios.every((s) => s.converged);
    lines.push(`| ${c.name} | ${fmt(g.limitMiB, 0)} | ${fmt(g.peakMiB)} | ${fmt(g.workingSetMiB)} | ${String(g.oomKills)} | ${inside ? 'yes' : 'NO'} |`);
  }
  lines.push('', 'The kernel enforces the limit: page cache is reclaimed when it is reached, and a process is OOM-killed only when what it holds cannot be; the working set is charged memory less inactive page cache, as kubelet computes it.', '');
  return lines;
}

/**
 * The operator's /metrics after the wave converged (bench/metrics-probe.ts), as rows of the
 * scenario's table; none when no contender was probed.
 */
function metricsRows(probes: readonly (MetricsProbe | undefined)[], blank: readonly string[]): string[] {
  if (probes.every((p) => p === undefined)) return [];
  const row = (label: string, pick: (p: MetricsProbe) => string): string => `| ${[label, ...probes.map((p) => (p === undefined ? '–' : pick(p))), ...blank].join(' | ')} |`;
  const scrapes = probes.find((p) => p !== undefined)?.scrapes ?? 0;
  return [
    row(`GET /metrics after convergence, HTTPS with a token: median / max of ${String(scrapes)} (ms)`, (p) => `${fmt(p.medianMs, 0)} / ${fmt(p.maxMs, 0)}`),
    row('… the first scrape, its token reviewed (ms)', (p) => fmt(p.firstMs, 0)),
    row('… answered 200', (p) => `${String(p.ok)}/${String(p.scrapes)}${p.error === undefined ? '' : ` (${p.error})`}`),
    row('… response size (KiB)', (p) => fmt(p.bytes / 1024, 0)),
    row('… series, all / chartpilot_*', (p) => `${String(p.series)} / ${String(p.chartpilotSeries)}`),
    row('… series per CR, chartpilot_* / with resource_created_at_seconds', (p) => `${fmt(p.chartpilotSeriesPerCr, 2)} / ${fmt(p.seriesPerCr, 2)}`),
    row('… CRs with series', (p) => String(p.crsSeen)),
    row('… operator CPU per scrape, less as long a window without scrapes / all of it (ms)', (p) => `${fmt(p.operatorCpuMsPerScrapeNet, 0)} / ${fmt(p.operatorCpuMsPerScrape, 0)}`),
  ];
}

/**
 * Per phase, each replica's CPU, helm processes and peak RSS (--replicas), and what each process's
 * /metrics said of its share after the wave: CRs held, objects in its dependent caches and its
 * share of all of them (about 1/R each when the replicas split the work evenly).
 */
function replicaSections(ok: readonly ContenderResult[]): string[] {
  const out: string[] = [];
  for (const c of ok) {
    for (const s of c.scenarios) {
      const reps = s.replicas;
      const shares = s.shares;
      if ((reps === undefined || reps.length === 0) && (shares === undefined || shares.length === 0)) continue;
      out.push(`### ${c.name}, ${s.scenario}: per process`, '');
      out.push('| process | CPU, operator + helm (s) | … operator (s) | helm processes | peak RSS (MiB) | CRs held (/metrics) | CRs labelled for it | dependents cached: owned / unbucketed | share of all owned | buckets watched | swaps |',
        '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
      const names = [...new Set([...(reps ?? []).map((r) => r.name), ...(shares ?? []).map((x) => x.name)])];
      const ofAll = sharesOf(names.map((n) => shares?.find((x) => x.name === n)?.dependentsOwned ?? 0));
      names.forEach((n, i) => {
        const r = reps?.find((x) => x.name === n);
        const sh = shares?.find((x) => x.name === n);
        const share = sh?.dependentsOwned == null ? '–' : `${((ofAll[i] ?? 0) * 100).toFixed(1)} %`;
        out.push(`| ${n} | ${fmt(r?.cpuSeconds)} | ${fmt(r?.cpuOperatorSeconds)} | ${fmt(r?.helmProcesses)} | ${fmt(r?.peakRssMiB)} | ${fmt(sh?.assignedCrs)} | ${fmt(sh?.crsLabelled)} | ${fmt(sh?.dependentsOwned)} / ${fmt(sh?.dependentsUnbucketed)} | ${share} | ${fmt(sh?.dependentBuckets)} | ${fmt(sh?.dependentSwaps)} |`);
      });
      const errors = (shares ?? []).filter((x) => x.error !== undefined).map((x) => `${x.name}: ${x.error ?? ''}`);
      if (errors.length > 0) out.push('', `Scrapes that failed: ${errors.join('; ')}`);
      out.push('');
    }
  }
  return out;
}

/**
 * The restart scenario: an operator started again with every CR converged, until it has checked
 * each once. API requests by verb and resource tell whether it reads per CR or lists once.
 */
function restartSection(ok: readonly ContenderResult[], n: number): string[] {
  const measured = ok.filter((c) => c.scenarios.some((x) => x.scenario === 'restart'));
  if (measured.length === 0) return [];
  const of = (c: ContenderResult): ScenarioResult | undefined => c.scenarios.find((x) => x.scenario === 'restart');
  const out: string[] = ['## restart', ''];
  out.push(`SIGTERM with all ${String(n)} CRs converged, a new process with the same flags, until it logs \`every resource checked since start\`.`, '');
  out.push(`| figure | ${measured.map((c) => c.name).join(' | ')} |`, `|---|${measured.map(() => '---:').join('|')}|`);
  const row = (label: string, pick: (r: ScenarioResult) => number | null | undefined, digits = 1): void => {
    out.push(`| ${label} | ${measured.map((c) => { const r = of(c); return r === undefined ? '–' : fmt(pick(r), digits); }).join(' | ')} |`);
  };
  row('new process → every CR checked (s)', (r) => r.wallSeconds);
  row('… of which until it logged that its controllers started (s)', (r) => r.restart?.startupSeconds);
  row('… the operator\'s own figure: controller start → every CR checked (s)', (r) => r.restart?.operatorSeconds, 2);
  row('CRs checked', (r) => r.restart?.resources);
  row('… of which failed', (r) => r.restart?.failed);
  row('helm processes', (r) => r.helmProcesses);
  row('API requests (all clients but the bench)', (r) => r.apiRequests);
  row('API writes', (r) => r.apiWrites);
  row('CPU, operator + helm (s)', (r) => r.cpuSeconds);
  row('peak RSS, operator (MiB)', (r) => r.peakRssMiB);
  row('machine CPU busy, all processes (s)', (r) => r.machineBusySeconds);
  const notConverged = measured.flatMap((c) => { const r = of(c); return r !== undefined && !r.converged ? [`${c.name}: ${r.detail ?? ''}`] : []; });
  if (notConverged.length > 0) out.push('', `Did not complete: ${notConverged.join('; ')}`);
  out.push('', 'Requests during the restart by verb and resource (the 20 largest; all clients but the bench, so the control plane\'s own are in):', '');
  for (const c of measured) {
    const by = Object.entries(of(c)?.requestsByResource ?? {}).sort((x, y) => y[1] - x[1]).slice(0, 20);
    out.push(`- ${c.name}: ${by.map(([k, v]) => `${k} ${String(v)}`).join(', ')}`);
  }
  out.push('');
  return out;
}
