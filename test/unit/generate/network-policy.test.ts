/** The NetworkPolicy `generate deploy` writes: the metrics port from the monitoring namespace only, the probe port from no pod. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parse, parseAllDocuments } from 'yaml';
import { deployOptionProblems, operatorYaml, PROBE_PORT } from '../../../src/generate/deploy.js';
import { generateCommand } from '../../../src/generate/cli.js';
import { METRICS_PORT } from '../../../src/generate/metrics.js';
import { networkPolicyYaml } from '../../../src/generate/network-policy.js';
import { deployYaml } from '../../../src/generate/render.js';
import { captureIo } from './helpers.js';

interface Policy {
  kind: string;
  metadata: { name: string; namespace: string };
  spec: {
    podSelector: { matchLabels: Record<string, string> };
    policyTypes: string[];
    ingress: { from: { namespaceSelector?: { matchLabels: Record<string, string> }; podSelector?: unknown; ipBlock?: unknown }[]; ports: { protocol: string; port: number | string }[] }[];
  };
}

interface PodTemplate {
  spec: { template: { metadata: { labels: Record<string, string> }; spec: { containers: { ports: { name: string; containerPort: number }[] }[] } } };
}

const OPTS = { name: 'op', namespace: 'op-system', serviceAccount: 'op-sa', image: 'op:1' };

describe('the operator NetworkPolicy', () => {
  const policy = parse(networkPolicyYaml(OPTS)) as Policy;

  it('selects exactly the operator Deployment\'s pods, for ingress only', () => {
    const pod = (parse(operatorYaml(OPTS)) as PodTemplate).spec.template.metadata.labels;
    assert.deepEqual([policy.kind, policy.metadata.name, policy.metadata.namespace], ['NetworkPolicy', 'op-ingress', 'op-system']);
    for (const [k, v] of Object.entries(policy.spec.podSelector.matchLabels)) assert.equal(pod[k], v, k);
    assert.deepEqual(policy.spec.policyTypes, ['Ingress'], 'egress (API server, registries) is not restricted');
  });

  it('admits the metrics port only, from pods of the monitoring namespace by its name label', () => {
    assert.deepEqual(policy.spec.ingress, [
      { from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }], ports: [{ protocol: 'TCP', port: METRICS_PORT }] },
    ]);
    // It is the port the Deployment serves metrics on; the probe port is not admitted from any pod.
    const ports = (parse(operatorYaml(OPTS)) as PodTemplate).spec.template.spec.containers[0]?.ports ?? [];
    assert.deepEqual(ports.map((p) => p.containerPort).sort(), [METRICS_PORT, PROBE_PORT].sort());
    assert.ok(!policy.spec.ingress.some((r) => r.ports.some((p) => [String(PROBE_PORT), 'health'].includes(String(p.port)))));
  });

  it('says in its comments what it does not restrict', () => {
    const text = networkPolicyYaml(OPTS);
    assert.match(text, /kubelet probes from the node, and traffic from\n#\s+the pod's own node is always allowed/);
    assert.match(text, /without one this object changes nothing/);
  });

  it('takes the monitoring namespace from --monitoring-namespace, and refuses one that is no namespace name', async () => {
    const io = captureIo();
    assert.equal(await generateCommand(['deploy', '--monitoring-namespace', 'prometheus'], io), 0, io.err());
    const written = parseAllDocuments(io.out()).map((d) => d.toJS() as Policy).find((d) => d.kind === 'NetworkPolicy');
    assert.deepEqual(written?.spec.ingress[0]?.from, [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'prometheus' } } }]);
    assert.deepEqual(deployOptionProblems({ ...OPTS, monitoringNamespace: 'Prom_NS' }), [
      '--monitoring-namespace "Prom_NS" must be a lower-case DNS label (letters, digits, \'-\'; at most 63 characters)',
    ]);
    const bad = captureIo();
    assert.equal(await generateCommand(['deploy', '--monitoring-namespace', 'Prom_NS'], bad), 2);
  });

  it('is part of generate deploy', () => {
    assert.equal(parseAllDocuments(deployYaml(OPTS)).filter((d) => (d.toJS() as Policy).kind === 'NetworkPolicy').length, 1);
  });
});
