/**
 * The confining API layer as the helm client sees it (src/apiproxy implements it, cli/ wires it):
 * each helm process of a call reaches the API server only through a session of its own, whose
 * kubeconfig names the layer's loopback endpoint and a token valid for that session alone. What
 * helm may do there is the layer's to decide, whatever helm reads; the client only passes what
 * was refused on as the call's error.
 */
import type { ReleaseOwner } from '../engines/helm/ports.js';

export interface GatedCall {
  readonly release: string;
  readonly namespace: string;
  readonly owner: ReleaseOwner;
  /** The identity every request is made as (the tenant's ServiceAccount); undefined: the operator's. */
  readonly impersonate?: string | undefined;
  /** `upgrade`, `status`, … for the layer's logs. */
  readonly action: string;
}

export interface GateSession {
  /** Kubeconfig YAML for this helm process (write it 0600, private). Holds the session's token. */
  readonly kubeconfig: string;
  /** Where helm's client-go keeps its discovery cache (KUBECACHEDIR): one per gate, not per call. */
  readonly cacheDir: string;
  /** What the layer refused in this session, in order (each names the object and the rule). */
  refusals(): readonly string[];
  /** Ends the session: its token is refused from now on. Idempotent. */
  close(): void;
}

export interface ApiGate {
  open(call: GatedCall): GateSession;
}

/**
 * Helm's own ways to name another API server, identity or context (flags' environment variables):
 * set empty for a gated call, so only the session's kubeconfig decides where helm connects.
 */
export const HELM_CONNECTION_ENV: readonly string[] = [
  'HELM_KUBEAPISERVER',
  'HELM_KUBETOKEN',
  'HELM_KUBEASUSER',
  'HELM_KUBEASGROUPS',
  'HELM_KUBECONTEXT',
  'HELM_KUBECAFILE',
  'HELM_KUBETLS_SERVER_NAME',
  'HELM_KUBEINSECURE_SKIP_TLS_VERIFY',
];
