/**
 * Kind → resource for kinds charts commonly render, used when no API server is reachable for
 * discovery (e.g. generating RBAC in CI). A kind missing here is still granted, under a guessed
 * resource name that the output flags for review.
 */
import { pluralOf } from './kind-names.js';

export interface ResourceInfo {
  readonly group: string;
  readonly kind: string;
  /** The resource name RBAC rules use (the plural). */
  readonly resource: string;
  readonly namespaced: boolean;
}

type Row = readonly [group: string, kind: string, resource: string, namespaced: boolean];

const ROWS: readonly Row[] = [
  ['', 'ConfigMap', 'configmaps', true],
  ['', 'Endpoints', 'endpoints', true],
  // Ansible roles record them (operator_sdk.util.k8s_event).
  ['', 'Event', 'events', true],
  ['', 'LimitRange', 'limitranges', true],
  ['', 'Namespace', 'namespaces', false],
  ['', 'PersistentVolume', 'persistentvolumes', false],
  ['', 'PersistentVolumeClaim', 'persistentvolumeclaims', true],
  ['', 'Pod', 'pods', true],
  ['', 'PodTemplate', 'podtemplates', true],
  ['', 'ReplicationController', 'replicationcontrollers', true],
  ['', 'ResourceQuota', 'resourcequotas', true],
  ['', 'Secret', 'secrets', true],
  ['', 'Service', 'services', true],
  ['', 'ServiceAccount', 'serviceaccounts', true],
  ['admissionregistration.k8s.io', 'MutatingWebhookConfiguration', 'mutatingwebhookconfigurations', false],
  ['admissionregistration.k8s.io', 'ValidatingAdmissionPolicy', 'validatingadmissionpolicies', false],
  ['admissionregistration.k8s.io', 'ValidatingAdmissionPolicyBinding', 'validatingadmissionpolicybindings', false],
  ['admissionregistration.k8s.io', 'ValidatingWebhookConfiguration', 'validatingwebhookconfigurations', false],
  ['apiextensions.k8s.io', 'CustomResourceDefinition', 'customresourcedefinitions', false],
  ['apiregistration.k8s.io', 'APIService', 'apiservices', false],
  ['apps', 'ControllerRevision', 'controllerrevisions', true],
  ['apps', 'DaemonSet', 'daemonsets', true],
  ['apps', 'Deployment', 'deployments', true],
  ['apps', 'ReplicaSet', 'replicasets', true],
  ['apps', 'StatefulSet', 'statefulsets', true],
  ['autoscaling', 'HorizontalPodAutoscaler', 'horizontalpodautoscalers', true],
  ['batch', 'CronJob', 'cronjobs', true],
  ['batch', 'Job', 'jobs', true],
  ['certificates.k8s.io', 'CertificateSigningRequest', 'certificatesigningrequests', false],
  ['coordination.k8s.io', 'Lease', 'leases', true],
  ['discovery.k8s.io', 'EndpointSlice', 'endpointslices', true],
  ['networking.k8s.io', 'Ingress', 'ingresses', true],
  ['networking.k8s.io', 'IngressClass', 'ingressclasses', false],
  ['networking.k8s.io', 'NetworkPolicy', 'networkpolicies', true],
  ['node.k8s.io', 'RuntimeClass', 'runtimeclasses', false],
  ['policy', 'PodDisruptionBudget', 'poddisruptionbudgets', true],
  ['rbac.authorization.k8s.io', 'ClusterRole', 'clusterroles', false],
  ['rbac.authorization.k8s.io', 'ClusterRoleBinding', 'clusterrolebindings', false],
  ['rbac.authorization.k8s.io', 'Role', 'roles', true],
  ['rbac.authorization.k8s.io', 'RoleBinding', 'rolebindings', true],
  ['scheduling.k8s.io', 'PriorityClass', 'priorityclasses', false],
  ['storage.k8s.io', 'CSIDriver', 'csidrivers', false],
  ['storage.k8s.io', 'StorageClass', 'storageclasses', false],
  ['storage.k8s.io', 'VolumeAttachment', 'volumeattachments', false],
  // Widespread add-ons whose kinds charts render next to their workloads.
  ['cert-manager.io', 'Certificate', 'certificates', true],
  ['cert-manager.io', 'ClusterIssuer', 'clusterissuers', false],
  ['cert-manager.io', 'Issuer', 'issuers', true],
  ['gateway.networking.k8s.io', 'Gateway', 'gateways', true],
  ['gateway.networking.k8s.io', 'GRPCRoute', 'grpcroutes', true],
  ['gateway.networking.k8s.io', 'HTTPRoute', 'httproutes', true],
  ['monitoring.coreos.com', 'PodMonitor', 'podmonitors', true],
  ['monitoring.coreos.com', 'PrometheusRule', 'prometheusrules', true],
  ['monitoring.coreos.com', 'ServiceMonitor', 'servicemonitors', true],
];

const BY_GROUP_KIND = new Map(ROWS.map(([group, kind, resource, namespaced]) => [`${group}/${kind}`, { group, kind, resource, namespaced }]));

export function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash === -1 ? '' : apiVersion.slice(0, slash);
}

/** The built-in answer for a kind in an apiVersion, if the table knows it. */
export function tableLookup(apiVersion: string, kind: string): ResourceInfo | undefined {
  return BY_GROUP_KIND.get(`${groupOf(apiVersion)}/${kind}`);
}

/** The built-in answer for a kind whose apiVersion is unknown (computed in a template): only when unambiguous. */
export function tableLookupByKind(kind: string): ResourceInfo | undefined {
  const matches = ROWS.filter((r) => r[1] === kind);
  const only = matches.length === 1 ? matches[0] : undefined;
  return only === undefined ? undefined : { group: only[0], kind: only[1], resource: only[2], namespaced: only[3] };
}

/** What Kubernetes would most likely call the resource: the lower-cased plural, namespaced. */
export function guessResource(apiVersion: string, kind: string): ResourceInfo {
  return { group: groupOf(apiVersion), kind, resource: pluralOf(kind), namespaced: true };
}
