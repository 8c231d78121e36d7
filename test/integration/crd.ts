// CustomResourceDefinitions in tests: a kind of its own for each test, installed and established.
import { isAlreadyExists } from '../../src/kube/errors.js';
import type { TestCluster } from './harness.js';
import { waitFor } from './wait.js';

export interface TestKind {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly plural: string;
}

/** A kind unique to one test, so parallel test files never share CRs or CRDs. */
export function testKind(suffix: string): TestKind {
  const kind = `App${suffix.replace(/[^A-Za-z0-9]/g, '')}`;
  return { group: 'test.chartpilot.io', version: 'v1', kind, plural: `${kind.toLowerCase()}s` };
}

/** `<plural>.<group>`: how kubectl names the kind's resource unambiguously. */
export function resourceOf(k: TestKind): string {
  return `${k.plural}.${k.group}`;
}

/** Installs a CRD for `k` (any spec, a status subresource) and waits until it is established. */
export async function installCrd(cluster: TestCluster, k: TestKind): Promise<void> {
  const crd = {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: resourceOf(k) },
    spec: {
      group: k.group,
      names: { kind: k.kind, plural: k.plural, singular: k.kind.toLowerCase(), listKind: `${k.kind}List` },
      scope: 'Namespaced',
      versions: [
        {
          name: k.version,
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
        },
      ],
    },
  };
  // In this process rather than `kubectl apply` (a process and its discovery per CRD): create it,
  // or replace what a previous run of the same test left.
  const api = cluster.api();
  const crds = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
  try {
    await api.request('POST', crds, { body: crd });
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
    const current = await api.request<{ metadata: { resourceVersion: string } }>('GET', `${crds}/${crd.metadata.name}`);
    await api.request('PUT', `${crds}/${crd.metadata.name}`, { body: { ...crd, metadata: { ...crd.metadata, resourceVersion: current.metadata.resourceVersion } } });
  }
  await established(cluster, crd.metadata.name);
}

/**
 * Waits until the CRD `name` is Established, then fails if the API server found its schema not
 * structural (a NonStructuralSchema condition).
 */
export async function established(cluster: TestCluster, name: string): Promise<void> {
  // `type=status` lines; -o json, which the harness answers without a kubectl process.
  const conditions = async (): Promise<string> => {
    const r = await cluster.kubectl(['get', 'crd', name, '-o', 'json'], { allowFail: true });
    if (r.exitCode !== 0) return '';
    const crd = JSON.parse(r.stdout) as { status?: { conditions?: { type: string; status: string }[] } };
    return (crd.status?.conditions ?? []).map((c) => `${c.type}=${c.status}\n`).join('');
  };
  const seen = await waitFor(`CRD ${name} established`, async () => {
    const text = await conditions();
    return text.split('\n').includes('Established=True') ? text : undefined;
  });
  if (/^NonStructuralSchema=/m.test(seen)) throw new Error(`CRD ${name} has a NonStructuralSchema condition:\n${seen}`);
}
