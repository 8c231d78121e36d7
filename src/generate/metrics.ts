/**
 * How the operator's /metrics is reached and who may read it, after operator-sdk's scaffold
 * (config/default/metrics_service.yaml, config/rbac/metrics_*.yaml, config/prometheus/monitor.yaml):
 * HTTPS on 8443, every scrape authenticated (TokenReview) and authorized (SubjectAccessReview for
 * `get` on the non-resource URL /metrics). A text template, like the Deployment, for its comments.
 */

/** The Deployment's metrics port: operator-sdk's, and the name the Service and ServiceMonitor use. */
export const METRICS_PORT = 8443;
export const METRICS_PORT_NAME = 'https';

/** The run flags that make the metrics endpoint what this file's objects expect. */
export const METRICS_ARGS = [`--metrics-bind-address=:${String(METRICS_PORT)}`, '--metrics-secure', '--metrics-require-rbac'] as const;

/** Where the ServiceAccount token of a pod is mounted: what Prometheus presents when it scrapes. */
const POD_TOKEN_FILE = '/var/run/secrets/kubernetes.io/serviceaccount/token';

export interface MetricsNames {
  readonly service: string;
  readonly authRole: string;
  readonly readerRole: string;
  readonly monitor: string;
}

/** Object names, prefixed by the operator's name as its RBAC objects are (`<name>-manager`). */
export function metricsNames(name: string): MetricsNames {
  return {
    service: `${name}-metrics-service`,
    authRole: `${name}-metrics-auth`,
    readerRole: `${name}-metrics-reader`,
    monitor: `${name}-metrics-monitor`,
  };
}

export interface MetricsOptions {
  /** The operator's name: object name prefix and `app.kubernetes.io/name` of its pods. */
  readonly name: string;
  readonly namespace: string;
  readonly serviceAccount: string;
}

/** The metrics Service, the metrics-auth and metrics-reader ClusterRoles, and a ServiceMonitor in comments. */
export function metricsYaml(o: MetricsOptions): string {
  const n = metricsNames(o.name);
  return `# The operator serves /metrics over HTTPS on ${String(METRICS_PORT)} (--metrics-secure, a self-signed certificate
# unless --metrics-cert-path names one) and answers a scrape only when its bearer token passes a
# TokenReview and a SubjectAccessReview for get on /metrics (--metrics-require-rbac); else 401/403.
apiVersion: v1
kind: Service
metadata:
  name: ${n.service}
  namespace: ${o.namespace}
  labels:
    app.kubernetes.io/name: ${o.name}
    app.kubernetes.io/component: metrics
spec:
  # The operator's pods (operator.yaml).
  selector:
    app.kubernetes.io/name: ${o.name}
    app.kubernetes.io/component: operator
  ports:
    - name: ${METRICS_PORT_NAME}
      port: ${String(METRICS_PORT)}
      protocol: TCP
      targetPort: ${METRICS_PORT_NAME}
---
# What --metrics-require-rbac needs (the operator checks at start that it has it): asking the API
# server who a scrape's token belongs to, and whether that identity may get /metrics.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: ${n.authRole}
  labels:
    app.kubernetes.io/name: ${o.name}
    app.kubernetes.io/component: rbac
rules:
  - apiGroups:
      - authentication.k8s.io
    resources:
      - tokenreviews
    verbs:
      - create
  - apiGroups:
      - authorization.k8s.io
    resources:
      - subjectaccessreviews
    verbs:
      - create
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: ${n.authRole}
  labels:
    app.kubernetes.io/name: ${o.name}
    app.kubernetes.io/component: rbac
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: ${n.authRole}
subjects:
  - kind: ServiceAccount
    name: ${o.serviceAccount}
    namespace: ${o.namespace}
---
# Who may scrape: bind it to your Prometheus's ServiceAccount (or any identity with a token), e.g.
#   kubectl create clusterrolebinding ${n.readerRole}-prometheus --clusterrole=${n.readerRole} --serviceaccount=monitoring:prometheus-k8s
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: ${n.readerRole}
  labels:
    app.kubernetes.io/name: ${o.name}
    app.kubernetes.io/component: rbac
rules:
  - nonResourceURLs:
      - /metrics
    verbs:
      - get
#
# With the Prometheus Operator installed, uncomment this ServiceMonitor (the "---" line too) and
# bind the ClusterRole above to your Prometheus's ServiceAccount. It is commented out because
# without the Prometheus Operator's CRDs kubectl apply would refuse it.
# ---
# apiVersion: monitoring.coreos.com/v1
# kind: ServiceMonitor
# metadata:
#   name: ${n.monitor}
#   namespace: ${o.namespace}
#   labels:
#     app.kubernetes.io/name: ${o.name}
#     app.kubernetes.io/component: metrics
# spec:
#   selector:
#     matchLabels:
#       app.kubernetes.io/name: ${o.name}
#       app.kubernetes.io/component: metrics
#   endpoints:
#     - path: /metrics
#       port: ${METRICS_PORT_NAME}
#       scheme: https
#       # Prometheus's own ServiceAccount token: the operator reviews it as above.
#       bearerTokenFile: ${POD_TOKEN_FILE}
#       tlsConfig:
#         # The operator's certificate is self-signed unless you mount one, hence insecureSkipVerify:
#         # it trusts any certificate, so a man in the middle could take Prometheus's token. In
#         # production mount a certificate (e.g. from cert-manager) with --metrics-cert-path and
#         # set ca (its issuer) and serverName: ${n.service}.${o.namespace}.svc instead.
#         insecureSkipVerify: true
`;
}
