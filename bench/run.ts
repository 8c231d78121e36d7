/**
 * `npm run bench`: floor (plain helm), operator-sdk's helm-operator and chartpilot, one after
 * another, against one fresh control plane (kwok simulates the pods), the same chart and the same
 * concurrency. Writes bench/out/results-<timestamp>.{json,md}. Flags: bench/args.ts (--help).
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, release, tmpdir, totalmem } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { startControlPlane, stopControlPlane } from '../devcluster/control-plane.js';
import { repoRoot } from '../devcluster/paths.js';
import { startRegistry } from '../devcluster/registry.js';
import { provision } from '../devcluster/provision.js';
import { parseBenchArgs, USAGE, UsageError, type BenchOptions } from './args.js';
import { AuditLog } from './audit-log.js';
import { BENCH_CHARTS, chartDir as chartDirOf, chartMeta } from './charts.js';
import { deleteCrd, deleteNamespace, createNamespace, listCrs, type Kind } from './cluster-ops.js';
import { benchHelm, chartpilot, chartpilotReplicas, floor, operatorKind, operatorSdk, type Contender, type Env } from './contenders.js';
import { buildHelmOperator, cachedHelmOperator, HELM_OPERATOR_VERSION, type BuildResult } from './helm-operator.js';
import { createBenchKube, type BenchKube } from './kube.js';
import { MediansError, mediansMarkdown } from './medians.js';
import { cpuSeconds, statusKiB } from './proc.js';
import { computeRatios, toMarkdown, type BenchResults, type ContenderResult } from './report.js';
import { runScenarios } from './scenario.js';
import { errorMessage } from '../src/lib/errors.js';

const say = (line: string): void => { process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}\n`); };

/** What must be undone on Ctrl-C, newest first. */
const cleanups: (() => Promise<void>)[] = [];
const abort = new AbortController();

function onSignal(sig: NodeJS.Signals): void {
  if (abort.signal.aborted) return;
  say(`${sig}: stopping the contender and the control plane`);
  abort.abort();
  void (async () => {
    for (const c of [...cleanups].reverse()) await c().catch(() => undefined);
    process.exit(130);
  })();
}

function tryRun(cmd: string, args: string[]): string {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 30_000 }).trim();
  } catch {
    return 'unknown';
  }
}

function chartpilotVersion(root: string): string {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
  const commit = tryRun('git', ['-C', root, 'rev-parse', '--short', 'HEAD']);
  const dirty = tryRun('git', ['-C', root, 'status', '--porcelain']) === '' ? '' : '+dirty';
  return `${pkg.version} (${commit}${dirty})`;
}

/** Removes finalizers left on CRs (operator stopped mid-way), else namespace deletion hangs on them. */
async function dropFinalizers(kube: BenchKube, kind: Kind, ns: string): Promise<void> {
  const crs = await listCrs(kube, kind, ns).catch(() => []);
  for (const cr of crs) {
    await kube.json('PATCH', `/apis/${kind.group}/${kind.version}/namespaces/${ns}/${kind.plural}/${cr.metadata.name}`,
      { body: { metadata: { finalizers: null } }, contentType: 'application/merge-patch+json', allow: [404] });
  }
}

