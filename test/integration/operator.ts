// The real chartpilot binary as a test runs it: a watches.yaml in a temp dir, a HELM_BIN wrapper
// that records every helm call (so tests can count helm processes), its output captured for
// assertions and failure reports, and stopped (SIGKILL) when the test ends.
import { appendFileSync, chmodSync, cpSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, type TestContext } from 'node:test';
import { execa, type ResultPromise } from 'execa';
import { stringify } from 'yaml';
import { OPERATOR_NODE_FLAGS } from '../../src/cli/node-flags.js';
import { isAlreadyExists } from '../../src/kube/errors.js';
import { errorMessage } from '../../src/lib/errors.js';
import type { TestKind } from './crd.js';
import { BIN } from './fixtures.js';
import type { TestCluster } from './harness.js';
import { waitFor } from './wait.js';

/**
 * The namespace the tests' operators run in, given as a user running `chartpilot run` outside a
 * pod gives it: POD_NAMESPACE (without it the operator refuses to start). Their seal key is kept
 * there, one for every test's operator, so that an operator started again, or a second one,
 * reads the records the first wrote; `chartpilot adopt` is pointed at it with --operator-namespace.
 * A test that sets POD_NAMESPACE (or --leader-election-namespace) itself runs its operator there.
 */
export const OPERATOR_NAMESPACE = 'chartpilot-tests';

/** Per control plane (a test file may start a private one): made once, kept for the whole run. */
const operatorNamespaces = new Map<string, Promise<void>>();

async function ensureOperatorNamespace(t: TestContext, cluster: TestCluster): Promise<void> {
  const key = cluster.env.KUBECONFIG ?? cluster.kubeconfig;
  let made = operatorNamespaces.get(key);
  if (made === undefined) {
    made = cluster
      .api()
      .request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: OPERATOR_NAMESPACE } } })
      .then(
        () => undefined,
        (err: unknown) => {
          if (isAlreadyExists(err)) return;
          // Not fatal here: the operator says so itself (it cannot make its seal key), and a
          // later start tries again.
          operatorNamespaces.delete(key);
          t.diagnostic(`namespace ${OPERATOR_NAMESPACE} not created: ${errorMessage(err)}`);
        },
      );
    operatorNamespaces.set(key, made);
  }
  await made;
}

/** The compiled helm-relay.ts, beside this module. */
const HELM_RELAY = fileURLToPath(new URL('./helm-relay.js', import.meta.url));

/**
 * Operators this test file started that have not exited. Each test kills its own in an after-hook,
 * but node:test skips the after-hooks registered after one that failed, and a live operator keeps
 * the file's process from ever ending: this file-level hook kills whatever is left.
 */
const running = new Set<RunningOperator>();
after(async () => {
  await Promise.all([...running].map((op) => op.stop('SIGKILL')));
});

export interface WatchSpec {
  readonly kind: TestKind;
  readonly chart: string;
  /** More fields of the watches.yaml entry (selector, overrideValues, …). */
  readonly extra?: Record<string, unknown>;
}

export interface StartOptions {
  /** WATCH_NAMESPACE; [] watches every namespace. */
  readonly namespaces: readonly string[];
  readonly watches: readonly WatchSpec[];
  readonly args?: readonly string[];
  readonly env?: Record<string, string>;
  /** Run in this directory (e.g. one holding a helm stand-in); a new temp dir otherwise. */
  readonly dir?: string;
  /** Don't wait for the "controller started" log line (start-up failures, standby replicas). */
  readonly noWait?: boolean;
  /** A command that execs the operator, e.g. ['prlimit', '--nofile=1024:1024'] (it keeps the pid). */
  readonly launcher?: readonly string[];
}

