/**
 * A release manifest (Helm's multi-document YAML) as a list of objects with their scope resolved.
 * Pure: scope comes from the caller's `isNamespaced`, so this runs without a cluster.
 */
import { parseAllDocuments, type DocumentOptions, type ParseOptions, type SchemaOptions, type ToJSOptions } from 'yaml';
import type { KubeObject } from '../kube/types.js';
import type { DesiredObject, IsNamespaced, ObjectRef } from './types.js';
import { errorMessage } from '../lib/errors.js';
import { isPlainObject } from '../lib/json.js';

export type { DesiredObject, IsNamespaced } from './types.js';

/** One line of `status.deployedRelease.inventory`: which object, not what is in it. */
export class ManifestError extends Error {
  override readonly name = 'ManifestError';
}

/**
 * Helm decodes manifests with sigs.k8s.io/yaml (go-yaml, YAML 1.1), and so must we, or `0644` file
 * modes would become 644 and `on` would stay a string — and every such field would look drifted.
 * go-yaml leaves unquoted timestamps as strings when decoding into untyped values; the yaml
 * library would make Dates of them, so that tag is dropped.
 */
const PARSE_OPTIONS: ParseOptions & DocumentOptions & SchemaOptions = {
  version: '1.1',
  customTags: (tags) => tags.filter((t) => typeof t === 'string' || t.tag !== 'tag:yaml.org,2002:timestamp'),
};
/** A rendered manifest has no business with alias bombs. */
const TO_JS: ToJSOptions = { maxAliasCount: 100 };

/**
 * Parses a rendered manifest. Empty documents (a template that rendered nothing, or only its
 * `# Source:` comment) are skipped; `kind: List` (and any `*List` with `items`) is expanded, as
 * helm does. Namespaced objects without a namespace get `releaseNamespace`. A kind `isNamespaced`
 * does not know is looked up in CRDs of the same manifest, else assumed namespaced (most kinds are;
 * refresh discovery and parse again once the CRD is served). When an object appears twice, the
 * later document wins, as it would when applied.
 */
export function parseManifest(manifest: string, releaseNamespace: string, isNamespaced: IsNamespaced): DesiredObject[] {
  const docs = parseAllDocuments(manifest, PARSE_OPTIONS);
  // An input with no documents at all yields an EmptyStream, not an array.
  if (!Array.isArray(docs)) return [];

  const raw: { obj: Record<string, unknown>; where: string }[] = [];
  docs.forEach((doc, i) => {
    const where = `document ${i + 1}`;
    const firstError = doc.errors[0];
    if (firstError !== undefined) throw new ManifestError(`${where} of the manifest is not valid YAML: ${firstError.message}`);
    let value: unknown;
    try {
      value = doc.toJS(TO_JS);
    } catch (cause) {
      throw new ManifestError(`${where} of the manifest cannot be read: ${errorMessage(cause)}`, { cause });
    }
    if (value === null || value === undefined) return;
    if (!isPlainObject(value)) throw new ManifestError(`${where} of the manifest is not an object`);
    if (isListKind(value)) {
      (value.items as unknown[]).forEach((item, j) => {
        if (item === null || item === undefined) return;
        if (!isPlainObject(item)) throw new ManifestError(`${where}, item ${j}, of the manifest is not an object`);
        raw.push({ obj: item, where: `${where}, item ${j},` });
      });
    } else {
      raw.push({ obj: value, where });
    }
  });

  const crdScopes = scopesFromCrds(raw.map((r) => r.obj));
  const byKey = new Map<string, DesiredObject>();
  for (const { obj, where } of raw) {
    const apiVersion = obj.apiVersion;
    const kind = obj.kind;
    const metadata = obj.metadata;
    if (typeof apiVersion !== 'string' || apiVersion === '') throw new ManifestError(`${where} of the manifest has no apiVersion`);
    if (typeof kind !== 'string' || kind === '') throw new ManifestError(`${where} of the manifest has no kind`);
    if (!isPlainObject(metadata) || typeof metadata.name !== 'string' || metadata.name === '') {
      throw new ManifestError(`${where} of the manifest (${kind}) has no metadata.name`);
    }
    const namespaced = isNamespaced(apiVersion, kind) ?? crdScopes.get(scopeKey(apiVersion, kind)) ?? true;
    const ownNamespace = typeof metadata.namespace === 'string' && metadata.namespace !== '' ? metadata.namespace : undefined;
    const desired: DesiredObject = {
      apiVersion,
      kind,
      namespace: namespaced ? (ownNamespace ?? releaseNamespace) : undefined,
      name: metadata.name,
      object: obj as KubeObject,
    };
    byKey.set(refKey(desired), desired);
  }
  return [...byKey.values()];
}

/** The inventory for the CR's status: one entry per object, in a stable order. */
export function inventoryOf(objects: readonly ObjectRef[]): ObjectRef[] {
  const byKey = new Map<string, ObjectRef>();
  for (const o of objects) {
    const entry: ObjectRef =
      o.namespace === undefined
        ? { apiVersion: o.apiVersion, kind: o.kind, name: o.name }
        : { apiVersion: o.apiVersion, kind: o.kind, namespace: o.namespace, name: o.name };
    byKey.set(refKey(o), entry);
  }
  // Code-unit order, not localeCompare: the status must not change with the process locale.
  return [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, e]) => e);
}

/** A key that identifies an object (and sorts by apiVersion, kind, namespace, name). */
export function refKey(ref: ObjectRef): string {
  return `${ref.apiVersion}\u0000${ref.kind}\u0000${ref.namespace ?? ''}\u0000${ref.name}`;
}

function isListKind(v: Record<string, unknown>): boolean {
  return typeof v.kind === 'string' && v.kind.endsWith('List') && Array.isArray(v.items);
}

function scopeKey(apiVersion: string, kind: string): string {
  return `${apiVersion}\u0000${kind}`;
}

/** Scope of the custom kinds a manifest defines itself (a chart that ships a CRD and instances of it). */
function scopesFromCrds(objects: readonly Record<string, unknown>[]): Map<string, boolean> {
  const scopes = new Map<string, boolean>();
  for (const o of objects) {
    if (o.kind !== 'CustomResourceDefinition' || typeof o.apiVersion !== 'string' || !o.apiVersion.startsWith('apiextensions.k8s.io/')) continue;
    const spec = o.spec;
    if (!isPlainObject(spec) || typeof spec.group !== 'string' || !isPlainObject(spec.names) || typeof spec.names.kind !== 'string') continue;
    const namespaced = spec.scope !== 'Cluster';
    const versions: string[] = [];
    if (Array.isArray(spec.versions)) {
      for (const v of spec.versions) if (isPlainObject(v) && typeof v.name === 'string') versions.push(v.name);
    }
    if (typeof spec.version === 'string') versions.push(spec.version); // apiextensions.k8s.io/v1beta1
    for (const v of versions) scopes.set(scopeKey(`${spec.group}/${v}`, spec.names.kind), namespaced);
  }
  return scopes;
}
