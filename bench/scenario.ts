/**
 * One contender through the four scenarios: create N → converge, upgrade all N → converge, idle,
 * delete all N → converge. Around each: wall time, the contender's CPU, helm processes, API server
 * requests (the bench's own polling subtracted) and peak RSS.
 */
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { CONTENDER_AGENTS } from './audit.js';
import type { AuditLog } from './audit-log.js';
import type { Kind } from './cluster-ops.js';
import type { Contender, Phase, Progress } from './contenders.js';
import { diffCounters, scrapeRequestCounters, type BenchKube, type RequestCounters } from './kube.js';
import { phaseMeasures, writesOver, type PhaseMeasures } from './measure.js';
import { probeMetrics, summarizeProbe, type MetricsProbe, type MetricsTarget } from './metrics-probe.js';
import { startPhaseWatch, type PhaseWatch } from './phase-watch.js';
import { machineBusySeconds, RssSampler, type RssPeaks } from './proc.js';
import { progressRate } from './progress.js';
import { replicaDeltas, type NamedShare, type ReplicaMark, type ReplicaPhase } from './replica-figures.js';
import { errorMessage } from '../src/lib/errors.js';

export type ScenarioName = Phase | 'idle' | 'restart' | 'reference-change';

export interface ScenarioResult extends RssPeaks, PhaseMeasures {
  scenario: ScenarioName;
  /** Every release (and CR) reached the goal before the timeout; always true for idle. */
  converged: boolean;
  /** How many of N reached the goal. */
  done: number;
  wallSeconds: number;
  /**
   * Seconds until every release was at the goal and every CR Deployed=True, readiness not
   * included: the figure comparable with the floor, whose helm runs without --wait. Equal to
   * wallSeconds for contenders that report no readiness; absent for idle.
   */
  deployedSeconds?: number;
  /** Operator process + its reaped helm children. */
  cpuSeconds: number;
  /** Of which the operator process itself (helm-operator: all of it, Helm runs in-process). */
  cpuOperatorSeconds: number;
  helmProcesses: number;
  /** apiserver_request_total delta minus the bench's own requests. */
  apiRequests: number;
  /** The same for POST/PUT/PATCH/APPLY/DELETE. */
  apiWrites: number;
  /** Idle only: the same figures per minute, and where the writes went. */
  perMinute?: { cpuSeconds: number; helmProcesses: number; apiRequests: number; apiWrites: number; apiWritesExclHeartbeats: number; chartRequests?: number };
  writesByResource?: Record<string, number>;
  /** Restart only: every request by `VERB group/resource` (reads too), all clients but the bench. */
  requestsByResource?: Record<string, number>;
  /**
   * Restart only: seconds from spawning the new operator process to its "every resource checked
   * since start" line as the bench saw it (wallSeconds), and the operator's own figures from it.
   */
  restart?: { startupSeconds: number; checkedSeconds: number; operatorSeconds: number; resources: number; failed: number };
  /**
   * Create and upgrade, once converged, for an operator serving /metrics (chartpilot): its
   * endpoint scraped METRICS_SCRAPES times after the phase's measurements (bench/metrics-probe.ts).
   */
  metrics?: MetricsProbe;
  /** chartpilot with --replicas: each replica's CPU, helm processes and peak RSS over the phase. */
  replicas?: ReplicaPhase[];
  /**
   * chartpilot, create and upgrade once converged (after the figures above): what each process's
   * /metrics says of its share — CRs held and objects in its dependent caches.
   */
  shares?: NamedShare[];
  /** The machine's 1-minute load average at the end: shows when something else competed for the cores. */
  loadAverage: number;
  /** … and at the start (absent in results from before it was recorded). */
  loadAverageStart?: number;
  /** CPU seconds the whole machine was busy meanwhile (control plane, bench and anything else included). */
  machineBusySeconds: number;
  detail?: string;
}

