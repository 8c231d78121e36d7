// The integration tests' handle on a control plane: the run's own (started once by
// global-setup.ts) or a private one, kubectl/helm wrappers, per-test namespaces and a few queries.
// Waiting is wait.ts; CRDs crd.ts; the operator process operator.ts and operator-log.ts; custom
// resources crs.ts; the usual test setup scenario.ts.
//
//   const c = await testCluster();
//   it('…', async (t) => {
//     const ns = await newNamespace(t, 'mytest');
//     await applyYaml(c, manifest, ns);
//     await waitFor('deployment web ready', async () => (await getJson<Deployment>(c, ['get', 'deploy', 'web', '-n', ns])).status?.readyReplicas === 1);
//   });
import { randomBytes } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import type { TestContext } from 'node:test';
import { execa } from 'execa';
import { defaultBinDir, repoRoot } from '../../devcluster/paths.js';
import { isNotFound } from '../../src/kube/errors.js';
import { errorMessage } from '../../src/lib/errors.js';
import { createKubeClient, loadKubeConfig, type KubeClient, type KubeConnection } from '../../src/kube/rest.js';
import { InProcessGet, parseKubectlGet } from './kubectl-get.js';
import { TEST_NAMESPACE_LABEL } from './namespace-reaper.js';
import { waitFor } from './wait.js';

export interface RunOptions {
  /** Written to the command's stdin. */
  input?: string;
  /** Resolve with the non-zero exit code instead of throwing. */
  allowFail?: boolean;
}

export interface RunResult {
  stdout: string;
  stderr: string;
  exitCode: number;
}

export interface TestCluster {
  kubeconfig: string;
  binDir: string;
  helmBin: string;
  /** chartpilot-helm (helm plus the warm worker) when provisioned: what the operator runs by default. */
  warmHelmBin: string | undefined;
  kubectlBin: string;
  /**
   * Environment for anything a test spawns (the operator, helm, kubectl): this process's env plus
   * KUBECONFIG, PATH with binDir first, HELM_BIN, and HELM_{CACHE,CONFIG,DATA}_HOME in a temp dir
   * of this test process, so tests never touch the developer's helm repos or each other's.
   */
  env: Record<string, string>;
  /** The control plane's state dir when global setup started it (for restartComponent); else undefined. */
  stateDir: string | undefined;
  kubectl(args: string[], opts?: RunOptions): Promise<RunResult>;
  helm(args: string[], opts?: RunOptions): Promise<RunResult>;
  /**
   * An API client of this process as the cluster's admin, for what the harness itself does on
   * every test (namespaces, CRDs): a kubectl process costs ~0.15 CPU-s and its discovery requests.
   */
  api(): KubeClient;
}

// A command that hangs (e.g. a watch by mistake) must fail the test, not stall the run.
const COMMAND_TIMEOUT_MS = 120_000;

let cluster: Promise<TestCluster> | undefined;

/** The control plane of this test run (memoised per test process). */
export function testCluster(): Promise<TestCluster> {
  cluster ??= connect();
  return cluster;
}

async function connect(): Promise<TestCluster> {
  const kubeconfig = findKubeconfig();
  const binDir = process.env.CHARTPILOT_TEST_BIN ?? defaultBinDir();
  const helmBin = join(binDir, 'helm');
  const warmHelmBin = existsSync(join(binDir, 'chartpilot-helm')) ? join(binDir, 'chartpilot-helm') : undefined;
  const kubectlBin = join(binDir, 'kubectl');
  for (const bin of [helmBin, kubectlBin]) {
    if (!existsSync(bin)) throw new Error(`${bin} is missing: run npm run cluster:provision`);
  }
  const helmHome = await mkdtemp(join(tmpdir(), 'chartpilot-helm-'));
  process.once('exit', () => { rmSync(helmHome, { recursive: true, force: true }); });

  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  // Set by the test runner for its children; a node process a test spawns is not a test file.
  delete env.NODE_TEST_CONTEXT;
  Object.assign(env, {
    KUBECONFIG: kubeconfig,
    PATH: [binDir, env.PATH ?? ''].join(delimiter),
    HELM_BIN: helmBin,
    HELM_CACHE_HOME: join(helmHome, 'cache'),
    HELM_CONFIG_HOME: join(helmHome, 'config'),
    HELM_DATA_HOME: join(helmHome, 'data'),
  });

  return handle({ kubeconfig, binDir, helmBin, warmHelmBin, kubectlBin, env, stateDir: process.env.CHARTPILOT_TEST_CLUSTER_DIR });
}

/**
 * A handle on another control plane (a test file's private one, in `stateDir`), with the same
 * binaries and helm home as `base`.
 */
export function otherCluster(base: TestCluster, kubeconfig: string, stateDir: string): TestCluster {
  return handle({ ...base, kubeconfig, stateDir, env: { ...base.env, KUBECONFIG: kubeconfig } });
}

