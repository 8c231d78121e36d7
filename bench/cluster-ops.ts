/**
 * The few API operations the bench needs: namespaces, the contender's CRD, its CRs, and Helm's
 * release Secrets. Every poll is ONE list per namespace (never N GETs), so the bench's own load on
 * the API server stays small and constant next to the contender's.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { BenchKube } from './kube.js';
import { errorMessage } from '../src/lib/errors.js';

export interface Kind {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly plural: string;
}

export interface Condition {
  type: string;
  status: string;
  reason?: string;
  observedGeneration?: number;
}

export interface CrView {
  metadata: { name: string; generation?: number; deletionTimestamp?: string; labels?: Record<string, string> };
  status?: { conditions?: Condition[]; deployedRelease?: { revision?: number }; outputs?: Record<string, unknown> };
}

/** Helm's release record, from the labels of its storage Secret (`sh.helm.release.v1.<name>.v<N>`). */
export interface ReleaseRecord {
  name: string;
  status: string;
  version: number;
}

/** The bench's name for the operator's bounded-concurrency loop. */
export { forEachLimited as pool } from '../src/lib/for-each-limited.js';

export async function createNamespace(kube: BenchKube, name: string): Promise<void> {
  await kube.json('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name } }, allow: [409] });
  // Pods need the default ServiceAccount, which the controller manager creates shortly after.
  await waitUntil(`ServiceAccount default in ${name}`, 30_000, async () =>
    (await kube.call('GET', `/api/v1/namespaces/${name}/serviceaccounts/default`)).status === 200);
}

/** Deletes a namespace and waits until it is gone (its contents are garbage-collected first). */
export async function deleteNamespace(kube: BenchKube, name: string, timeoutMs: number): Promise<void> {
  await kube.json('DELETE', `/api/v1/namespaces/${name}`, { allow: [404] });
  await waitUntil(`namespace ${name} deleted`, timeoutMs, async () => (await kube.call('GET', `/api/v1/namespaces/${name}`)).status === 404, 1000);
}

export const crdName = (k: Kind): string => `${k.plural}.${k.group}`;

/** The CRD operator-sdk scaffolds for a Helm kind: spec and status are free-form. */
export async function installCrd(kube: BenchKube, k: Kind): Promise<void> {
  const crd = {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: crdName(k) },
    spec: {
      group: k.group,
      names: { kind: k.kind, plural: k.plural, singular: k.kind.toLowerCase(), listKind: `${k.kind}List` },
      scope: 'Namespaced',
      versions: [{
        name: k.version,
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
      }],
    },
  };
  await kube.json('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', { body: crd, allow: [409] });
  await waitUntil(`CRD ${crdName(k)} established`, 60_000, async () => {
    const c = await kube.json<{ status?: { conditions?: Condition[] } }>('GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crdName(k)}`, { allow: [404] });
    return c?.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True') === true;
  }, 200);
  // Established can precede the resource appearing in discovery by a moment.
  await waitUntil(`${k.plural} served`, 30_000, async () => (await kube.call('GET', `/apis/${k.group}/${k.version}/${k.plural}?limit=1`)).status === 200, 200);
}

export async function deleteCrd(kube: BenchKube, k: Kind, timeoutMs: number): Promise<void> {
  await kube.json('DELETE', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crdName(k)}`, { allow: [404] });
  await waitUntil(`CRD ${crdName(k)} deleted`, timeoutMs, async () =>
    (await kube.call('GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crdName(k)}`)).status === 404, 500);
}

const crPath = (k: Kind, ns: string, name?: string): string =>
  `/apis/${k.group}/${k.version}/namespaces/${ns}/${k.plural}${name === undefined ? '' : `/${name}`}`;

export async function createCr(kube: BenchKube, k: Kind, ns: string, name: string, spec: unknown): Promise<void> {
  await kube.json('POST', crPath(k, ns), { body: { apiVersion: `${k.group}/${k.version}`, kind: k.kind, metadata: { name, namespace: ns }, spec } });
}

export async function patchCrSpec(kube: BenchKube, k: Kind, ns: string, name: string, spec: unknown): Promise<void> {
  await kube.json('PATCH', crPath(k, ns, name), { body: { spec }, contentType: 'application/merge-patch+json' });
}

/** One DELETE for the whole collection: the bench's own write count stays constant in N. */
export async function deleteAllCrs(kube: BenchKube, k: Kind, ns: string): Promise<void> {
  await kube.json('DELETE', crPath(k, ns));
}

export async function listCrs(kube: BenchKube, k: Kind, ns: string): Promise<CrView[]> {
  return (await kube.json<{ items: CrView[] }>('GET', crPath(k, ns)))?.items ?? [];
}

/** Helm's release Secrets in ns, metadata only (the release payload can be tens of KiB each). */
export async function listReleases(kube: BenchKube, ns: string): Promise<ReleaseRecord[]> {
  const list = await kube.json<{ items?: { metadata: { labels?: Record<string, string> } }[] }>(
    'GET',
    `/api/v1/namespaces/${ns}/secrets?labelSelector=${encodeURIComponent('owner=helm')}`,
    { accept: 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1' },
  );
  return (list?.items ?? []).map((s) => ({
    name: s.metadata.labels?.name ?? '',
    status: s.metadata.labels?.status ?? '',
    version: Number(s.metadata.labels?.version ?? 0),
  }));
}

/** Highest deployed revision per release name. */
export function deployedRevisions(records: readonly ReleaseRecord[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const r of records) {
    if (r.status === 'deployed') out.set(r.name, Math.max(out.get(r.name) ?? 0, r.version));
  }
  return out;
}

export async function waitUntil(what: string, timeoutMs: number, probe: () => Promise<boolean>, intervalMs = 250): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    try {
      if (await probe()) return;
    } catch (err) {
      last = ` (last error: ${errorMessage(err)})`;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}${last}`);
    await sleep(intervalMs);
  }
}
