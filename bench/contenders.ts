/**
 * The contenders behind one interface. Each acts on its own namespace (and, for the two
 * operators, its own CRD kind), so nothing one leaves behind can be mistaken for another's work.
 *
 *   floor         helm upgrade --install / helm uninstall, C at a time, from the bench itself
 *   floor-postrender
 *                 the floor through a post-renderer that changes nothing (`cat`): what helm's
 *                 post-render step costs any operator that post-renders (opt-in, not by default)
 *   operator-sdk  helm-operator run (Helm in-process: no helm processes)
 *   chartpilot    node bin/chartpilot.js run (one helm process per Helm action)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, cpSync, existsSync, fstatSync, mkdirSync, openSync, readFileSync, readSync, statSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify as toYaml } from 'yaml';
import { createCr, deleteAllCrs, deployedRevisions, installCrd, listCrs, listReleases, patchCrSpec, pool, type CrView, type Kind } from './cluster-ops.js';
import { OPERATOR_NODE_FLAGS } from '../src/cli/node-flags.js';
import { releaseLabelFlags, uninstallArgs, upgradeArgs } from '../src/helm/argv.js';
import { dialectFor } from '../src/helm/dialect.js';
import { ReleaseLabels } from '../src/engines/helm/names.js';
import { shardLabel } from '../src/controller/sharding/names.js';
import type { BenchKube } from './kube.js';
import { createMemoryCgroup, type CgroupFigures } from './memory-cgroup.js';
import { metricsPortOf, metricsReaderToken, type MetricsTarget } from './metrics-probe.js';
import { descendants, readStat, statusKiB } from './proc.js';
import { crLookDue } from './progress.js';
import { snapshotShare, type NamedShare, type ReplicaMark } from './replica-figures.js';

export type ContenderName = 'floor' | 'floor-postrender' | 'operator-sdk' | 'chartpilot';
/** Run by default, in this order. */
export const CONTENDERS: readonly ContenderName[] = ['floor', 'operator-sdk', 'chartpilot'];
/** Every contender --contenders may name. */
export const KNOWN_CONTENDERS: readonly ContenderName[] = ['floor', 'floor-postrender', 'operator-sdk', 'chartpilot'];

export type Phase = 'create' | 'upgrade' | 'delete';

export interface Env {
  kube: BenchKube;
  kubeconfig: string;
  /** Directory holding helm (and the control-plane binaries). */
  binDir: string;
  /** This contender's scratch dir (watches.yaml, chart copy, logs, helm homes). */
  dir: string;
  namespace: string;
  concurrency: number;
  /** The chart directory (bench/charts.ts). */
  chart: string;
  /** The operators' CRD kinds: `<kindPrefix>Osdk`, `<kindPrefix>Chartpilot`. */
  kindPrefix: string;
  log: (line: string) => void;
  /** chartpilot's --helm-mode; undefined: its default (warm when chartpilot-helm is found). */
  helmMode?: 'warm' | 'engine' | 'cli' | undefined;
  /** chartpilot's --helm-workers; undefined: its default. */
  helmWorkers?: number | undefined;
  /** Operators run inside a memory cgroup with this limit (MiB); undefined: none. */
  memoryLimitMiB?: number | undefined;
  /** chartpilot: valuesFrom, CR i reading Secret bench-ref-(i mod K); undefined: none. */
  valuesFromSecrets?: number | undefined;
  /** chartpilot: its entry declares BENCH_OUTPUTS. */
  outputs?: boolean | undefined;
  /** chartpilot pulls its chart from a registry: the watches entry's chart keys, and what the operator needs to reach it. */
  remoteChart?: {
    readonly entry: Record<string, unknown>;
    readonly env: Record<string, string>;
    readonly args: readonly string[];
    /** Requests the registry has answered for the operator so far. */
    readonly requests: () => number;
  };
}

export interface Progress {
  /** Releases (and CRs) that reached the phase's goal, readiness included where reported. */
  done: number;
  /** The same without readiness: release at the goal revision and CR Deployed=True. */
  deployed: number;
  /** Releases at the goal revision (delete: releases and CRs gone), CRs aside: always fresh. */
  released?: number;
  /** One line on what is still missing, for logs and timeouts. */
  detail: string;
}