export interface ScenarioOptions {
  kube: BenchKube;
  n: number;
  idleSeconds: number;
  /** Quiet time between the upgrade converging and the idle window, not measured. */
  settleSeconds: number;
  phaseTimeoutMs: number;
  /** false when the chart has no Deployment: no settled wait after convergence. */
  rollsOut?: boolean;
  /** Which scenarios, in order (bench/args.ts). */
  scenarios: readonly ScenarioName[];
  /** The CR spec (the floor: the values) per phase, from the chart (bench/charts.ts). */
  specs: Readonly<Record<Phase, Readonly<Record<string, unknown>>>>;
  log: (line: string) => void;
  /** Set on Ctrl-C: stop waiting. */
  signal: AbortSignal;
  /**
   * Attributed writes, the equal (settled) window, Ready lag and per-CR timeline: the API
   * server's audit log, the contender's namespace and its CR kind (undefined for the floor).
   */
  measure?: { audit: AuditLog; namespace: string; kind: Kind | undefined };
}

export const releaseNames = (n: number): string[] => Array.from({ length: n }, (_, i) => `web-${String(i).padStart(4, '0')}`);

/**
 * Writes the control plane makes on its own every few seconds whatever runs: Lease renewals (API
 * server identity, kwok's node lease) and kwok's node status. Neither operator writes these kinds
 * (no leader election in the bench), so the rest of the idle writes are the operator's.
 */
const HEARTBEAT = / (coordination\.k8s\.io\/leases|core\/nodes)(\/status)?$/;

interface Mark {
  at: number;
  cpu: { self: number; children: number };
  helm: number;
  chart: number | undefined;
  busy: number;
  counters: RequestCounters;
  own: { reads: number; writes: number };
  replicas: ReplicaMark[] | undefined;
  load: number;
}

async function mark(c: Contender, kube: BenchKube): Promise<Mark> {
  // The bench's own count is taken BEFORE the scrape: the scrape request itself shows up only in
  // the next scrape's counters, so it belongs to the interval that starts here.
  const own = kube.own();
  const counters = await scrapeRequestCounters(kube);
  return { at: Date.now(), cpu: c.cpu(), helm: c.helmProcesses(), chart: c.chartRequests?.(), busy: machineBusySeconds(), counters, own, replicas: c.replicaMarks?.(), load: loadavg()[0] ?? 0 };
}

function between(a: Mark, b: Mark): Pick<ScenarioResult, 'wallSeconds' | 'cpuSeconds' | 'cpuOperatorSeconds' | 'helmProcesses' | 'apiRequests' | 'apiWrites' | 'machineBusySeconds' | 'loadAverageStart'> & { writesByResource: Record<string, number> } {
  const d = diffCounters(b.counters, a.counters);
  const ownReads = b.own.reads - a.own.reads;
  const ownWrites = b.own.writes - a.own.writes;
  return {
    wallSeconds: (b.at - a.at) / 1000,
    cpuSeconds: b.cpu.self + b.cpu.children - a.cpu.self - a.cpu.children,
    cpuOperatorSeconds: b.cpu.self - a.cpu.self,
    helmProcesses: b.helm - a.helm,
    machineBusySeconds: b.busy - a.busy,
    loadAverageStart: a.load,
    apiRequests: d.total - ownReads - ownWrites,
    apiWrites: d.writes - ownWrites,
    writesByResource: d.writesByResource,
  };
}

/** Each replica's figures between two marks, its peak RSS since the previous take (replicas only). */
function replicasBetween(c: Contender, a: Mark, b: Mark): { replicas?: ReplicaPhase[] } {
  if (a.replicas === undefined || b.replicas === undefined) return {};
  return { replicas: replicaDeltas(a.replicas, b.replicas, c.takeReplicaPeaks?.() ?? new Map()) };
}

