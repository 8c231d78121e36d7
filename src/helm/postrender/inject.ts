/**
 * The transformation our post-renderer applies to every install and upgrade (hooks included:
 * helm 4 post-renders them with the rest): resolve the manifest into the objects the API server
 * will receive (resolve.ts), refuse any the watches entry does not allow, add labels, annotations,
 * ownership and the seal (seal.ts), and emit exactly the objects checked (emit.ts).
 *
 * Pure so it can be unit-tested without spawning helm; `main.ts` and `server.ts` wrap it.
 */
import { KEEP_POLICY, type PostRenderOwner, type PostRenderSpec } from '../types.js';
import { emitManifest } from './emit.js';
import { isObject, ManifestResolveError, resolveManifest, type JsonObject, type JsonValue } from './resolve.js';

export class PostRenderInputError extends Error {
  override readonly name = 'PostRenderInputError';
}

/** The chart renders objects its watches entry does not allow; nothing may be applied. */
export class PostRenderRefusal extends Error {
  override readonly name = 'PostRenderRefusal';
  /**
   * `apiVersion/Kind` of kinds discovery did not know: the caller re-reads discovery at once and
   * may try again (a CRD installed a moment ago); until discovery knows a kind it is refused.
   */
  readonly unknownKinds: readonly string[];
  constructor(message: string, unknownKinds: readonly string[] = []) {
    super(message);
    this.unknownKinds = unknownKinds;
  }
}

/** How many refused objects a message names before summarising. */
const MAX_NAMED = 5;
const CRD_KIND = 'apiextensions.k8s.io/v1/CustomResourceDefinition';

export function injectMetadata(manifest: string, spec: PostRenderSpec): string {
  let resolved;
  try {
    resolved = resolveManifest(manifest);
  } catch (err) {
    if (err instanceof ManifestResolveError) throw new PostRenderRefusal(`${err.message}. Nothing was applied.`);
    throw err;
  }
  const owner = spec.owner;
  const scopes = owner === undefined ? undefined : scopeTable(owner, resolved.map((r) => r.object));
  const refused: string[] = [];
  const unknown = new Set<string>();
  const out: JsonObject[] = [];
  for (const { object, document } of resolved) {
    const identity = identityOf(object, document);
    setAll(object, 'labels', spec.labels);
    setAll(object, 'annotations', spec.annotations);
    if (owner !== undefined && scopes !== undefined) placeOwnership(object, identity, owner, scopes, refused, unknown);
    out.push(object);
  }
  if (owner !== undefined && (refused.length > 0 || unknown.size > 0)) throw refusal(refused, [...unknown].sort(), owner);
  return emitManifest(out);
}

interface Identity {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  /** metadata.namespace as written; '' when absent (helm then uses the release's). */
  readonly namespace: string;
}

/** What a document claims to be; anything the API server could read differently is refused. */
function identityOf(object: JsonObject, document: number): Identity {
  const apiVersion = object['apiVersion'];
  const kind = object['kind'];
  if (typeof apiVersion !== 'string' || apiVersion === '' || typeof kind !== 'string' || kind === '') {
    throw new PostRenderRefusal(`manifest document ${document} has no apiVersion or kind (both must be text). Nothing was applied.`);
  }
  const metadata = object['metadata'];
  if (metadata !== undefined && metadata !== null && !isObject(metadata)) {
    throw new PostRenderRefusal(`manifest document ${document} (${kind}) has a metadata that is not a mapping. Nothing was applied.`);
  }
  const m: JsonObject = isObject(metadata) ? metadata : {};
  // helm's kube client decodes every object's metadata into ObjectMeta and fails the release on a
  // field of the wrong type: the fields chartpilot reads or writes are refused here instead.
  for (const field of ['name', 'generateName', 'namespace'] as const) {
    const v = m[field];
    if (v !== undefined && v !== null && typeof v !== 'string') {
      throw new PostRenderRefusal(`manifest document ${document} (${kind}) has a metadata.${field} that is not text. Nothing was applied.`);
    }
  }
  for (const field of ['labels', 'annotations'] as const) {
    const v = m[field];
    if (v === undefined || v === null) continue;
    if (!isObject(v) || Object.values(v).some((e) => e !== null && typeof e !== 'string')) {
      throw new PostRenderRefusal(`manifest document ${document} (${kind}) has metadata.${field} that are not a mapping of text to text (quote the values). Nothing was applied.`);
    }
  }
  const name = m['name'];
  const namespace = m['namespace'];
  return { apiVersion, kind, name: typeof name === 'string' ? name : '', namespace: typeof namespace === 'string' ? namespace : '' };
}

/**
 * Scope of every kind: discovery's answer, plus the kinds defined by CRDs in this very render
 * (helm creates them first), which discovery cannot know yet. A CRD is cluster-scoped, so this
 * only matters where the entry allows cluster-scoped objects.
 */
