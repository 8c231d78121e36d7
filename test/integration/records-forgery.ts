/**
 * Forging Helm release records as a namespace admin can: reading a real record, editing its
 * release JSON, writing it back under a new revision with every label and annotation copied
 * (records.test.ts, wire-confinement.test.ts). And what a forgery must not touch: a victim
 * namespace and its snapshot.
 */
import assert from 'node:assert/strict';
import { gunzipSync, gzipSync } from 'node:zlib';
import type { TestContext } from 'node:test';
import { stringify } from 'yaml';
import { getJson, newNamespace, type TestCluster } from './harness.js';

export interface SecretJson {
  metadata: { name: string; namespace: string; uid: string; resourceVersion: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  type?: string;
  data?: Record<string, string>;
}

/** Helm's release JSON inside a record Secret (what we change when forging). */
export type ReleaseJson = Record<string, unknown> & { name: string; namespace: string; version: number; manifest?: string; info: Record<string, unknown>; hooks?: (Record<string, unknown> & { manifest: string })[] };

export function decodeRecord(secret: SecretJson): ReleaseJson {
  const helm = Buffer.from(secret.data?.release ?? '', 'base64').toString('latin1');
  return JSON.parse(gunzipSync(Buffer.from(helm, 'base64')).toString('utf8')) as ReleaseJson;
}

export function encodeRecord(release: ReleaseJson): string {
  return gzipSync(Buffer.from(JSON.stringify(release))).toString('base64');
}

export async function records(c: TestCluster, ns: string, release: string): Promise<SecretJson[]> {
  const list = await getJson<{ items: SecretJson[] }>(c, ['get', 'secrets', '-n', ns, '-l', `owner=helm,name=${release}`, '-o', 'json']);
  return list.items.sort((a, b) => Number(a.metadata.labels?.version) - Number(b.metadata.labels?.version));
}

/**
 * Writes `sh.helm.release.v1.<release>.v<N+1>` as a tenant would: every label and annotation of
 * the real latest record (fingerprint included), its release JSON with `edit` applied.
 */
export async function forgeNext(c: TestCluster, ns: string, release: string, edit: (r: ReleaseJson) => void, from?: SecretJson): Promise<string> {
  const all = await records(c, ns, release);
  const latest = from ?? all.at(-1);
  assert.ok(latest, `release ${release} has a record to copy`);
  const next = Math.max(0, ...all.map((s) => Number(s.metadata.labels?.version))) + 1;
  const json = decodeRecord(latest);
  json.name = release;
  json.namespace = ns;
  json.version = next;
  edit(json);
  const name = `sh.helm.release.v1.${release}.v${next}`;
  const forged = {
    apiVersion: 'v1',
    kind: 'Secret',
    type: latest.type ?? 'helm.sh/release.v1',
    metadata: { name, namespace: ns, labels: { ...latest.metadata.labels, name: release, version: String(next) }, annotations: { ...latest.metadata.annotations } },
    stringData: { release: encodeRecord(json) },
  };
  await c.kubectl(['create', '-f', '-'], { input: JSON.stringify(forged) });
  return name;
}

/** A manifest document for a ConfigMap or Secret elsewhere. */
export function foreignObject(kind: 'ConfigMap' | 'Secret', namespace: string, name: string, data: Record<string, string>): string {
  return `---\n${stringify({ apiVersion: 'v1', kind, metadata: { name, namespace }, data })}`;
}

/** Name → resourceVersion of every ConfigMap and Secret in `ns`: anything created, changed or deleted shows. */
export async function snapshot(c: TestCluster, ns: string): Promise<Record<string, string>> {
  const list = await getJson<{ items: SecretJson[] & { kind: string }[] }>(c, ['get', 'configmaps,secrets', '-n', ns, '-o', 'json']);
  return Object.fromEntries(
    (list.items as (SecretJson & { kind: string })[])
      .filter((o) => !o.metadata.name.startsWith('kube-root-ca'))
      .map((o) => [`${o.kind}/${o.metadata.name}`, o.metadata.resourceVersion]),
  );
}

/** A namespace another team owns, with a ConfigMap and a Secret a forgery will name. */
export async function victim(t: TestContext, c: TestCluster): Promise<string> {
  const ns = await newNamespace(t, 'victim');
  await c.kubectl(['create', 'configmap', 'theirs', '-n', ns, '--from-literal=owner=team-b']);
  await c.kubectl(['create', 'secret', 'generic', 'creds', '-n', ns, '--from-literal=password=right-guess']);
  return ns;
}