export async function runScenarios(c: Contender, opts: ScenarioOptions): Promise<{ scenarios: ScenarioResult[]; overall: RssPeaks }> {
  const { kube, log } = opts;
  const names = releaseNames(opts.n);
  let rss = new RssSampler(c.pid, c.tree);
  rss.start();
  const scenarios: ScenarioResult[] = [];
  let overall: RssPeaks;
  /** Peaks of operator processes a restart ended. */
  let before: RssPeaks | undefined;
  try {
    for (const phase of opts.scenarios) {
      if (opts.signal.aborted) break;
      if (phase === 'restart') {
        before = maxPeaks(before, rss.stop());
        const result = await runRestart(c, opts);
        rss = result.rss;
        scenarios.push(result.result);
        if (!result.result.converged) break;
        continue;
      }
      if (phase === 'reference-change') {
        const result = await runReferenceChange(c, names, opts, rss);
        scenarios.push(result);
        log(`${c.name}: reference-change: ${result.detail ?? ''}`);
        continue;
      }
      if (phase === 'idle') {
        // Let the rollout's tail (pods replaced, late status writes) pass before measuring quiet.
        await sleep(opts.settleSeconds * 1000, undefined, { signal: opts.signal }).catch(() => undefined);
        const a = await mark(c, kube);
        rss.takePhase();
        c.takeReplicaPeaks?.();
        log(`${c.name}: idle for ${opts.idleSeconds} s with ${opts.n} releases deployed`);
        await sleep(opts.idleSeconds * 1000, undefined, { signal: opts.signal }).catch(() => undefined);
        const b = await mark(c, kube);
        const f = between(a, b);
        const minutes = f.wallSeconds / 60;
        const writes = opts.measure === undefined ? undefined
          : writesOver(await opts.measure.audit.take(a.at, b.at), CONTENDER_AGENTS[c.name], opts.n, f.wallSeconds, 'idle');
        const heartbeats = Object.entries(f.writesByResource).filter(([k]) => HEARTBEAT.test(k)).reduce((s, [, v]) => s + v, 0);
        scenarios.push({
          scenario: 'idle', converged: true, done: opts.n, ...f, ...replicasBetween(c, a, b), ...rss.takePhase(), loadAverage: loadavg()[0] ?? 0,
          perMinute: {
            cpuSeconds: f.cpuSeconds / minutes,
            helmProcesses: f.helmProcesses / minutes,
            apiRequests: f.apiRequests / minutes,
            apiWrites: f.apiWrites / minutes,
            apiWritesExclHeartbeats: (f.apiWrites - heartbeats) / minutes,
            ...(a.chart === undefined || b.chart === undefined ? {} : { chartRequests: (b.chart - a.chart) / minutes }),
          },
          writesByResource: f.writesByResource,
          ...(writes === undefined ? {} : { writes }),
        });
        continue;
      }
      const result = await runPhase(c, phase, names, opts, rss);
      // After the phase's figures and audit window closed: the scrapes (and the operator's token
      // reviews for them) are in none of them.
      if (phase !== 'delete' && result.converged && c.metricsTarget !== undefined) {
        result.metrics = await scrapeMetrics(c.metricsTarget.bind(c), opts.n);
        opts.log(`${c.name}: ${phase}: GET /metrics ×${String(result.metrics.scrapes)} at ${String(opts.n)} CRs: median ${String(result.metrics.medianMs?.toFixed(0))} ms, max ${String(result.metrics.maxMs?.toFixed(0))} ms, ${(result.metrics.bytes / 1024).toFixed(0)} KiB, ${String(result.metrics.series)} series, ${String(result.metrics.chartpilotSeriesPerCr?.toFixed(2))} chartpilot_* series per CR${result.metrics.error === undefined ? '' : ` (${result.metrics.error})`}`);
      }
      if (phase !== 'delete' && result.converged && c.shareSnapshots !== undefined) {
        result.shares = await c.shareSnapshots();
        opts.log(`${c.name}: ${phase}: shares: ${result.shares.map((x) => `${x.name} ${String(x.assignedCrs ?? x.crsLabelled ?? '–')} CRs, ${String(x.dependentsOwned ?? '–')} dependents cached (+${String(x.dependentsUnbucketed ?? '–')} unbucketed), ${String(x.dependentBuckets ?? '–')} buckets${x.error === undefined ? '' : ` (${x.error})`}`).join('; ')}`);
      }
      scenarios.push(result);
      log(`${c.name}: ${phase} ${result.converged ? 'converged' : 'DID NOT converge'} in ${result.wallSeconds.toFixed(1)} s, cpu ${result.cpuSeconds.toFixed(1)} s, ${result.helmProcesses} helm processes, ${result.apiRequests} API requests, peak RSS ${(result.peakRssMiB ?? 0).toFixed(0)} MiB`);
      // Without a converged create/upgrade the later scenarios would measure leftovers.
      if (!result.converged) break;
    }
  } finally {
    // Overall peak while the operator is still alive (VmHWM is gone once it exits).
    overall = maxPeaks(before, rss.stop());
  }
  return { scenarios, overall };
}

