/**
 * The Ansible runs' local API proxy: what the engine uses. One proxy per operator process
 * (`createRunProxy`, then `start()` once); per reconcile, `openRun(ctx)` gives the run its own
 * kubeconfig (for `K8S_AUTH_KUBECONFIG`), `objects()` tells what it wrote, `close()` ends its access.
 *
 *   const proxy = createRunProxy({ client, log, port: flags.proxyPort });
 *   await proxy.start();
 *   const run = proxy.openRun({ owner, confinement, impersonate, injectOwnerRef: true, log });
 *   try { writeFile(kubeconfigPath, run.kubeconfig, { mode: 0o600 }); …ansible-runner… }
 *   finally { run.close(); }
 *   const inventory = run.objects();
 *
 * The osdk_metric endpoint (`startUserMetricsServer`, 127.0.0.1:5050) is separate: it needs the
 * metrics registry, not the API.
 */
export {
  createRunProxy,
  DEFAULT_PROXY_PORT,
  type RunAccess,
  type RunContext,
  type RunProxy,
  type RunProxyOptions,
} from './run-proxy.js';
export type { RunOwner } from './ownership.js';
export type { RunObject, RunRead } from './runs.js';
export { DEFAULT_USER_METRICS_PORT, startUserMetricsServer, type UserMetricsServerOptions } from './user-metrics.js';
