/**
 * Who may connect to the operator's pods: the metrics port from the monitoring namespace, nothing
 * else from any pod. A text template, like the Deployment, for its comments: what the policy does
 * not cover (the node, and clusters whose network plugin ignores NetworkPolicy) matters as much.
 */
import { PROBE_PORT } from './deploy.js';
import { METRICS_PORT } from './metrics.js';

/** Where Prometheus runs in kube-prometheus and most installs. */
export const DEFAULT_MONITORING_NAMESPACE = 'monitoring';

export interface NetworkPolicyOptions {
  /** The operator's name: object name prefix and `app.kubernetes.io/name` of its pods. */
  readonly name: string;
  readonly namespace: string;
  /** The namespace whose pods may scrape; undefined = DEFAULT_MONITORING_NAMESPACE. */
  readonly monitoringNamespace?: string | undefined;
}

export function networkPolicyYaml(o: NetworkPolicyOptions): string {
  const monitoring = o.monitoringNamespace ?? DEFAULT_MONITORING_NAMESPACE;
  return `# Who may connect to the operator's pods, where the cluster's network plugin enforces
# NetworkPolicy (without one this object changes nothing). Selecting the pods denies all other
# ingress, so only this is let in:
# - the metrics port (${String(METRICS_PORT)}) from pods of namespace ${monitoring}, where Prometheus runs
#   (chartpilot generate deploy --monitoring-namespace <ns> names another). A scrape still needs
#   a token bound to ${o.name}-metrics-reader (operator-metrics.yaml).
# - the probe port (${String(PROBE_PORT)}) from no pod at all: the kubelet probes from the node, and traffic from
#   the pod's own node is always allowed by NetworkPolicy. So is anything else on that node,
#   host-network pods included; the operator's per-peer connection caps are what bounds those.
# The operator listens for nothing else (its Ansible API proxy and osdk_metric endpoint are on
# loopback). Its egress (the API server, chart registries) is left open.
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: ${o.name}-ingress
  namespace: ${o.namespace}
  labels:
    app.kubernetes.io/name: ${o.name}
    app.kubernetes.io/component: network-policy
spec:
  # The operator's pods (operator.yaml).
  podSelector:
    matchLabels:
      app.kubernetes.io/name: ${o.name}
      app.kubernetes.io/component: operator
  policyTypes:
    - Ingress
  ingress:
    - from:
        # The label the API server sets on every namespace to its name.
        - namespaceSelector:
            matchLabels:
              kubernetes.io/metadata.name: ${monitoring}
      ports:
        - protocol: TCP
          port: ${String(METRICS_PORT)}
`;
}