function scopeTable(owner: PostRenderOwner, objects: readonly JsonObject[]): Map<string, boolean> {
  const table = new Map<string, boolean>();
  for (const k of owner.namespacedKinds) table.set(k, true);
  for (const k of owner.clusterScopedKinds) table.set(k, false);
  for (const o of objects) {
    if (typeof o['apiVersion'] !== 'string' || typeof o['kind'] !== 'string' || `${o['apiVersion']}/${o['kind']}` !== CRD_KIND) continue;
    const spec = o['spec'];
    if (!isObject(spec) || !isObject(spec['names']) || typeof spec['group'] !== 'string' || !Array.isArray(spec['versions'])) continue;
    const kind = spec['names']['kind'];
    const scope = spec['scope'];
    if (typeof kind !== 'string' || (scope !== 'Namespaced' && scope !== 'Cluster')) continue;
    for (const v of spec['versions']) {
      const version = isObject(v) ? v['name'] : undefined;
      if (typeof version !== 'string') continue;
      const key = `${spec['group']}/${version}/${kind}`;
      if (!table.has(key)) table.set(key, scope === 'Namespaced');
    }
  }
  return table;
}

function refusal(refused: readonly string[], unknown: readonly string[], owner: PostRenderOwner): PostRenderRefusal {
  const parts: string[] = [];
  if (refused.length > 0) {
    const named = refused.slice(0, MAX_NAMED).join(', ');
    const more = refused.length > MAX_NAMED ? ` and ${refused.length - MAX_NAMED} more` : '';
    parts.push(
      `the chart renders objects outside the namespace of ${owner.reference.kind} ${owner.namespace}/${owner.reference.name}, ` +
        `which its watches entry does not allow: ${named}${more}`,
    );
  }
  if (unknown.length > 0) {
    parts.push(`the cluster does not serve ${unknown.length === 1 ? 'the kind' : 'the kinds'} ${unknown.join(', ')} (as discovery knows it), so ${unknown.length === 1 ? 'its' : 'their'} scope cannot be checked`);
  }
  const fixes: string[] = [];
  if (refused.length > 0) {
    fixes.push('If this chart should create them, set allowClusterScoped: true (cluster-scoped objects) or allowCrossNamespace: true (other namespaces) on the watches entry');
  }
  if (unknown.length > 0) fixes.push('Install the CRD that defines it (discovery is read again at once on an unknown kind), or fix the apiVersion/kind the chart renders');
  return new PostRenderRefusal(`${parts.join('; ')}. Nothing was applied. ${fixes.join('. ')}`, unknown);
}

/**
 * Same-namespace objects get a controller ownerReference to the CR; cluster-scoped and
 * other-namespace objects cannot (the garbage collector would delete them), so they get
 * operator-sdk's primary-resource annotations — or are refused unless the entry allows them.
 * An unknown kind is refused: its scope decides where it lands, and a guess would fail open.
 */
function placeOwnership(object: JsonObject, id: Identity, owner: PostRenderOwner, scopes: ReadonlyMap<string, boolean>, refused: string[], unknown: Set<string>): void {
  const kindKey = `${id.apiVersion}/${id.kind}`;
  const namespaced = scopes.get(kindKey);
  if (namespaced === undefined) {
    unknown.add(kindKey);
    return;
  }
  if (!namespaced) {
    if (!owner.allowClusterScoped) refused.push(`cluster-scoped ${id.kind} ${id.name}`);
    else setAll(object, 'annotations', owner.nonOwnedAnnotations);
    return;
  }
  const namespace = id.namespace === '' ? owner.namespace : id.namespace;
  if (namespace !== owner.namespace) {
    if (!owner.allowCrossNamespace) refused.push(`${id.kind} ${id.name} in namespace ${namespace}`);
    else setAll(object, 'annotations', owner.nonOwnedAnnotations);
    return;
  }
  // Helm leaves `resource-policy: keep` objects behind on uninstall; an ownerReference would
  // let the garbage collector delete them with the CR anyway.
  if (readAnnotation(object, KEEP_POLICY.annotation) === KEEP_POLICY.value) {
    setAll(object, 'annotations', owner.nonOwnedAnnotations);
    return;
  }
  addOwnerReference(object, owner);
}

function readAnnotation(object: JsonObject, key: string): JsonValue | undefined {
  const m = object['metadata'];
  const a = isObject(m) ? m['annotations'] : undefined;
  return isObject(a) && Object.hasOwn(a, key) ? a[key] : undefined;
}

function metadataOf(object: JsonObject): JsonObject {
  const m = object['metadata'];
  if (isObject(m)) return m;
  const fresh: JsonObject = {};
  object['metadata'] = fresh;
  return fresh;
}

function mapIn(parent: JsonObject, key: 'labels' | 'annotations' | 'ownerReferences'): JsonObject {
  const v = parent[key];
  if (isObject(v)) return v;
  const fresh: JsonObject = {};
  parent[key] = fresh;
  return fresh;
}

function addOwnerReference(object: JsonObject, owner: PostRenderOwner): void {
  const metadata = metadataOf(object);
  const existing = metadata['ownerReferences'];
  const list: JsonValue[] = Array.isArray(existing) ? existing : [];
  if (list.some((r) => isObject(r) && r['uid'] === owner.reference.uid)) return;
  // An object may have only one controller; a chart that already names one keeps it.
  const controller = !list.some((r) => isObject(r) && r['controller'] === true);
  list.push({ ...owner.reference, controller, blockOwnerDeletion: true });
  metadata['ownerReferences'] = list;
}

function setAll(object: JsonObject, field: 'labels' | 'annotations', entries: Readonly<Record<string, string>>): void {
  const keys = Object.keys(entries);
  if (keys.length === 0) return;
  const target = mapIn(metadataOf(object), field);
  for (const key of keys) {
    Object.defineProperty(target, key, { value: entries[key], enumerable: true, writable: true, configurable: true });
  }
}
