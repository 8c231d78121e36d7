// Global setup for `node --test --test-global-setup=dist/test/integration/global-setup.js`
// (test/run-tests.js passes it whenever integration tests are part of the run): ONE control plane
// for the whole run, shared by every test file; tests isolate themselves by namespace.
//
// The runner spawns each test file as a child process after globalSetup has resolved, and the
// children inherit process.env (verified on Node 24.21), so env vars are the hand-over: they are
// per run, which keeps concurrent `npm test` runs in one working tree apart.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startControlPlane, stopControlPlane } from '../../devcluster/control-plane.js';
import { provision } from '../../devcluster/provision.js';
import { createKubeClient, loadKubeConfig } from '../../src/kube/rest.js';
import { startNamespaceReaper, type NamespaceReaper } from './namespace-reaper.js';

const say = (line: string): void => { process.stderr.write(`[test cluster] ${line}\n`); };

let startedDir: string | undefined;
let reaper: NamespaceReaper | undefined;

/** Keeps finished tests' namespaces from lingering in Terminating (namespace-reaper.ts). */
function startReaper(kubeconfig: string): void {
  const client = createKubeClient(loadKubeConfig({ files: [kubeconfig] }), { userAgent: 'chartpilot-test-namespace-reaper' });
  let reported = false;
  reaper = startNamespaceReaper(client, {
    onError: (err) => {
      if (reported) return;
      reported = true; // once: a sweep fails the same way each time while the cluster is gone
      say(`namespace reaper: ${err instanceof Error ? err.message : String(err)}`);
    },
    onCleared: (namespace, count) => { say(`namespace reaper: removed the finalizers of ${String(count)} objects left in namespace ${namespace}`); },
  });
}

export async function globalSetup(): Promise<void> {
  // provision.sh is cheap when everything is cached (well under a second) and builds what is
  // missing on a fresh machine; only its noteworthy lines are shown.
  const binDir = process.env.CHARTPILOT_TEST_BIN
    ?? await provision({ log: (line) => { if (!/: cached$|^provisioned in|^\//.test(line)) say(line); } });
  process.env.CHARTPILOT_TEST_BIN = binDir;
  if (process.env.CHARTPILOT_TEST_KUBECONFIG) {
    say(`using the existing cluster in CHARTPILOT_TEST_KUBECONFIG=${process.env.CHARTPILOT_TEST_KUBECONFIG}`);
    startReaper(process.env.CHARTPILOT_TEST_KUBECONFIG);
    return;
  }
  const dir = await mkdtemp(join(tmpdir(), 'chartpilot-test-'));
  // The reaper is tied to this process (the test runner's main process): if the run is killed,
  // the control plane goes with it.
  const cp = await startControlPlane({ dir, binDir });
  startedDir = dir;
  process.env.CHARTPILOT_TEST_KUBECONFIG = cp.kubeconfig;
  process.env.CHARTPILOT_TEST_CLUSTER_DIR = dir;
  say(`${cp.version} ready in ${(cp.startupMs / 1000).toFixed(1)} s (state dir ${dir})`);
  startReaper(cp.kubeconfig);
}

export async function globalTeardown(): Promise<void> {
  await reaper?.stop();
  reaper = undefined;
  if (startedDir === undefined) return;
  await stopControlPlane(startedDir);
  startedDir = undefined;
}
