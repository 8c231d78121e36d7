/**
 * Runs the real chartpilot binary against the shared test control plane: CRDs for test kinds, a
 * watches.yaml in a temp dir, a HELM_BIN wrapper that records every helm call (so tests can count
 * helm processes), and the operator's JSON logs captured for assertions and failure reports.
 */
import { appendFileSync, mkdtempSync, readFileSync, writeFileSync, chmodSync, cpSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { execa, type ResultPromise } from 'execa';
import { stringify } from 'yaml';
import { OPERATOR_NODE_FLAGS } from '../../src/cli/node-flags.js';
import { type TestCluster, waitFor } from './harness.js';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
export const BIN = join(REPO_ROOT, 'bin/chartpilot.js');
export const SAMPLE_CHART = join(REPO_ROOT, 'charts/webapp');
export const FIXTURE_CHARTS = join(REPO_ROOT, 'test/fixtures/charts');

export interface TestKind {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly plural: string;
}

/** A kind unique to one test file, so parallel test files never share CRs or CRDs. */
export function testKind(suffix: string): TestKind {
  const kind = `App${suffix.replace(/[^A-Za-z0-9]/g, '')}`;
  return { group: 'test.chartpilot.io', version: 'v1', kind, plural: `${kind.toLowerCase()}s` };
}

export async function installCrd(cluster: TestCluster, k: TestKind): Promise<void> {
  const crd = {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${k.plural}.${k.group}` },
    spec: {
      group: k.group,
      names: { kind: k.kind, plural: k.plural, singular: k.kind.toLowerCase(), listKind: `${k.kind}List` },
      scope: 'Namespaced',
      versions: [
        {
          name: k.version,
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
        },
      ],
    },
  };
  await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify(crd) });
  await waitFor(`CRD ${crd.metadata.name} established`, async () => {
    const r = await cluster.kubectl(['get', 'crd', crd.metadata.name, '-o', 'jsonpath={.status.conditions[?(@.type=="Established")].status}'], {
      allowFail: true,
    });
    return r.stdout.trim() === 'True';
  });
}

export interface WatchSpec {
  readonly kind: TestKind;
  readonly chart: string;
  readonly extra?: Record<string, unknown>;
}

export interface RunningOperator {
  readonly dir: string;
  readonly watchesFile: string;
  /** Every helm invocation's arguments (first line = subcommand), in order. */
  helmCalls(): string[];
  logs(): string;
  stop(signal?: NodeJS.Signals): Promise<number | undefined>;
  readonly process: ResultPromise;
}

/** Writes a watches.yaml (charts copied into the temp dir, so tests may edit them). */
export function writeWatches(dir: string, specs: readonly WatchSpec[]): string {
  const entries = specs.map((s) => {
    const chartDir = join(dir, 'charts', `${s.kind.kind.toLowerCase()}-${s.chart.split('/').pop() ?? 'chart'}`);
    if (!existsSync(chartDir)) cpSync(s.chart, chartDir, { recursive: true });
    return { group: s.kind.group, version: s.kind.version, kind: s.kind.kind, chart: chartDir, ...(s.extra ?? {}) };
  });
  const file = join(dir, 'watches.yaml');
  writeFileSync(file, stringify(entries));
  return file;
}

export interface StartOptions {
  readonly namespaces: readonly string[];
  readonly watches: readonly WatchSpec[];
  readonly args?: readonly string[];
  readonly env?: Record<string, string>;
  /** Reuse a directory (e.g. to restart an operator on the same watches.yaml). */
  readonly dir?: string;
  /** Don't wait for the "controller started" log line (for start-up failure tests). */
  readonly noWait?: boolean;
}

export async function startOperator(t: TestContext, cluster: TestCluster, opts: StartOptions): Promise<RunningOperator> {
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'chartpilot-op-'));
  const watchesFile = opts.dir !== undefined && opts.watches.length === 0 ? join(dir, 'watches.yaml') : writeWatches(dir, opts.watches);
  const callLog = join(dir, 'helm-calls.log');
  const wrapper = join(dir, 'helm-wrapper.sh');
  // Test instrumentation only: the operator itself never runs a shell.
  writeFileSync(wrapper, `#!/bin/sh\nprintf '%s\\n' "$*" >> '${callLog}'\nexec '${cluster.helmBin}' "$@"\n`);
  chmodSync(wrapper, 0o755);
  if (!existsSync(callLog)) writeFileSync(callLog, '');
  const logFile = join(dir, 'operator.log');

  const proc = execa(process.execPath, [...OPERATOR_NODE_FLAGS, BIN, 'run', '--watches-file', watchesFile, '--metrics-bind-address', '0', '--health-probe-bind-address', '0', ...(opts.args ?? [])], {
    env: {
      ...cluster.env,
      HELM_BIN: wrapper,
      WATCH_NAMESPACE: opts.namespaces.join(','),
      ...(opts.env ?? {}),
    },
    extendEnv: true,
    reject: false,
    all: true,
    buffer: false,
    cleanup: true,
    // A graceful stop drains running helm calls; don't escalate to SIGKILL before it could.
    forceKillAfterDelay: 60_000,
  });
  proc.all.on('data', (chunk: Buffer) => {
    appendFileSync(logFile, chunk);
  });

  let exited: number | undefined;
  const done = proc.then((r) => {
    exited = r.exitCode ?? -1;
    return exited;
  });

  const op: RunningOperator = {
    dir,
    watchesFile,
    process: proc,
    helmCalls: () =>
      readFileSync(callLog, 'utf8')
        .split('\n')
        .filter((l) => l !== '' && !l.startsWith('version')),
    logs: () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''),
    stop: async (signal: NodeJS.Signals = 'SIGTERM') => {
      if (exited === undefined) proc.kill(signal);
      return done;
    },
  };
  t.after(async () => {
    await op.stop('SIGKILL');
  });
  if (opts.noWait !== true) {
    try {
      await waitFor('operator started', () => {
        if (exited !== undefined) throw new Error(`operator exited with ${exited}:\n${op.logs()}`);
        return Promise.resolve(op.logs().includes('controller started'));
      });
    } catch (err) {
      t.diagnostic(op.logs());
      throw err;
    }
  }
  return op;
}

export interface Cr {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata: {
    name: string;
    namespace?: string;
    generation?: number;
    finalizers?: string[];
    uid?: string;
    annotations?: Record<string, string>;
  };
  readonly spec?: unknown;
  readonly status?: {
    observedGeneration?: number;
    conditions?: { type: string; status: string; reason: string; message: string }[];
    deployedRelease?: { name: string; revision?: number; chart?: string; version?: string; appVersion?: string };
  };
}

export async function applyCr(cluster: TestCluster, k: TestKind, namespace: string, name: string, spec: unknown, annotations?: Record<string, string>): Promise<void> {
  const cr = {
    apiVersion: `${k.group}/${k.version}`,
    kind: k.kind,
    metadata: { name, namespace, ...(annotations === undefined ? {} : { annotations }) },
    spec,
  };
  const r = await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify(cr), allowFail: true });
  if (r.exitCode !== 0) throw new Error(`kubectl apply failed: ${r.stderr}`);
}

