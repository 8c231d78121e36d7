/**
 * The proxy as helm's gate (helm/api-gate.ts): one session per helm process, for the CR the call
 * acts for — its confinement, its identity, its release's records proved with its record key.
 */
import type { Logger } from 'pino';
import type { ApiGate } from '../helm/api-gate.js';
import type { RecordKeys } from '../helm/record-mac.js';
import type { ApiProxy } from './proxy.js';

/** `keys` is asked per call: the master key is loaded after the proxy starts. */
export function helmGate(proxy: ApiProxy, keys: () => RecordKeys, log: Logger): ApiGate {
  return {
    open: (call) => {
      const access = proxy.openSession({
        owner: { apiVersion: '', kind: '', name: call.release, namespace: call.namespace, uid: call.owner.uid },
        confinement: call.owner.confinement,
        impersonate: call.impersonate,
        injectOwnerRef: false,
        records: { release: call.release, namespace: call.namespace, key: keys().keyOf(call.owner.uid) },
        log: log.child({ namespace: call.namespace, release: call.release, helmAction: call.action }),
      });
      return { kubeconfig: access.kubeconfig, cacheDir: access.cacheDir, refusals: () => access.refusals(), close: () => { access.close(); } };
    },
  };
}
