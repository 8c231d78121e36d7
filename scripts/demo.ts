// `npm run demo`: the README's first quick-start command. Uses the cluster KUBECONFIG reaches, or
// starts the local control plane; installs the CRDs, runs the operator on watches.yaml, applies
// the sample WebApp and shows it becoming Ready; then streams the operator's logs until Ctrl-C,
// which stops everything the demo started.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { execa } from 'execa';
import { OPERATOR_NODE_FLAGS } from '../src/cli/node-flags.js';
import { isHealthy, startControlPlane, stopControlPlane } from '../devcluster/control-plane.js';
import { provision } from '../devcluster/provision.js';
import { repoRoot } from '../devcluster/paths.js';
import { errorMessage } from '../src/lib/errors.js';

const root = repoRoot();
const say = (line: string): void => {
  process.stderr.write(`\x1b[1mdemo:\x1b[0m ${line}\n`);
};
const DEMO_NAMESPACE = 'chartpilot-demo';
/**
 * Where the operator "runs" (POD_NAMESPACE, as outside a pod it must be told) and keeps its seal
 * key: deploy/'s namespace, so an operator deployed from deploy/ later finds the same key.
 */
const OPERATOR_NAMESPACE = 'chartpilot-system';
const READY_TIMEOUT_MS = 180_000;

interface Kube {
  kubeconfig: string;
  kubectl: string;
  /** The demo started this control plane and stops it on exit. */
  startedDir: string | undefined;
}

async function reachable(kubectl: string, kubeconfig: string): Promise<boolean> {
  const r = await execa(kubectl, ['--kubeconfig', kubeconfig, 'version', '-o', 'json', '--request-timeout=5s'], { reject: false });
  return r.exitCode === 0;
}

async function cluster(binDir: string): Promise<Kube> {
  const kubectl = join(binDir, 'kubectl');
  const given = process.env.KUBECONFIG;
  if (given !== undefined && given !== '' && (await reachable(kubectl, given))) {
    say(`using the cluster KUBECONFIG points at (${given})`);
    return { kubeconfig: given, kubectl, startedDir: undefined };
  }
  const dir = join(root, '.cluster');
  if (await isHealthy(dir)) {
    say(`using the local control plane already running in ${dir} (npm run cluster:down stops it)`);
    return { kubeconfig: join(dir, 'kubeconfig'), kubectl, startedDir: undefined };
  }
  await stopControlPlane(dir);
  say('starting the local control plane (etcd, kube-apiserver, controller manager, scheduler, kwok)…');
  const cp = await startControlPlane({ dir, binDir, log: say });
  say(`control plane ${cp.version} ready in ${(cp.startupMs / 1000).toFixed(1)} s`);
  return { kubeconfig: cp.kubeconfig, kubectl, startedDir: dir };
}

async function main(): Promise<number> {
  const binDir = await provision({ log: say });
  const kube = await cluster(binDir);
  const kubectl = (args: string[], input?: string): Promise<{ stdout: string }> =>
    execa(kube.kubectl, ['--kubeconfig', kube.kubeconfig, ...args], input === undefined ? {} : { input });

  let operator: ChildProcess | undefined;
  let stopping = false;
  const stopAll = async (): Promise<void> => {
    if (stopping) return;
    stopping = true;
    if (operator !== undefined && operator.exitCode === null) {
      say('stopping the operator…');
      const exited = new Promise<void>((resolve) => operator?.once('exit', () => { resolve(); }));
      operator.kill('SIGTERM');
      await exited;
    }
    if (kube.startedDir !== undefined) {
      say('stopping the local control plane…');
      await stopControlPlane(kube.startedDir);
    }
  };
  const interrupted = new Promise<void>((resolve) => {
    process.once('SIGINT', () => { resolve(); });
    process.once('SIGTERM', () => { resolve(); });
  });

  try {
    const crds = join(root, 'deploy', 'crds');
    say('installing the CRDs of watches.yaml…');
    if (existsSync(crds) && readdirSync(crds).length > 0) {
      await kubectl(['apply', '-f', crds]);
    } else {
      const generated = await execa(process.execPath, [join(root, 'bin', 'chartpilot.js'), 'generate', 'crd', '--watches-file', join(root, 'watches.yaml')]);
      await kubectl(['apply', '-f', '-'], generated.stdout);
    }
    await kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd/webapps.demo.chartpilot.io']);
    for (const ns of [OPERATOR_NAMESPACE, DEMO_NAMESPACE]) {
      await kubectl(['create', 'namespace', ns, '--dry-run=client', '-o', 'yaml']).then((r) => kubectl(['apply', '-f', '-'], r.stdout));
    }

    say(`starting the operator (POD_NAMESPACE=${OPERATOR_NAMESPACE} chartpilot run --watches-file watches.yaml); its JSON logs follow`);
    operator = spawn(process.execPath, [...OPERATOR_NODE_FLAGS, join(root, 'bin', 'chartpilot.js'), 'run', '--watches-file', join(root, 'watches.yaml'), '--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '127.0.0.1:0'], {
      // chartpilot-helm, which the provisioning built: the operator keeps it warm (plain helm would
      // run as a process per call, after a failed warm-up).
      env: { ...process.env, KUBECONFIG: kube.kubeconfig, HELM_BIN: join(binDir, 'chartpilot-helm'), POD_NAMESPACE: OPERATOR_NAMESPACE },
      stdio: ['ignore', 'inherit', 'inherit'],
      // Its own process group: a terminal's Ctrl-C reaches only the demo, which then stops the
      // operator with one SIGTERM (a second signal would make it skip the graceful drain).
      detached: true,
    });
    const child = operator;
    process.once('exit', () => {
      if (child.exitCode === null) child.kill('SIGKILL');
    });
    const operatorExit = new Promise<number>((resolve) => operator?.once('exit', (code) => { resolve(code ?? 1); }));

    const sample = join(root, 'deploy', 'samples', 'webapp.yaml');
    say(`applying the sample WebApp (${sample}) in namespace ${DEMO_NAMESPACE}`);
    await kubectl(['apply', '-n', DEMO_NAMESPACE, '-f', sample]);

    const deadline = Date.now() + READY_TIMEOUT_MS;
    let table = '';
    for (;;) {
      table = (await kubectl(['get', 'webapps', '-n', DEMO_NAMESPACE])).stdout;
      // The State column (status.chartpilot.summary.state), right after the name.
      if (/^\S+\s+Ready\s/mu.test(table)) break;
      if (operator.exitCode !== null) throw new Error(`the operator exited with ${String(operator.exitCode)}`);
      if (Date.now() > deadline) throw new Error(`the sample did not become Ready within ${READY_TIMEOUT_MS / 1000} s:\n${table}`);
      await delay(1000);
    }
    say(`the sample is Ready:\n\n$ kubectl get webapps -n ${DEMO_NAMESPACE}\n${table}`);
    say(`try: KUBECONFIG=${kube.kubeconfig} ${kube.kubectl} get webapps,deployments,services -n ${DEMO_NAMESPACE}`);
    say('the operator keeps running; press Ctrl-C to stop everything the demo started');
    const code = await Promise.race([interrupted.then(() => 0), operatorExit]);
    await stopAll();
    return code;
  } catch (err) {
    say(errorMessage(err));
    await stopAll();
    return 1;
  }
}

process.exitCode = await main();
