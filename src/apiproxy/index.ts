/**
 * The Ansible runs' local API proxy: what the engine uses. One proxy per operator process
 * (`createApiProxy`, then `start()` once); per reconcile, `openSession(ctx)` gives the run its own
 * kubeconfig (for `K8S_AUTH_KUBECONFIG`), `objects()` tells what it wrote, `close()` ends its access.
 *
 *   const proxy = createApiProxy({ client, log, port: flags.proxyPort });
 *   await proxy.start();
 *   const run = proxy.openSession({ owner, confinement, impersonate, injectOwnerRef: true, log });
 *   try { writeFile(kubeconfigPath, run.kubeconfig, { mode: 0o600 }); …ansible-runner… }
 *   finally { run.close(); }
 *   const inventory = run.objects();
 *
 * The osdk_metric endpoint (`startUserMetricsServer`, 127.0.0.1:5050) is separate: it needs the
 * metrics registry, not the API.
 */
export {
  createApiProxy,
  DEFAULT_PROXY_PORT,
  type SessionAccess,
  type SessionContext,
  type ApiProxy,
  type ApiProxyOptions,
} from './proxy.js';
export type { SessionOwner } from './ownership.js';
export type { SessionObject, SessionRead } from './sessions.js';