export async function getCr(cluster: TestCluster, k: TestKind, namespace: string, name: string): Promise<Cr | undefined> {
  const r = await cluster.kubectl(['get', `${k.plural}.${k.group}`, name, '-n', namespace, '-o', 'json'], { allowFail: true });
  if (r.exitCode !== 0) return undefined;
  return JSON.parse(r.stdout) as Cr;
}

export function condition(cr: Cr | undefined, type: string): { status: string; reason: string; message: string } | undefined {
  return cr?.status?.conditions?.find((c) => c.type === type);
}

/** Waits until the CR's status satisfies `test`, failing with the last status seen and the operator's log tail. */
export async function waitForCr(
  cluster: TestCluster,
  k: TestKind,
  namespace: string,
  name: string,
  what: string,
  test: (cr: Cr) => boolean,
  op?: RunningOperator,
  timeoutMs = 90_000,
): Promise<Cr> {
  let last: Cr | undefined;
  try {
    return await waitFor(
      `${name}: ${what}`,
      async () => {
        last = await getCr(cluster, k, namespace, name);
        return last !== undefined && test(last) ? last : undefined;
      },
      { timeoutMs },
    );
  } catch (err) {
    const tail = op?.logs().split('\n').slice(-40).join('\n') ?? '';
    throw new Error(`${err instanceof Error ? err.message : String(err)}\nlast status: ${JSON.stringify(last?.status)}\noperator log tail:\n${tail}`, {
      cause: err,
    });
  }
}

export interface HelmListEntry {
  name: string;
  namespace: string;
  revision: string | number;
  status: string;
  chart: string;
}

export async function helmList(cluster: TestCluster, namespace: string): Promise<HelmListEntry[]> {
  const r = await cluster.helm(['list', '-n', namespace, '--deployed', '--failed', '--pending', '--superseded', '--uninstalling', '-o', 'json']);
  return JSON.parse(r.stdout) as HelmListEntry[];
}

export async function eventsFor(cluster: TestCluster, namespace: string, name: string): Promise<{ reason: string; type: string; message: string }[]> {
  const r = await cluster.kubectl(['get', 'events', '-n', namespace, '--field-selector', `involvedObject.name=${name}`, '-o', 'json']);
  return (JSON.parse(r.stdout) as { items: { reason: string; type: string; message: string }[] }).items;
}