export interface Contender {
  readonly name: ContenderName;
  /** The operator process (undefined for the floor). */
  readonly pid: number | undefined;
  /** Where to find the processes whose RSS counts (tree root) and which of them. */
  readonly tree: { root: number; include: (comm: string) => boolean };
  /** Starts the operator (if any) and returns once it serves. */
  start(): Promise<void>;
  /**
   * CPU seconds so far (only deltas are meaningful): `self` is the operator process's utime+stime,
   * `children` the cutime+cstime of the helm processes (and their children) it has reaped.
   */
  cpu(): { self: number; children: number };
  /** helm processes started so far (the HELM_BIN wrapper's counter). */
  helmProcesses(): number;
  /** Registry requests made so far, when the chart comes from a registry. */
  chartRequests?(): number;
  /** Kicks off a phase: for the floor it runs helm to completion, for operators it writes the CRs. */
  act(phase: Phase, names: readonly string[], spec: Record<string, unknown>): Promise<void>;
  /** chartpilot with --values-from-secrets: rotates bench-ref-0; the CRs (of `names`) that reference it. */
  changeReference?(names: readonly string[]): Promise<string[]>;
  /** chartpilot with --values-from-secrets: each CR's deployed revision, from its status. */
  revisions?(): Promise<Map<string, number | undefined>>;
  /** chartpilot with --outputs: how many of the CRs show every output of BENCH_OUTPUTS in their status. */
  outputsShown?(): Promise<{ shown: number; of: number }>;
  progress(phase: Phase, names: readonly string[]): Promise<Progress>;
  /** Why the contender cannot go on (operator exited), or undefined. */
  failure(): string | undefined;
  /**
   * Operators: SIGTERM the process, wait for its exit, run `between`, start a new one with the same
   * flags; resolves once the new one logs that it started (the restart scenario). `cpu()` and
   * `logLine()` then tell the new one.
   */
  restart?(between: () => Promise<void>): Promise<void>;
  /** Operators: the first line the current process logged that matches `re`, or undefined. */
  logLine?(re: RegExp): string | undefined;
  /** chartpilot with --replicas: each replica's CPU and peak RSS so far (read before stop). */
  replicaFigures?(): ReplicaFigure[];
  /** chartpilot with --replicas: each replica's counters now (the phase's figures are deltas). */
  replicaMarks?(): ReplicaMark[];
  /** chartpilot with --replicas: each replica's peak RSS (KiB, by name) since the previous call. */
  takeReplicaPeaks?(): Map<string, number>;
  /**
   * chartpilot: what each process's /metrics says of its share (CRs held, dependents cached), one
   * scrape each, with the CRs labelled for it where sharded; called after a wave's figures.
   */
  shareSnapshots?(): Promise<NamedShare[]>;
  /** chartpilot: where its /metrics is served (HTTPS, token reviewed) and a token allowed to read it. */
  metricsTarget?(): Promise<MetricsTarget>;
  /** Operators with --memory-limit-mib: their cgroup's figures so far (read before `release`). */
  cgroupFigures?(): CgroupFigures;
  stop(): Promise<void>;
  /** After the last stop: removes what outlives restarts (the memory cgroup). */
  release?(): void;
  logTail(): string;
}

export interface ReplicaFigure {
  readonly name: string;
  readonly cpuSeconds: number;
  readonly peakRssMiB: number;
}

/**
 * The helm the bench runs, for the floor and for chartpilot alike: chartpilot-helm (helm itself,
 * which chartpilot also keeps warm) when the bin dir has it, else plain helm.
 */
export function benchHelm(binDir: string): string {
  const warm = join(binDir, 'chartpilot-helm');
  return existsSync(warm) ? warm : join(binDir, 'helm');
}

/**
 * A shell wrapper around helm that counts its invocations (exec: it becomes helm, one process),
 * warm workers included (they get no arguments: an empty line).
 */
function helmWrapper(dir: string, helmBin: string): { path: string; count: () => number } {
  const counter = join(dir, 'helm-processes');
  writeFileSync(counter, '');
  const path = join(dir, 'helm-counting.sh');
  writeFileSync(path, `#!/bin/sh\necho "$1" >> '${counter}'\nexec '${helmBin}' "$@"\n`);
  chmodSync(path, 0o755);
  return { path, count: () => readFileSync(counter, 'utf8').split('\n').length - 1 };
}

/** Environment for helm and the operators: private helm homes, our kubeconfig, our binaries first. */
function childEnv(env: Env, extra: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) out[k] = v;
  // A node process spawned from a test file must not think it is a test file.
  delete out.NODE_TEST_CONTEXT;
  return {
    ...out,
    KUBECONFIG: env.kubeconfig,
    PATH: [env.binDir, out.PATH ?? ''].join(delimiter),
    HELM_CACHE_HOME: join(env.dir, 'helm', 'cache'),
    HELM_CONFIG_HOME: join(env.dir, 'helm', 'config'),
    HELM_DATA_HOME: join(env.dir, 'helm', 'data'),
    ...extra,
  };
}

