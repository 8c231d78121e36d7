/**
 * The metrics objects `generate deploy` writes next to the Deployment, held to operator-sdk v1.42's
 * scaffold (config/default/metrics_service.yaml, config/rbac/metrics_*.yaml,
 * config/prometheus/monitor.yaml) and to the Deployment they serve.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parse, parseAllDocuments } from 'yaml';
import { operatorYaml } from '../../../src/generate/deploy.js';
import { metricsYaml } from '../../../src/generate/metrics.js';
import { deployYaml } from '../../../src/generate/render.js';

interface Rule {
  apiGroups?: string[];
  resources?: string[];
  nonResourceURLs?: string[];
  verbs: string[];
}

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: unknown;
  rules?: Rule[];
  roleRef?: { apiGroup: string; kind: string; name: string };
  subjects?: { kind: string; name: string; namespace: string }[];
}

interface ServiceSpec {
  selector: Record<string, string>;
  ports: { name: string; port: number; protocol: string; targetPort: number | string }[];
}

interface DeploymentSpec {
  selector: { matchLabels: Record<string, string> };
  template: {
    metadata: { labels: Record<string, string> };
    spec: { serviceAccountName: string; containers: { args: string[]; ports: { name: string; containerPort: number }[] }[] };
  };
}

interface ServiceMonitorSpec {
  selector: { matchLabels: Record<string, string> };
  endpoints: { path: string; port: string; scheme: string; bearerTokenFile: string; tlsConfig: Record<string, unknown> }[];
}

const OPTS = { name: 'op', namespace: 'op-system', serviceAccount: 'op-sa', image: 'registry.example.com/op:1.2.3' };

const objects = parseAllDocuments(metricsYaml(OPTS)).map((d) => {
  assert.deepEqual(d.errors, []);
  return d.toJS() as K8sObject;
});
const deployment = parse(operatorYaml(OPTS)) as K8sObject & { spec: DeploymentSpec };
const container = deployment.spec.template.spec.containers[0];

function only(kind: string, name: string): K8sObject {
  const found = objects.filter((o) => o.kind === kind && o.metadata.name === name);
  assert.equal(found.length, 1, `one ${kind} ${name} in ${objects.map((o) => `${o.kind}/${o.metadata.name}`).join(', ')}`);
  return found[0] as K8sObject;
}

/** The ServiceMonitor as it is once uncommented: the comment block after the last document. */
function uncommentedMonitor(text: string): unknown {
  const lines = text.split('\n');
  const start = lines.indexOf('# ---');
  assert.ok(start > 0, 'a commented "---" starts the ServiceMonitor');
  const body = lines.slice(start + 1).filter((l) => l !== '');
  for (const l of body) assert.match(l, /^# /u, 'nothing but comments after it');
  return parse(body.map((l) => l.slice(2)).join('\n'));
}

describe('metrics Service', () => {
  const service = only('Service', 'op-metrics-service');
  const spec = service.spec as ServiceSpec;

  it('lives in the operator namespace and exposes https 8443, as the scaffold does', () => {
    assert.equal(service.metadata.namespace, 'op-system');
    assert.deepEqual(spec.ports.map((p) => [p.name, p.port, p.protocol]), [['https', 8443, 'TCP']]);
  });

  it("selects the Deployment's pods, and only by labels its selector uses too", () => {
    const podLabels = deployment.spec.template.metadata.labels;
    for (const [k, v] of Object.entries(spec.selector)) assert.equal(podLabels[k], v, `pod label ${k}`);
    assert.deepEqual(spec.selector, deployment.spec.selector.matchLabels);
  });

  it('targets the container port the operator binds with --metrics-bind-address', () => {
    const target = spec.ports[0]?.targetPort;
    const port = container?.ports.find((p) => p.name === target || p.containerPort === target);
    assert.ok(port, `a container port ${String(target)}`);
    assert.ok(container?.args.includes(`--metrics-bind-address=:${String(port.containerPort)}`), container?.args.join(' '));
  });
});

describe('metrics roles', () => {
  it('metrics-auth grants exactly create on tokenreviews and subjectaccessreviews', () => {
    const role = only('ClusterRole', 'op-metrics-auth');
    assert.deepEqual(role.rules, [
      { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
      { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
    ]);
  });

  it("binds metrics-auth to the ServiceAccount the Deployment runs as, since its args include --metrics-require-rbac", () => {
    assert.ok(container?.args.includes('--metrics-require-rbac'));
    const binding = only('ClusterRoleBinding', 'op-metrics-auth');
    assert.deepEqual(binding.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'op-metrics-auth' });
    assert.deepEqual(binding.subjects, [{ kind: 'ServiceAccount', name: deployment.spec.template.spec.serviceAccountName, namespace: deployment.metadata.namespace }]);
  });

  it('metrics-reader grants exactly get on the non-resource URL /metrics, and is bound to nobody', () => {
    const role = only('ClusterRole', 'op-metrics-reader');
    assert.deepEqual(role.rules, [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }]);
    assert.ok(!objects.some((o) => o.roleRef?.name === 'op-metrics-reader'), 'the operator itself does not scrape');
  });

  it('labels every object with the operator name, so one selector finds them for deletion', () => {
    for (const o of objects) assert.equal(o.metadata.labels?.['app.kubernetes.io/name'], 'op', `${o.kind}/${o.metadata.name}`);
  });

  it('keeps every object name a DNS label for the longest --name allowed', () => {
    const name = `a${'b'.repeat(39)}`;
    for (const o of parseAllDocuments(metricsYaml({ ...OPTS, name })).map((d) => d.toJS() as K8sObject)) {
      assert.ok(o.metadata.name.length <= 63, o.metadata.name);
      assert.match(o.metadata.name, /^[a-z]([-a-z0-9]*[a-z0-9])?$/u);
    }
  });
});

describe('ServiceMonitor (commented out)', () => {
  const text = metricsYaml(OPTS);

  it('is not applied: no document has its kind', () => {
    assert.ok(!objects.some((o) => o.kind === 'ServiceMonitor'));
    assert.ok(!parseAllDocuments(deployYaml(OPTS)).some((d) => (d.toJS() as K8sObject | null)?.kind === 'ServiceMonitor'));
  });

  it("uncommented, scrapes the metrics Service's https port with the scraper's token, as the scaffold's monitor.yaml", () => {
    const monitor = uncommentedMonitor(text) as K8sObject & { spec: ServiceMonitorSpec };
    assert.equal(monitor.apiVersion, 'monitoring.coreos.com/v1');
    assert.equal(monitor.kind, 'ServiceMonitor');
    assert.deepEqual([monitor.metadata.name, monitor.metadata.namespace], ['op-metrics-monitor', 'op-system']);
    const service = only('Service', 'op-metrics-service');
    assert.deepEqual(monitor.spec.selector.matchLabels, service.metadata.labels);
    assert.notDeepEqual(monitor.spec.selector.matchLabels, deployment.spec.template.metadata.labels, 'selects the Service, not the pods');
    assert.deepEqual(monitor.spec.endpoints, [
      {
        path: '/metrics',
        port: (service.spec as ServiceSpec).ports[0]?.name,
        scheme: 'https',
        bearerTokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token',
        tlsConfig: { insecureSkipVerify: true },
      },
    ]);
  });
});