function handle(c: Omit<TestCluster, 'kubectl' | 'helm' | 'api'>): TestCluster {
  let conn: KubeConnection | undefined;
  let client: KubeClient | undefined;
  const connection = (): KubeConnection => (conn ??= loadKubeConfig({ files: [c.env.KUBECONFIG ?? c.kubeconfig] }));
  const api = (): KubeClient => (client ??= createKubeClient(connection(), { userAgent: 'chartpilot-test-harness' }));
  let gets: InProcessGet | undefined;
  /** `kubectl get … -o json` in this process when it is a plain form (kubectl-get.ts); else undefined. */
  const inProcess = async (args: string[]): Promise<RunResult | undefined> => {
    const req = parseKubectlGet(args);
    if (req === undefined) return undefined;
    gets ??= new InProcessGet(api(), connection().namespace ?? 'default');
    // Anything unexpected (no connection, say): the real kubectl answers instead.
    return gets.run(req).catch(() => undefined);
  };
  const run = async (bin: string, args: string[], opts: RunOptions = {}): Promise<RunResult> => {
    const answered = bin === c.kubectlBin && opts.input === undefined ? await inProcess(args) : undefined;
    if (answered !== undefined) {
      if (answered.exitCode !== 0 && opts.allowFail !== true) throw new Error(`kubectl ${args.join(' ')} failed (exit ${String(answered.exitCode)}): ${answered.stderr}`);
      return answered;
    }
    const r = await execa(bin, args, {
      env: c.env,
      extendEnv: false,
      reject: false,
      timeout: COMMAND_TIMEOUT_MS,
      ...(opts.input === undefined ? { stdin: 'ignore' as const } : { input: opts.input }),
    });
    const result: RunResult = { stdout: r.stdout, stderr: r.stderr, exitCode: r.exitCode ?? -1 };
    if (result.exitCode !== 0 && opts.allowFail !== true) {
      const name = bin.split('/').at(-1) ?? bin;
      throw new Error(`${name} ${args.join(' ')} failed (${r.timedOut ? 'timed out' : `exit ${String(r.exitCode)}`}): ${r.stderr || r.message}`);
    }
    return result;
  };
  return { ...c, kubectl: (args, opts) => run(c.kubectlBin, args, opts), helm: (args, opts) => run(c.helmBin, args, opts), api };
}

function findKubeconfig(): string {
  const fromSetup = process.env.CHARTPILOT_TEST_KUBECONFIG;
  if (fromSetup) return fromSetup;
  // A test file run on its own (node --test dist/test/integration/x.test.js) has no global
  // setup; a control plane from `npm run cluster:up` serves it.
  const dev = join(repoRoot(), '.cluster', 'kubeconfig');
  if (existsSync(dev)) return dev;
  throw new Error(
    'no test cluster: run integration tests with `npm test` (its global setup starts one), '
    + 'or start one with `npm run cluster:up`, or set CHARTPILOT_TEST_KUBECONFIG',
  );
}

/**
 * Creates a namespace with a unique name for this test and deletes it after the test (without
 * waiting for it to finish terminating). Resolves once its default ServiceAccount exists, since
 * pods cannot be created before that.
 */
export async function newNamespace(t: TestContext, prefix = 'test', cluster?: TestCluster): Promise<string> {
  const c = cluster ?? (await testCluster());
  const base = prefix.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 50) || 'test';
  const name = `${base}-${randomBytes(4).toString('hex')}`;
  const ns = { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { [TEST_NAMESPACE_LABEL]: 'true' } } };
  await c.api().request('POST', '/api/v1/namespaces', { body: ns });
  // Not waiting for it to go (kubectl delete --wait=false). What a stopped operator's finalizers
  // still hold there is cleared by the test runner's namespace reaper (namespace-reaper.ts) once
  // the namespace has been terminating for a while.
  // Reported, not thrown: node:test stops at the first after-hook that fails, so a throw here (the
  // API server broken by the test itself) would skip the hooks registered later, the operator's
  // SIGKILL among them, and the live operator would keep the test file from ever ending.
  t.after(async () => {
    await c.api().request('DELETE', `/api/v1/namespaces/${name}`).catch((err: unknown) => {
      if (!isNotFound(err)) t.diagnostic(`namespace ${name} left behind: ${errorMessage(err)}`);
    });
  });
  await waitFor(`ServiceAccount default in namespace ${name}`, async () =>
    (await c.kubectl(['get', 'serviceaccount', 'default', '-n', name, '-o', 'json'], { allowFail: true })).exitCode === 0,
  { timeoutMs: 30_000, intervalMs: 100 });
  return name;
}

/** `kubectl apply -f -` of yamlText (in namespace, if given). */
export async function applyYaml(c: TestCluster, yamlText: string, namespace?: string): Promise<RunResult> {
  return c.kubectl(['apply', '-f', '-', ...(namespace === undefined ? [] : ['-n', namespace])], { input: yamlText });
}

/**
 * `kubectl <args> -o json`, parsed. T is the shape the caller expects (not checked at runtime);
 * a missing object throws (use kubectl with allowFail to test for absence).
 */
export async function getJson<T = unknown>(c: TestCluster, args: string[]): Promise<T> {
  const r = await c.kubectl([...args, '-o', 'json']);
  return JSON.parse(r.stdout) as T;
}