/**
 * Where an operator CR stands for a phase: `deployed` = Deployed=True for the current generation
 * (what operator-sdk reports, and what the floor's finished helm command means); `ready` = also
 * Ready=True where the operator tracks readiness (chartpilot waits for the workloads to become
 * available). A Ready condition saying readiness is not tracked counts as absent.
 */
function crState(cr: CrView): { deployed: boolean; ready: boolean } {
  const conds = cr.status?.conditions ?? [];
  const gen = cr.metadata.generation ?? 0;
  const fresh = (c: { observedGeneration?: number }): boolean => c.observedGeneration === undefined || c.observedGeneration >= gen;
  const deployedCond = conds.find((c) => c.type === 'Deployed');
  const readyCond = conds.find((c) => c.type === 'Ready' && !(c.status === 'Unknown' && c.reason === 'ReadinessNotTracked'));
  const deployed = deployedCond?.status === 'True' && fresh(deployedCond);
  return { deployed, ready: deployed && (readyCond === undefined || (readyCond.status === 'True' && fresh(readyCond))) };
}

/** Above this many CRs a wave's CRs are listed sparsely until every release is at the goal (crLookDue). */
const MANY_CRS = 2000;
const SPARSE_CR_LOOK_MS = 30_000;

/** The last list of the CRs of a wave, whose counts stand in while the CRs are not listed. */
interface CrLook {
  phase: Phase;
  at: number;
  deployed: number;
  done: number;
}

/** Progress from release Secrets (all contenders) and, for operators, the CRs' conditions. */
async function measureProgress(env: Env, kind: Kind | undefined, phase: Phase, names: readonly string[], look?: { last: CrLook | undefined }): Promise<Progress> {
  const releases = await listReleases(env.kube, env.namespace);
  if (phase === 'delete') {
    const crs = kind === undefined ? [] : await listCrs(env.kube, kind, env.namespace);
    const left = new Set([...releases.map((r) => r.name), ...crs.map((c) => c.metadata.name)]);
    const gone = names.filter((n) => !left.has(n)).length;
    return { done: gone, deployed: gone, detail: `${crs.length} CRs and ${releases.length} release records left` };
  }
  const wanted = phase === 'create' ? 1 : 2;
  const revs = deployedRevisions(releases);
  const released = names.filter((n) => (revs.get(n) ?? 0) >= wanted).length;
  const last = look?.last?.phase === phase ? look.last : undefined;
  const listNow = kind !== undefined && (look === undefined || names.length <= MANY_CRS || last === undefined
    || crLookDue(released, names.length, Date.now() - last.at, SPARSE_CR_LOOK_MS));
  if (kind !== undefined && !listNow && last !== undefined) {
    // Not listed: the last counts, which cannot have reached the goal (some release has not).
    const age = ((Date.now() - last.at) / 1000).toFixed(0);
    return { done: last.done, deployed: last.deployed, released, detail: `${released}/${names.length} releases at revision ≥ ${wanted}, ${last.deployed} CRs Deployed, ${last.done} also Ready (listed ${age} s ago)` };
  }
  const crs = kind === undefined ? undefined : new Map((await listCrs(env.kube, kind, env.namespace)).map((c) => [c.metadata.name, c]));
  let deployed = 0;
  let done = 0;
  for (const n of names) {
    if ((revs.get(n) ?? 0) < wanted) continue;
    const cr = crs?.get(n);
    const st = crs === undefined ? { deployed: true, ready: true } : cr === undefined ? { deployed: false, ready: false } : crState(cr);
    if (st.deployed) deployed++;
    if (st.ready) done++;
  }
  if (look !== undefined && crs !== undefined) look.last = { phase, at: Date.now(), deployed, done };
  const crDetail = crs === undefined ? '' : `, ${deployed} CRs Deployed, ${done} also Ready (where reported)`;
  return { done, deployed, released, detail: `${released}/${names.length} releases at revision ≥ ${wanted}${crDetail}` };
}

// ---------------------------------------------------------------------------------------------

const CAT_POSTRENDER = 'bench-cat';

/**
 * A helm 4 post-renderer plugin that hands the manifest back unchanged: the least any
 * post-renderer costs (helm's plugin lookup, a process, the manifest through a pipe and parsed
 * again), none of chartpilot's own work. Returns the HELM_PLUGINS directory.
 */