async function runContender(c: Contender, opts: BenchOptions, env: Env, kind: Kind | undefined, audit: AuditLog | undefined): Promise<ContenderResult> {
  const result: ContenderResult = { name: c.name, status: 'ok', scenarios: [] };
  cleanups.push(() => c.stop());
  try {
    await createNamespace(env.kube, env.namespace);
    const t = Date.now();
    await c.start();
    result.startupSeconds = (Date.now() - t) / 1000;
    if (c.pid !== undefined) {
      result.startupRssMiB = (statusKiB(c.pid, 'VmRSS') ?? 0) / 1024;
      say(`${c.name} started in ${result.startupSeconds.toFixed(1)} s (pid ${c.pid}, RSS ${result.startupRssMiB.toFixed(0)} MiB, CPU so far ${(cpuSeconds(c.pid) ?? 0).toFixed(1)} s)`);
    }
    const { scenarios, overall } = await runScenarios(c, {
      kube: env.kube,
      n: opts.n,
      scenarios: opts.scenarios,
      rollsOut: BENCH_CHARTS[opts.chart].rollsOut ?? true,
      idleSeconds: opts.idleSeconds,
      settleSeconds: opts.settleSeconds,
      phaseTimeoutMs: opts.phaseTimeoutSeconds * 1000,
      specs: BENCH_CHARTS[opts.chart].specs,
      log: say,
      signal: abort.signal,
      ...(audit === undefined ? {} : { measure: { audit, namespace: env.namespace, kind } }),
    });
    result.scenarios = scenarios;
    result.overall = overall;
    const outputs = await c.outputsShown?.();
    if (outputs !== undefined) say(`${c.name}: outputs: ${String(outputs.shown)} of ${String(outputs.of)} CRs show every output in their status`);
    // Before stop: a replica's VmHWM is gone once it exits.
    const replicas = c.replicaFigures?.();
    if (replicas !== undefined) result.replicas = replicas;
    const cgroup = c.cgroupFigures?.();
    if (cgroup !== undefined) result.cgroup = cgroup;
    const failure = c.failure();
    if (failure !== undefined) {
      result.status = 'failed';
      result.reason = `${failure}\n${c.logTail()}`;
    }
  } catch (err) {
    result.status = 'failed';
    result.reason = `${errorMessage(err)}\n${c.logTail()}`;
    say(`${c.name} failed: ${result.reason}`);
  } finally {
    await c.stop();
    c.release?.();
    cleanups.pop();
  }
  if (result.scenarios.some((s) => !s.converged)) say(`${c.name}: a scenario did not converge; see the results`);
  // Clean up before the next contender, so its figures don't include this one's garbage collection.
  say(`${c.name}: cleaning up namespace ${env.namespace}`);
  try {
    if (kind !== undefined) await dropFinalizers(env.kube, kind, env.namespace);
    await deleteNamespace(env.kube, env.namespace, 600_000);
    if (kind !== undefined) await deleteCrd(env.kube, kind, 120_000);
  } catch (err) {
    say(`cleanup after ${c.name} incomplete (later figures may be disturbed): ${errorMessage(err)}`);
  }
  return result;
}