/** After the last expected upgrade: how long other CRs have to show an upgrade they should not make. */
const REFERENCE_QUIET_MS = 15_000;

/**
 * With --values-from-secrets: rotate Secret bench-ref-0 and measure until every CR that
 * references it has a new revision; then stay quiet a while and count every CR whose revision
 * changed. Converged only when exactly the referencing CRs upgraded, once each.
 */
async function runReferenceChange(c: Contender, names: readonly string[], opts: ScenarioOptions, rss: RssSampler): Promise<ScenarioResult> {
  const empty = { scenario: 'reference-change' as const, done: 0, wallSeconds: 0, cpuSeconds: 0, cpuOperatorSeconds: 0, helmProcesses: 0, apiRequests: 0, apiWrites: 0, machineBusySeconds: 0, loadAverage: loadavg()[0] ?? 0 };
  if (c.changeReference === undefined || c.revisions === undefined) return { ...empty, ...rss.takePhase(), converged: false, detail: `${c.name} reads no values from Secrets (--values-from-secrets)` };
  const before = await c.revisions();
  rss.takePhase();
  const a = await mark(c, opts.kube);
  const expected = await c.changeReference(names);
  const deadline = Date.now() + opts.phaseTimeoutMs;
  let upgraded = 0;
  while (Date.now() < deadline && !opts.signal.aborted) {
    const now = await c.revisions();
    upgraded = expected.filter((n) => (now.get(n) ?? 0) > (before.get(n) ?? 0)).length;
    if (upgraded === expected.length) break;
    await sleep(250);
  }
  const b = await mark(c, opts.kube);
  await sleep(REFERENCE_QUIET_MS, undefined, { signal: opts.signal }).catch(() => undefined);
  const after = await c.revisions();
  const changed = names.filter((n) => after.get(n) !== before.get(n));
  const wanted = new Set(expected);
  const others = changed.filter((n) => !wanted.has(n)).length;
  const twice = expected.filter((n) => (after.get(n) ?? 0) - (before.get(n) ?? 0) > 1).length;
  const f = between(a, b);
  return {
    ...empty,
    ...f,
    ...rss.takePhase(),
    converged: upgraded === expected.length && others === 0 && twice === 0,
    done: upgraded,
    detail: `${String(expected.length)} of ${String(names.length)} CRs reference bench-ref-0: ${String(upgraded)} upgraded in ${f.wallSeconds.toFixed(1)} s with ${String(f.helmProcesses)} helm processes; ${String(others)} other CRs and ${String(twice)} twice upgraded (within ${String(REFERENCE_QUIET_MS / 1000)} s after)`,
  };
}

/** Scrapes per probe: enough for a median and a worst case, few enough to stay out of the way. */
const METRICS_SCRAPES = 10;

async function scrapeMetrics(target: () => Promise<MetricsTarget>, n: number): Promise<MetricsProbe> {
  try {
    return await probeMetrics(await target(), n, METRICS_SCRAPES);
  } catch (err) {
    return summarizeProbe([], undefined, n, { scraping: Number.NaN, quiet: Number.NaN }, errorMessage(err));
  }
}

function maxPeaks(a: RssPeaks | undefined, b: RssPeaks): RssPeaks {
  if (a === undefined) return b;
  return {
    peakRssMiB: Math.max(a.peakRssMiB ?? 0, b.peakRssMiB ?? 0),
    peakTreeRssMiB: Math.max(a.peakTreeRssMiB, b.peakTreeRssMiB),
    peakTreePssMiB: Math.max(a.peakTreePssMiB ?? 0, b.peakTreePssMiB ?? 0),
  };
}

/** The operator's line once every CR its first LIST found has been reconciled (controller/cr-controller.ts). */
const CHECKED_LINE = /"msg":"every resource checked since start"/;