export interface RunningOperator {
  /** Its directory: watches.yaml, charts/ (copies the test may edit), operator.log, helm-calls.log. */
  readonly dir: string;
  readonly watchesFile: string;
  readonly process: ResultPromise;
  /** Every helm invocation's arguments (first word = subcommand), in order; `helm version` left out. */
  helmCalls(): string[];
  /** Everything it wrote to stdout and stderr (of every operator run in `dir`). */
  logs(): string;
  /** Sends `signal` unless it has exited, and resolves with its exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | undefined>;
  /** Its exit code once it has exited by itself; fails after timeoutMs. */
  exitCode(timeoutMs: number): Promise<number>;
}

/** Writes dir/watches.yaml for `specs`, with each chart copied into dir/charts (so tests may edit it). */
export function writeWatches(dir: string, specs: readonly WatchSpec[]): string {
  const entries = specs.map((s) => {
    // A chart from a registry (oci://…, or a name in extra.repository) is named, not copied.
    if (s.chart.startsWith('oci://') || s.extra?.['repository'] !== undefined) {
      return { group: s.kind.group, version: s.kind.version, kind: s.kind.kind, chart: s.chart, ...(s.extra ?? {}) };
    }
    const chartDir = join(dir, 'charts', `${s.kind.kind.toLowerCase()}-${s.chart.split('/').pop() ?? 'chart'}`);
    if (!existsSync(chartDir)) cpSync(s.chart, chartDir, { recursive: true });
    return { group: s.kind.group, version: s.kind.version, kind: s.kind.kind, chart: chartDir, ...(s.extra ?? {}) };
  });
  const file = join(dir, 'watches.yaml');
  writeFileSync(file, stringify(entries));
  return file;
}

/**
 * Starts the operator and (unless noWait) resolves once it logged "controller started". With a
 * `dir` and no watches it runs on the watches.yaml already there: a restart.
 */
export async function startOperator(t: TestContext, cluster: TestCluster, opts: StartOptions): Promise<RunningOperator> {
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'chartpilot-op-'));
  const watchesFile = opts.dir !== undefined && opts.watches.length === 0 ? join(dir, 'watches.yaml') : writeWatches(dir, opts.watches);
  const callLog = join(dir, 'helm-calls.log');
  const wrapper = join(dir, 'helm-wrapper.sh');
  // Test instrumentation only: the operator itself never runs a shell. A warm worker or the
  // engine (no arguments, CHARTPILOT_HELM_WORKER=1 or CHARTPILOT_HELM_ENGINE=1) is started behind
  // helm-relay.ts, which logs its calls.
  const helm = cluster.warmHelmBin ?? cluster.helmBin;
  writeFileSync(
    wrapper,
    '#!/bin/sh\n' +
      `if [ $# -eq 0 ] && { [ "\${CHARTPILOT_HELM_WORKER:-}" = 1 ] || [ "\${CHARTPILOT_HELM_ENGINE:-}" = 1 ]; }; then exec '${process.execPath}' '${HELM_RELAY}' '${callLog}' '${helm}'; fi\n` +
      `printf '%s\\n' "$*" >> '${callLog}'\nexec '${helm}' "$@"\n`,
  );
  chmodSync(wrapper, 0o755);
  if (!existsSync(callLog)) writeFileSync(callLog, '');
  const logFile = join(dir, 'operator.log');

  await ensureOperatorNamespace(t, cluster);
  const command = [process.execPath, ...OPERATOR_NODE_FLAGS, BIN, 'run', '--watches-file', watchesFile, '--metrics-bind-address', '0', '--health-probe-bind-address', '0', ...(opts.args ?? [])];
  const [file = process.execPath, ...args] = [...(opts.launcher ?? []), ...command];
  const proc = execa(file, args, {
    env: {
      ...cluster.env,
      HELM_BIN: wrapper,
      WATCH_NAMESPACE: opts.namespaces.join(','),
      POD_NAMESPACE: OPERATOR_NAMESPACE,
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
    exitCode: (timeoutMs) => waitFor('operator exit', () => Promise.resolve(exited), { timeoutMs, intervalMs: 100 }),
  };
  running.add(op);
  void done.then(() => running.delete(op));
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