async function main(argv: string[]): Promise<number> {
  if (Number(process.versions.node.split('.')[0]) < 24) {
    say(`node ${process.version} is too old (need 24): run through npm (npm run bench), which puts Node 24 first on PATH`);
    return 1;
  }
  let opts: BenchOptions | undefined;
  try {
    opts = parseBenchArgs(argv);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`error: ${err.message}\n\n${USAGE}`);
      return 2;
    }
    throw err;
  }
  if (opts === undefined) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (opts.medians !== undefined) {
    const runs = opts.medians.map((f) => JSON.parse(readFileSync(f, 'utf8')) as BenchResults);
    try {
      process.stdout.write(mediansMarkdown(runs));
    } catch (err) {
      if (!(err instanceof MediansError)) throw err;
      process.stderr.write(`error: ${err.message}\n`);
      return 2;
    }
    return 0;
  }
  if (opts.render !== undefined) {
    const earlier = JSON.parse(readFileSync(opts.render, 'utf8')) as BenchResults;
    process.stdout.write(toMarkdown(earlier));
    return 0;
  }
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const root = repoRoot();
  const benchChart = BENCH_CHARTS[opts.chart];
  let chartDir: string;
  let chartInfo: { name: string; version: string };
  try {
    chartDir = await chartDirOf(root, benchChart, say);
    chartInfo = chartMeta(chartDir);
  } catch (err) {
    say(`--chart ${opts.chart}: ${errorMessage(err)}`);
    return 1;
  }
  const startedAt = new Date();
  // Read once before any measurement: the first call runs `getconf`, a child of this process.
  cpuSeconds('self');

  // helm-operator: cached, given, built now (in the background, while the control plane starts),
  // or skipped.
  let helmOperatorBin = opts.helmOperatorBin ?? cachedHelmOperator();
  let build: Promise<BuildResult> | undefined;
  let buildInfo: BenchResults['helmOperatorBuild'];
  if (opts.contenders.includes('operator-sdk')) {
    if (helmOperatorBin !== undefined) buildInfo = { cached: true, ok: true };
    else if (opts.build) build = buildHelmOperator(say);
    else buildInfo = { cached: false, ok: false, error: 'not cached and --no-build/--smoke given' };
  }

  const binDir = opts.binDir ?? process.env.CHARTPILOT_TEST_BIN
    ?? await provision({ log: (line) => { if (!/: cached$|^provisioned in|^\//.test(line)) say(line); } });
  const work = mkdtempSync(join(tmpdir(), 'chartpilot-bench-'));
  const cpDir = join(work, 'control-plane');
  say(`scratch dir ${work}`);
  // Runs last on Ctrl-C (cleanups go newest first); without Ctrl-C the finally below decides.
  cleanups.push(() => {
    if (abort.signal.aborted && !opts.keep) rmSync(work, { recursive: true, force: true });
    return Promise.resolve();
  });
  cleanups.push(async () => {
    // stopControlPlane deletes its dir: with --keep, its logs (the audit log too) stay in the scratch dir.
    if (opts.keep || failed) {
      try {
        cpSync(join(cpDir, 'logs'), join(work, 'control-plane-logs'), { recursive: true });
      } catch { /* no control plane got that far */ }
    }
    await stopControlPlane(cpDir);
  });
  let failed = false;
  try {
    // The audit log of writes: who made each one (bench/audit.ts).
    const cp = await startControlPlane({ dir: cpDir, binDir, auditLog: true, log: (l) => { say(`control plane: ${l}`); } });
    const kube = createBenchKube(cp.kubeconfig);
    const audit = cp.auditLog === undefined ? undefined : new AuditLog(cp.auditLog, kube);
    cleanups.push(() => { kube.close(); return Promise.resolve(); });

    if (build !== undefined) {
      say('waiting for the helm-operator build before measuring anything (a Go build takes both cores)');
      const b = await build;
      buildInfo = b.ok ? { cached: false, ok: true, seconds: b.seconds } : { cached: false, ok: false, seconds: b.seconds, error: b.error };
      if (b.ok) helmOperatorBin = b.bin;
      say(b.ok ? `helm-operator built in ${b.seconds.toFixed(0)} s` : `helm-operator build failed after ${b.seconds.toFixed(0)} s: ${b.error}`);
    }

    const versions: BenchResults['versions'] = {
      node: process.version,
      helm: `${tryRun(benchHelm(binDir), ['version', '--template={{.Version}}'])} (${basename(benchHelm(binDir))})`,
      kubernetes: cp.version,
      helmOperator: helmOperatorBin === undefined ? `${HELM_OPERATOR_VERSION} (not available)` : tryRun(helmOperatorBin, ['version']).split('\n')[0] ?? 'unknown',
      chartpilot: chartpilotVersion(root),
    };
    const remoteChart = opts.chartSource === 'oci' ? await chartInRegistry(join(work, 'registry'), binDir, chartDir, chartInfo, opts.chartRefreshSeconds) : undefined;
    const contenders: ContenderResult[] = [];
    for (const name of opts.contenders) {
      if (abort.signal.aborted) break;
      const env: Env = {
        kube,
        kubeconfig: cp.kubeconfig,
        binDir,
        dir: join(work, name),
        namespace: `bench-${name}`,
        concurrency: opts.concurrency,
        chart: chartDir,
        kindPrefix: benchChart.kindPrefix,
        log: say,
        helmMode: opts.helmMode,
        helmWorkers: opts.helmWorkers,
        memoryLimitMiB: opts.memoryLimitMiB,
        valuesFromSecrets: opts.valuesFromSecrets,
        outputs: opts.outputs,
        ...(remoteChart === undefined ? {} : { remoteChart }),
      };
      say(`=== ${name}: N=${opts.n}, concurrency ${opts.concurrency}, chart ${chartInfo.name} ${chartInfo.version}`);
      let c: Contender;
      let kind: Kind | undefined;
      if (name === 'floor' || name === 'floor-postrender') {
        c = floor(env, name === 'floor-postrender');
      } else if (name === 'chartpilot') {
        c = opts.replicas > 1 ? chartpilotReplicas(env, join(root, 'bin', 'chartpilot.js'), opts.replicas) : chartpilot(env, join(root, 'bin', 'chartpilot.js'));
        kind = operatorKind('chartpilot', benchChart.kindPrefix);
      } else if (helmOperatorBin !== undefined) {
        c = operatorSdk(env, helmOperatorBin);
        kind = operatorKind('operator-sdk', benchChart.kindPrefix);
      } else {
        contenders.push({ name, status: 'skipped', reason: `helm-operator ${HELM_OPERATOR_VERSION} unavailable: ${buildInfo?.error ?? 'unknown'}`, scenarios: [] });
        say(`operator-sdk skipped: ${buildInfo?.error ?? ''}`);
        continue;
      }
      const r = await runContender(c, opts, env, kind, audit);
      if (r.status === 'failed') failed = true;
      contenders.push(r);
    }

    const partial: Omit<BenchResults, 'ratios'> = {
      startedAt: startedAt.toISOString(),
      finishedAt: new Date().toISOString(),
      command: `npm run bench --${argv.length === 0 ? '' : ` ${argv.join(' ')}`}`,
      parameters: { n: opts.n, scenarios: opts.scenarios, ...(opts.replicas > 1 ? { replicas: opts.replicas } : {}), concurrency: opts.concurrency, idleSeconds: opts.idleSeconds, settleSeconds: opts.settleSeconds, contenders: opts.contenders, chart: `${chartInfo.name} ${chartInfo.version}`, ...(opts.chartSource === 'oci' ? { chartSource: `oci, refresh every ${String(opts.chartRefreshSeconds)} s` } : {}) },
      machine: { cores: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', memoryMiB: totalmem() / 2 ** 20, kernel: release() },
      versions,
      ...(buildInfo === undefined ? {} : { helmOperatorBuild: buildInfo }),
      contenders,
    };
    const results: BenchResults = { ...partial, ratios: computeRatios(partial) };
    const outDir = resolve(opts.outDir ?? join(root, 'bench', 'out'));
    mkdirSync(outDir, { recursive: true });
    const stamp = startedAt.toISOString().replace(/[:.]/g, '-');
    const jsonFile = join(outDir, `results-${stamp}.json`);
    const mdFile = join(outDir, `results-${stamp}.md`);
    writeFileSync(jsonFile, `${JSON.stringify(results, null, 2)}\n`);
    const md = toMarkdown(results);
    writeFileSync(mdFile, md);
    process.stdout.write(`${md}\n`);
    say(`results: ${jsonFile}\n         ${mdFile}`);
    if (results.contenders.some((c) => c.scenarios.some((s) => !s.converged))) failed = true;
  } catch (err) {
    failed = true;
    say(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  } finally {
    say('stopping the control plane');
    for (const c of [...cleanups].reverse()) await c().catch((err: unknown) => { say(`cleanup: ${String(err)}`); });
    cleanups.length = 0;
    if (opts.keep || failed) say(`kept ${work} (logs of the operators and the control plane)`);
    else rmSync(work, { recursive: true, force: true });
  }
  return failed ? 1 : 0;
}

/**
 * The bench's chart (--chart) pushed with the real `helm push` to a real OCI registry next to the control plane
 * (TLS from its own CA, htpasswd), and what chartpilot needs to pull it: credentials in a Helm
 * registry config file (as a mounted `helm registry login` would give), the CA through
 * NODE_EXTRA_CA_CERTS.
 */
async function chartInRegistry(dir: string, binDir: string, chart: string, meta: { name: string; version: string }, refreshSeconds: number): Promise<NonNullable<Env['remoteChart']>> {
  const password = randomBytes(9).toString('hex');
  const registry = await startRegistry({ dir, binDir, users: { bench: password } });
  cleanups.push(() => registry.destroy());
  const registryConfig = join(dir, 'operator-registry.json');
  writeFileSync(registryConfig, JSON.stringify({ auths: { [registry.host]: { auth: Buffer.from(`bench:${password}`).toString('base64') } } }), { mode: 0o600 });
  const helmEnv = { ...process.env, HELM_REGISTRY_CONFIG: registryConfig, HELM_CACHE_HOME: join(dir, 'helm-cache'), HELM_CONFIG_HOME: join(dir, 'helm-config') };
  const helm = join(binDir, 'helm');
  execFileSync(helm, ['package', chart, '--destination', join(dir, 'packages')], { env: helmEnv, stdio: 'ignore' });
  const tgz = join(dir, 'packages', readdirSync(join(dir, 'packages'))[0] ?? '');
  execFileSync(helm, ['push', tgz, `oci://${registry.host}/charts`, '--ca-file', registry.caFile], { env: helmEnv, stdio: 'ignore' });
  // helm push names the repository after Chart.yaml's name; a range (not the exact version), so
  // that every refresh resolves it from the tag list.
  say(`chart pushed to oci://${registry.host}/charts/${meta.name}; chartpilot re-resolves it every ${String(refreshSeconds)} s`);
  return {
    entry: { chart: `oci://${registry.host}/charts/${meta.name}`, chartVersion: `>=${meta.version}` },
    env: { HELM_REGISTRY_CONFIG: registryConfig, NODE_EXTRA_CA_CERTS: registry.caFile },
    args: ['--chart-refresh-interval', `${String(refreshSeconds)}s`, '--chart-cache-dir', join(dir, 'cache')],
    requests: () => registry.requests().filter((l) => l.endsWith('"chartpilot"')).length,
  };
}

process.exitCode = await main(process.argv.slice(2));