function catPostRenderPlugin(dir: string): string {
  const plugins = join(dir, 'plugins');
  mkdirSync(join(plugins, CAT_POSTRENDER), { recursive: true });
  writeFileSync(join(plugins, CAT_POSTRENDER, 'plugin.yaml'), toYaml({
    apiVersion: 'v1',
    type: 'postrenderer/v1',
    name: CAT_POSTRENDER,
    version: '0.1.0',
    runtime: 'subprocess',
    runtimeConfig: { platformCommand: [{ command: 'cat' }] },
  }));
  return plugins;
}

/**
 * helm itself, driven by the bench with the same parallelism: what the operators add overhead to.
 * With `postRender`, every install and upgrade also goes through the `cat` post-renderer.
 */
export function floor(env: Env, postRender = false): Contender {
  mkdirSync(env.dir, { recursive: true });
  const wrapper = helmWrapper(env.dir, benchHelm(env.binDir));
  const hEnv = childEnv(env, postRender ? { HELM_PLUGINS: catPostRenderPlugin(env.dir) } : {});
  const postRenderFlags = postRender ? [`--post-renderer=${CAT_POSTRENDER}`] : [];
  const running = new Set<ChildProcess>();
  let stopped = false;

  const helm = (args: string[]): Promise<void> => new Promise((resolve, reject) => {
    if (stopped) { reject(new Error('stopped')); return; }
    const child = spawn(wrapper.path, args, { env: hEnv, stdio: ['ignore', 'ignore', 'pipe'] });
    running.add(child);
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => { stderr = (stderr + c.toString('utf8')).slice(-2000); });
    child.on('error', (err) => { running.delete(child); reject(err); });
    child.on('close', (code) => {
      running.delete(child);
      if (code === 0) resolve();
      else reject(new Error(`helm ${args.slice(0, 2).join(' ')} exited with ${String(code)}: ${stderr.trim()}`));
    });
  });

  return {
    name: postRender ? 'floor-postrender' : 'floor',
    pid: undefined,
    // The bench's own children named helm; the control-plane daemons are its children too.
    tree: { root: process.pid, include: (comm) => comm === 'helm' || comm === 'chartpilot-helm' },
    start: () => Promise.resolve(),
    // cutime+cstime of the bench: the helm processes it has reaped (nothing else exits meanwhile).
    cpu: () => ({ self: 0, children: readStat('self')?.children ?? 0 }),
    helmProcesses: wrapper.count,
    async act(phase, names, spec) {
      const values = join(env.dir, `values-${phase}.json`);
      writeFileSync(values, JSON.stringify(spec));
      await pool(names, env.concurrency, (n) => helm(phase === 'delete' ? floorUninstallArgs(env, n) : floorUpgradeArgs(env, n, values, postRenderFlags)));
    },
    progress: (phase, names) => measureProgress(env, undefined, phase, names),
    failure: () => undefined,
    stop() {
      stopped = true;
      for (const c of running) c.kill('SIGKILL');
      return Promise.resolve();
    },
    logTail: () => '',
  };
}

/**
 * The floor runs helm with chartpilot's own argv (src/helm/argv.ts, the helm 4 dialect: no
 * client-side OpenAPI validation, JSON output, --history-max, the fingerprint label on the release
 * record, helm's --timeout), so it measures the same helm work. What it leaves out is chartpilot's
 * own: the post-renderer (a curl hop to the operator per call) and the budget kill. Before this,
 * the floor ran plain `helm upgrade --install` with client-side validation, about 0.13 CPU-s more
 * per install than chartpilot's calls: a slower helm than the one compared with it.
 */
const FLOOR_BUDGET_MS = 300_000;
const FLOOR_HISTORY_MAX = 10;

function floorUpgradeArgs(env: Env, release: string, valuesFile: string, postRenderFlags: string[]): string[] {
  return upgradeArgs(
    { release, namespace: env.namespace, chart: env.chart, values: {}, historyMax: FLOOR_HISTORY_MAX, timeoutMs: FLOOR_BUDGET_MS },
    dialectFor('v4.0.0'),
    {
      // A fingerprint of chartpilot's length (40 hex characters), as the operator stores one.
      labelFlags: releaseLabelFlags({ [ReleaseLabels.fingerprint]: '0'.repeat(40), [ReleaseLabels.ownerKind]: 'Bench' }),
      postRenderFlags,
      budgetMs: FLOOR_BUDGET_MS,
      valuesFile,
    },
  );
}