/**
 * With every CR converged: SIGTERM the operator, start it again, and measure until it says it has
 * reconciled every CR once — the wall time, helm processes (the goal is none: nothing changed),
 * API requests by verb and resource (one read per CR, or listed once?), its CPU and peak RSS.
 * The new process gets a sampler of its own, returned for the scenarios after this one.
 */
async function runRestart(c: Contender, opts: ScenarioOptions): Promise<{ result: ScenarioResult; rss: RssSampler }> {
  if (c.restart === undefined || c.logLine === undefined) {
    const rss = new RssSampler(c.pid, c.tree);
    const result: ScenarioResult = {
      scenario: 'restart', converged: false, done: 0, wallSeconds: 0, cpuSeconds: 0, cpuOperatorSeconds: 0, helmProcesses: 0, apiRequests: 0, apiWrites: 0,
      machineBusySeconds: 0, loadAverage: loadavg()[0] ?? 0, ...rss.takePhase(), detail: `${c.name} has no operator process to restart`,
    };
    return { result, rss };
  }
  // The marks start once the old process is gone: its way out is not the new one's cost.
  let a: Mark | undefined;
  let spawned = 0;
  await c.restart(async () => {
    a = await mark(c, opts.kube);
    spawned = Date.now();
  });
  if (a === undefined) throw new Error('restart did not mark its start');
  const startupSeconds = (Date.now() - spawned) / 1000;
  const rss = new RssSampler(c.pid, c.tree);
  rss.start();
  opts.log(`${c.name}: restarted (pid ${String(c.pid)}) in ${startupSeconds.toFixed(1)} s; waiting until it has checked every CR`);
  const deadline = spawned + opts.phaseTimeoutMs;
  let line: string | undefined;
  let failure: string | undefined;
  while (!opts.signal.aborted) {
    line = c.logLine(CHECKED_LINE);
    if (line !== undefined) break;
    failure = c.failure();
    if (failure === undefined && Date.now() > deadline) failure = `timed out after ${opts.phaseTimeoutMs / 1000} s without the line "every resource checked since start"`;
    if (failure !== undefined) break;
    await sleep(250);
  }
  const checkedAt = Date.now();
  const b = await mark(c, opts.kube);
  const f = between(a, b);
  const said = line === undefined ? undefined : (JSON.parse(line) as { resources?: number; failed?: number; seconds?: number });
  const converged = said !== undefined && said.resources === opts.n && said.failed === 0;
  const result: ScenarioResult = {
    scenario: 'restart',
    converged,
    done: said?.resources ?? 0,
    ...f,
    // From spawning the new process until the bench read its line (the polling adds ≤ 0.25 s).
    wallSeconds: (checkedAt - spawned) / 1000,
    requestsByResource: diffCounters(b.counters, a.counters).requestsByResource,
    ...(said === undefined ? {} : {
      restart: { startupSeconds, checkedSeconds: (checkedAt - spawned) / 1000, operatorSeconds: said.seconds ?? Number.NaN, resources: said.resources ?? 0, failed: said.failed ?? 0 },
    }),
    ...rss.takePhase(),
    loadAverage: loadavg()[0] ?? 0,
    ...(converged ? {} : { detail: failure ?? (said === undefined ? 'interrupted' : `it checked ${String(said.resources)} CRs (${String(said.failed)} failed), not ${String(opts.n)}`) }),
  };
  opts.log(`${c.name}: restart: every CR checked ${result.wallSeconds.toFixed(1)} s after the new process started, ${result.helmProcesses} helm processes, ${result.apiRequests} API requests, cpu ${result.cpuSeconds.toFixed(1)} s, peak RSS ${(result.peakRssMiB ?? 0).toFixed(0)} MiB; requests: ${JSON.stringify(result.requestsByResource)}`);
  return { result, rss };
}