function floorUninstallArgs(env: Env, release: string): string[] {
  return uninstallArgs({ release, namespace: env.namespace, timeoutMs: FLOOR_BUDGET_MS }, FLOOR_BUDGET_MS);
}

// ---------------------------------------------------------------------------------------------

interface OperatorSpec {
  name: 'operator-sdk' | 'chartpilot';
  kind: Kind;
  command: string;
  args: (watchesFile: string) => string[];
  extraEnv: (wrapper: string) => Record<string, string>;
  /** A log line that says the controller is running. */
  startedWhen: RegExp;
  countsHelm: boolean;
  /** Serves /metrics over HTTPS with token review on a port it logs (`metrics server listening`). */
  servesMetrics?: boolean;
}

/** --outputs: what the chart configmap's release gives, read from its ConfigMap (rendered and live). */
export const BENCH_OUTPUTS = {
  config: { expression: 'objects.ConfigMap[self.metadata.name + "-config"].metadata.name', type: 'string' },
  message: { expression: 'objects.ConfigMap[self.metadata.name + "-config"].data.message', type: 'string' },
} as const;

function operator(env: Env, spec: OperatorSpec): Contender {
  mkdirSync(env.dir, { recursive: true });
  const wrapper = helmWrapper(env.dir, benchHelm(env.binDir));
  // The chart copied next to watches.yaml, identical for both operators.
  const chart = join(env.dir, 'chart');
  cpSync(env.chart, chart, { recursive: true });
  const watchesFile = join(env.dir, 'watches.yaml');
  const remote = spec.name === 'chartpilot' ? env.remoteChart : undefined;
  const refs = spec.name === 'chartpilot' ? env.valuesFromSecrets : undefined;
  const outputs = spec.name === 'chartpilot' && env.outputs === true;
  writeFileSync(
    watchesFile,
    toYaml([{
      group: spec.kind.group,
      version: spec.kind.version,
      kind: spec.kind.kind,
      ...(remote?.entry ?? { chart }),
      ...(refs === undefined ? {} : { valuesFrom: { specField: 'valuesFrom' } }),
      ...(outputs ? { outputs: BENCH_OUTPUTS } : {}),
    }]),
  );
  /** CR `name`'s spec: with --values-from-secrets, one value from its Secret besides the phase's values. */
  const specOf = (name: string, crSpec: Record<string, unknown>): Record<string, unknown> =>
    refs === undefined ? crSpec : { ...crSpec, valuesFrom: [{ kind: 'Secret', name: referenceSecretOf(name, refs), valuesKey: 'token', targetPath: 'benchRef' }] };
  const logFile = join(env.dir, `${spec.name}.log`);
  let child: ChildProcess | undefined;
  let exited: string | undefined;
  let pid: number | undefined;
  let lastCpu = { self: 0, children: 0 };
  /** Where the current process's log starts in the file (a restart appends to it). */
  let logOffset = 0;
  const crLook: { last: CrLook | undefined } = { last: undefined };
  // One cgroup for the contender's whole run, restarts included, so its peak covers them all.
  const cgroup = env.memoryLimitMiB === undefined ? undefined : createMemoryCgroup(`bench-${spec.name}-${String(process.pid)}`, env.memoryLimitMiB);

  const logs = (): string => {
    try {
      return readFileSync(logFile, 'utf8');
    } catch {
      return '';
    }
  };
  /** The current process's log: read from its offset, not whole (10,000 CRs log megabytes). */
  const ownLogs = (): string => {
    let fd: number | undefined;
    try {
      fd = openSync(logFile, 'r');
      const size = fstatSync(fd).size;
      const buf = Buffer.alloc(Math.max(0, size - logOffset));
      readSync(fd, buf, 0, buf.length, logOffset);
      return buf.toString('utf8');
    } catch {
      return '';
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  };

  return {
    name: spec.name,
    get pid() { return pid; },
    get tree() { return { root: pid ?? -1, include: () => true }; },
    async start() {
      await installCrd(env.kube, spec.kind);
      const fd = openSync(logFile, 'a');
      try {
        const argv = [...spec.args(watchesFile), ...(remote?.args ?? [])];
        const run = cgroup === undefined ? { command: spec.command, args: argv } : cgroup.wrap(spec.command, argv);
        child = spawn(run.command, run.args, {
          cwd: env.dir,
          env: childEnv(env, { WATCH_NAMESPACE: env.namespace, ...spec.extraEnv(wrapper.path), ...remote?.env }),
          stdio: ['ignore', fd, fd],
        });
      } finally {
        closeSync(fd);
      }
      pid = child.pid;
      child.on('exit', (code, signal) => { exited = `exited with ${signal ?? String(code)}`; });
      child.on('error', (err) => { exited = `could not start: ${err.message}`; });
      const deadline = Date.now() + 120_000;
      while (!spec.startedWhen.test(ownLogs())) {
        if (exited !== undefined) throw new Error(`${spec.name} ${exited} before it started:\n${this.logTail()}`);
        if (Date.now() > deadline) throw new Error(`${spec.name} did not log ${String(spec.startedWhen)} within 120 s:\n${this.logTail()}`);
        await sleep(100);
      }
    },
    cpu() {
      // After exit /proc has nothing: keep the last figure (stop() happens after the last phase).
      const s = pid === undefined ? undefined : readStat(pid);
      // Live descendants too: warm helm workers are reaped only when they exit, so their CPU
      // (and that of what they reaped: post-renderers) is read from them while they run.
      if (s !== undefined && pid !== undefined) lastCpu = { self: s.self, children: s.children + liveDescendantsCpu(pid) };
      return lastCpu;
    },
    helmProcesses: () => (spec.countsHelm ? wrapper.count() : 0),
    ...(remote === undefined ? {} : { chartRequests: remote.requests }),
    async act(phase, names, crSpec) {
      if (phase === 'create' && refs !== undefined) {
        await pool(Array.from({ length: refs }, (_, i) => i), 20, (i) => createReferenceSecret(env.kube, env.namespace, `bench-ref-${String(i)}`));
      }
      if (phase === 'create') await pool(names, 20, (n) => createCr(env.kube, spec.kind, env.namespace, n, specOf(n, crSpec)));
      else if (phase === 'upgrade') await pool(names, 20, (n) => patchCrSpec(env.kube, spec.kind, env.namespace, n, specOf(n, crSpec)));
      else await deleteAllCrs(env.kube, spec.kind, env.namespace);
    },
    progress: (phase, names) => measureProgress(env, spec.kind, phase, names, crLook),
    ...(refs === undefined ? {} : {
      async changeReference(names: readonly string[]) {
        await rotateReferenceSecret(env.kube, env.namespace, 'bench-ref-0');
        return names.filter((n) => referenceSecretOf(n, refs) === 'bench-ref-0');
      },
      revisions: async () => new Map((await listCrs(env.kube, spec.kind, env.namespace)).map((cr) => [cr.metadata.name, cr.status?.deployedRelease?.revision])),
    }),
    ...(outputs ? {
      async outputsShown() {
        const crs = await listCrs(env.kube, spec.kind, env.namespace);
        const shown = crs.filter((cr) => Object.keys(BENCH_OUTPUTS).every((k) => typeof cr.status?.outputs?.[k] === 'string')).length;
        return { shown, of: crs.length };
      },
    } : {}),
    failure: () => (exited === undefined ? undefined : `${spec.name} ${exited}`),
    async stop() {
      if (child === undefined || exited !== undefined) return;
      const done = new Promise((resolve) => child?.once('exit', resolve));
      child.kill('SIGTERM');
      const timer = setTimeout(() => { child?.kill('SIGKILL'); }, 15_000);
      await done;
      clearTimeout(timer);
    },
    async restart(between) {
      await this.stop();
      try {
        logOffset = statSync(logFile).size;
      } catch {
        logOffset = 0;
      }
      exited = undefined;
      lastCpu = { self: 0, children: 0 };
      await between();
      await this.start();
    },
    logLine(re) {
      return ownLogs().split('\n').find((l) => re.test(l));
    },
    ...(spec.servesMetrics === true ? {
      async metricsTarget(): Promise<MetricsTarget> {
        const port = metricsPortOf(ownLogs().split('\n').find((l) => l.includes('"msg":"metrics server listening"')));
        if (port === undefined || pid === undefined) throw new Error(`${spec.name} logged no "metrics server listening" line with its address`);
        return { port, pid, token: await metricsReaderToken(env.kube, env.namespace) };
      },
      async shareSnapshots(): Promise<NamedShare[]> {
        return [{ name: spec.name, ...await snapshotShare(() => this.metricsTarget?.() ?? Promise.reject(new Error('no metrics'))) }];
      },
    } : {}),
    ...(cgroup === undefined ? {} : { cgroupFigures: () => cgroup.figures(), release: () => { cgroup.remove(); } }),
    logTail: () => logs().split('\n').slice(-30).join('\n'),
  };
}

/** The CRD kind an operator contender serves, e.g. WebAppOsdk, PodinfoChartpilot. */
export function operatorKind(name: 'operator-sdk' | 'chartpilot', kindPrefix: string): Kind {
  const kind = `${kindPrefix}${name === 'operator-sdk' ? 'Osdk' : 'Chartpilot'}`;
  return { group: 'bench.chartpilot.io', version: 'v1', kind, plural: `${kind.toLowerCase()}s` };
}

export function operatorSdk(env: Env, bin: string): Contender {
  return operator(env, {
    name: 'operator-sdk',
    kind: operatorKind('operator-sdk', env.kindPrefix),
    command: bin,
    args: (watches) => [
      'run',
      `--watches-file=${watches}`,
      '--metrics-bind-address=0',
      '--health-probe-bind-address=127.0.0.1:0',
      `--max-concurrent-reconciles=${env.concurrency}`,
    ],
    extraEnv: () => ({}),
    // controller-runtime, once the informers synced: "Starting workers" {"controller": …}
    startedWhen: /Starting workers/,
    countsHelm: false,
  });
}

/** One member of a ring of chartpilot replicas (`run --shards`): its name (POD_NAME) and the ring's Lease namespace. */
interface ShardMember {
  readonly podName: string;
  readonly ring: string;
}

export function chartpilot(env: Env, binJs: string, member?: ShardMember): Contender {
  const cpuProfDir = process.env.CHARTPILOT_BENCH_CPU_PROF;
  // More node flags for the operator in an experiment (`--trace-gc`: each GC's heap size in its log).
  const extraNodeFlags = (process.env.CHARTPILOT_BENCH_NODE_FLAGS ?? '').split(/\s+/).filter((f) => f !== '');
  return operator(env, {
    name: 'chartpilot',
    kind: operatorKind('chartpilot', env.kindPrefix),
    command: process.execPath,
    args: (watches) => [
      ...OPERATOR_NODE_FLAGS,
      // A CPU profile of the operator during the bench (node allows --cpu-prof only on the command line).
      // Set and not empty: an empty directory would make node refuse to start.
      ...(cpuProfDir === undefined || cpuProfDir === '' ? [] : ['--cpu-prof', `--cpu-prof-dir=${cpuProfDir}`]),
      ...extraNodeFlags,
      binJs,
      'run',
      '--watches-file', watches,
      '--max-concurrent-reconciles', String(env.concurrency),
      // /metrics as deploy/ runs it (HTTPS, each scrape's token reviewed), on a port the log names:
      // the bench scrapes it after each wave (bench/metrics-probe.ts).
      '--metrics-secure', '--metrics-require-rbac',
      '--metrics-bind-address', '127.0.0.1:0',
      '--health-probe-bind-address', '0',
      ...(member === undefined ? [] : ['--shards', '--leader-election-id', member.ring, '--leader-election-namespace', env.namespace]),
      ...(env.helmMode === undefined ? [] : ['--helm-mode', env.helmMode]),
      ...(env.helmWorkers === undefined ? [] : ['--helm-workers', String(env.helmWorkers)]),
    ],
    // As a user runs it outside a pod: POD_NAMESPACE names the namespace it runs in, where its
    // seal key is kept (the bench's own, which goes with it).
    extraEnv: (wrapper) => ({ HELM_BIN: wrapper, POD_NAMESPACE: env.namespace, ...(member === undefined ? {} : { POD_NAME: member.podName }) }),
    startedWhen: /controller started/,
    countsHelm: true,
    servesMetrics: true,
  });
}

/**
 * `replicas` chartpilot processes sharing the CRs (`run --shards`, one ring named after the bench,
 * its Leases in the bench namespace; each replica its own POD_NAME, log, helm counter and copy of
 * the chart). Figures are summed over the replicas (CPU, helm processes); RSS samples follow the
 * first replica, and replicaFigures() gives each one's CPU and peak RSS. The CRs are written and
 * progress measured once, through the first replica's view of the cluster.
 */
/** The bench's ring (`--leader-election-id`) for --replicas. */
const RING = 'bench-ring';

export function chartpilotReplicas(env: Env, binJs: string, replicas: number): Contender {
  const members = Array.from({ length: replicas }, (_, i) =>
    chartpilot({ ...env, dir: join(env.dir, `replica-${String(i)}`) }, binJs, { podName: `chartpilot-${String(i)}`, ring: RING }));
  const first = members[0];
  if (first === undefined) throw new Error('--replicas must be at least 1');
  const peaks = new Map<number, number>();
  /** Per replica name, since the last takeReplicaPeaks (VmRSS samples: VmHWM never falls, so not per phase). */
  let phasePeaks = new Map<string, number>();
  let sampler: NodeJS.Timeout | undefined;
  const nameOf = (i: number): string => `chartpilot-${String(i)}`;
  const sample = (): void => {
    members.forEach((m, i) => {
      const pid = m.pid;
      if (pid === undefined) return;
      const rss = statusKiB(pid, 'VmRSS') ?? 0;
      const kib = Math.max(rss, statusKiB(pid, 'VmHWM') ?? 0);
      peaks.set(pid, Math.max(peaks.get(pid) ?? 0, kib));
      phasePeaks.set(nameOf(i), Math.max(phasePeaks.get(nameOf(i)) ?? 0, rss));
    });
  };
  return {
    name: 'chartpilot',
    get pid() { return first.pid; },
    get tree() { return first.tree; },
    async start() {
      await Promise.all(members.map((m) => m.start()));
      sampler ??= setInterval(sample, 250);
      sampler.unref();
    },
    cpu() {
      const all = members.map((m) => m.cpu());
      return { self: all.reduce((t, c) => t + c.self, 0), children: all.reduce((t, c) => t + c.children, 0) };
    },
    helmProcesses: () => members.reduce((t, m) => t + m.helmProcesses(), 0),
    act: (phase, names, spec) => first.act(phase, names, spec),
    progress: (phase, names) => first.progress(phase, names),
    failure: () => members.map((m) => m.failure()).find((f) => f !== undefined),
    replicaFigures() {
      sample();
      return members.map((m, i) => {
        const c = m.cpu();
        return { name: nameOf(i), cpuSeconds: c.self + c.children, peakRssMiB: (peaks.get(m.pid ?? -1) ?? 0) / 1024 };
      });
    },
    replicaMarks() {
      return members.map((m, i) => {
        const c = m.cpu();
        return { name: nameOf(i), self: c.self, children: c.children, helm: m.helmProcesses() };
      });
    },
    takeReplicaPeaks() {
      sample();
      const out = phasePeaks;
      phasePeaks = new Map();
      return out;
    },
    async shareSnapshots() {
      const label = shardLabel(RING);
      const crs = await listCrs(env.kube, operatorKind('chartpilot', env.kindPrefix), env.namespace).catch(() => undefined);
      const labelled = (name: string): number | undefined => crs?.filter((c) => c.metadata.labels?.[label] === name).length;
      return Promise.all(members.map(async (m, i) => {
        const one = (await m.shareSnapshots?.())?.[0];
        const crsLabelled = labelled(nameOf(i));
        return { ...(one ?? { assignedCrs: null, ringMembers: null, dependentsOwned: null, dependentsUnbucketed: null, dependentBuckets: null, dependentSwaps: null }), name: nameOf(i), ...(crsLabelled === undefined ? {} : { crsLabelled }) };
      }));
    },
    async stop() {
      if (sampler !== undefined) clearInterval(sampler);
      sampler = undefined;
      await Promise.all(members.map((m) => m.stop()));
    },
    logTail: () => members.map((m, i) => `--- replica ${String(i)}\n${m.logTail()}`).join('\n'),
  };
}

/** utime+stime+cutime+cstime of every live descendant of `root`, in seconds. */
function liveDescendantsCpu(root: number): number {
  let sum = 0;
  for (const d of descendants(root)) {
    const s = readStat(d.pid);
    if (s !== undefined) sum += s.self + s.children;
  }
  return sum;
}

/** Which Secret CR `name` (web-0042) takes its value from, of `k`. */
export function referenceSecretOf(name: string, k: number): string {
  const index = Number(/(\d+)$/.exec(name)?.[1] ?? '0');
  return `bench-ref-${String(index % k)}`;
}

async function createReferenceSecret(kube: BenchKube, ns: string, name: string): Promise<void> {
  await kube.json('POST', `/api/v1/namespaces/${ns}/secrets`, { body: { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: ns }, stringData: { token: randomBytes(12).toString('hex'), other: 'x' } } });
}

async function rotateReferenceSecret(kube: BenchKube, ns: string, name: string): Promise<void> {
  await kube.json('PATCH', `/api/v1/namespaces/${ns}/secrets/${name}`, { body: { stringData: { token: randomBytes(12).toString('hex') } }, contentType: 'application/merge-patch+json' });
}