async function runPhase(c: Contender, phase: Phase, names: string[], opts: ScenarioOptions, rss: RssSampler): Promise<ScenarioResult> {
  // Watches first: they must see every change of the phase, and their LISTs are not the phase's.
  const m = opts.measure;
  const watch = m === undefined ? undefined
    : await startPhaseWatch({ kube: opts.kube, namespace: m.namespace, kind: m.kind, phase, names, log: opts.log });
  let result: ScenarioResult;
  let a: Mark;
  let converged: number;
  let settled: number | undefined;
  try {
    a = await mark(c, opts.kube);
    rss.takePhase();
    c.takeReplicaPeaks?.();
    ({ result, end: converged } = await converge(c, phase, names, opts, a, rss));
    // The equal window: whatever the contender's own criterion, wait for the workload too.
    if (watch !== undefined && result.converged && phase !== 'delete' && opts.rollsOut !== false) {
      settled = await awaitSettled(c, phase, watch, converged, a.at + opts.phaseTimeoutMs, opts);
    }
  } finally {
    await watch?.stop();
  }
  if (m === undefined || watch === undefined) return result;
  let entries;
  try {
    entries = await m.audit.take(a.at, settled ?? converged);
  } catch (err) {
    opts.log(`${c.name}: ${phase}: no audit-log figures: ${errorMessage(err)}`);
    return result;
  }
  return {
    ...result,
    ...phaseMeasures({
      phase, names, start: a.at, converged, settled, rolledOut: watch.rolledOutSince, entries,
      agents: CONTENDER_AGENTS[c.name], kind: m.kind, watch,
    }),
  };
}

/** settled = converged and every Deployment of the namespace rolled out, whichever comes later. */
async function awaitSettled(c: Contender, phase: Phase, watch: PhaseWatch, converged: number, deadline: number, opts: ScenarioOptions): Promise<number | undefined> {
  const rolledOut = await watch.rolledOut(Math.max(deadline, converged + 60_000), opts.signal);
  if (rolledOut === undefined) {
    opts.log(`${c.name}: ${phase}: the Deployments were not all rolled out by the deadline; no settled figures`);
    return undefined;
  }
  const settled = Math.max(converged, rolledOut);
  opts.log(`${c.name}: ${phase} settled (every Deployment rolled out) after ${((settled - converged) / 1000).toFixed(1)} s more`);
  return settled;
}

/** Acts, polls the contender's progress until it converged; end is the time of the closing mark. */
async function converge(c: Contender, phase: Phase, names: string[], opts: ScenarioOptions, a: Mark, rss: RssSampler): Promise<{ result: ScenarioResult; end: number }> {
  const deadline = a.at + opts.phaseTimeoutMs;
  let failure: string | undefined;
  try {
    await c.act(phase, names, opts.specs[phase]);
  } catch (err) {
    failure = `${phase} action failed: ${errorMessage(err)}`;
  }
  let progress: Progress = { done: 0, deployed: 0, detail: 'not checked' };
  let deployedAt: number | undefined;
  let lastLog = Date.now();
  /** [ms since the phase start, releases at the goal]: the progress line's rate. */
  const seen: [number, number][] = [];
  while (failure === undefined && !opts.signal.aborted) {
    progress = await c.progress(phase, names);
    seen.push([Date.now() - a.at, progress.released ?? progress.deployed]);
    if (progress.deployed === names.length) deployedAt ??= Date.now();
    if (progress.done === names.length) break;
    failure = c.failure();
    if (Date.now() > deadline) failure = `timed out after ${opts.phaseTimeoutMs / 1000} s: ${progress.detail}`;
    if (Date.now() - lastLog > 15_000) {
      opts.log(`${c.name}: ${phase}: ${progress.detail}; releases ${progressRate(seen, names.length)}`);
      lastLog = Date.now();
    }
    // Each look lists every CR and release record: at 10,000 of them, once a second would be load of its own.
    await sleep(names.length > 2000 ? 5000 : 1000);
  }
  const b = await mark(c, opts.kube);
  const f = between(a, b);
  const converged = failure === undefined && progress.done === names.length;
  const result: ScenarioResult = {
    scenario: phase,
    converged,
    done: progress.done,
    ...f,
    ...(deployedAt === undefined ? {} : { deployedSeconds: Math.min((deployedAt - a.at) / 1000, f.wallSeconds) }),
    ...replicasBetween(c, a, b),
    ...rss.takePhase(),
    loadAverage: loadavg()[0] ?? 0,
    ...(converged ? {} : { detail: failure ?? (opts.signal.aborted ? 'interrupted' : progress.detail) }),
  };
  return { result, end: b.at };
}
