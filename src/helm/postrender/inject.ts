/**
 * The transformation our post-renderer applies: add labels/annotations to the metadata of every
 * object in a multi-document manifest (each item of a `*List` kind instead of the list itself).
 *
 * Pure so it can be unit-tested without spawning helm; `main.ts` wraps it in stdin/stdout.
 */
import { isMap, isSeq, parseAllDocuments, type Document } from 'yaml';

import { KEEP_POLICY, type PostRenderOwner, type PostRenderSpec } from '../types.js';

/**
 * Parse as YAML 1.1 because helm decodes manifests with sigs.k8s.io/yaml (go-yaml, YAML 1.1):
 * with 1.2 rules `0755` would be re-emitted as `755` and `on`/`yes` would stay unquoted where we
 * insert them, silently changing what the API server receives. Big integers stay exact.
 */
const PARSE_OPTIONS = { version: '1.1', intAsBigInt: true, keepSourceTokens: false } as const;

export class PostRenderInputError extends Error {
  override readonly name = 'PostRenderInputError';
}

/** The chart renders objects its watches entry does not allow; nothing may be applied. */
export class PostRenderRefusal extends Error {
  override readonly name = 'PostRenderRefusal';
}

/** How many refused objects a message names before summarising. */
const MAX_NAMED = 5;

export function injectMetadata(manifest: string, spec: PostRenderSpec): string {
  const docs = parseAllDocuments(manifest, PARSE_OPTIONS);
  if (!Array.isArray(docs)) {
    // parseAllDocuments returns an EmptyStream (not an array) for input with no documents.
    return manifest;
  }
  const out: string[] = [];
  const refused: string[] = [];
  for (const doc of docs) {
    const firstError = doc.errors[0];
    if (firstError !== undefined) {
      throw new PostRenderInputError(`manifest is not valid YAML: ${firstError.message}`);
    }
    if (isMap(doc.contents)) {
      const kind = doc.get('kind');
      const items = doc.get('items');
      if (typeof kind === 'string' && kind.endsWith('List') && isSeq(items)) {
        items.items.forEach((_item, i) => {
          if (isMap(doc.getIn(['items', i]))) injectInto(doc, ['items', i], spec, refused);
        });
      } else {
        injectInto(doc, [], spec, refused);
      }
    }
    const text = doc.toString({ lineWidth: 0 });
    // Every document after the first needs its own separator; helm's input always starts
    // with one, so emit it uniformly rather than relying on what the parser remembered.
    out.push(text.startsWith('---') ? text : `---\n${text}`);
  }
  if (refused.length > 0 && spec.owner !== undefined) throw new PostRenderRefusal(refusalMessage(refused, spec.owner));
  return out.join('');
}

function refusalMessage(refused: readonly string[], owner: PostRenderOwner): string {
  const named = refused.slice(0, MAX_NAMED).join(', ');
  const more = refused.length > MAX_NAMED ? ` and ${refused.length - MAX_NAMED} more` : '';
  return (
    `the chart renders objects outside the namespace of ${owner.reference.kind} ${owner.namespace}/${owner.reference.name}, ` +
    `which its watches entry does not allow: ${named}${more}. Nothing was applied. If this chart should create them, ` +
    `set allowClusterScoped: true (cluster-scoped objects) or allowCrossNamespace: true (other namespaces) on the watches entry`
  );
}

function injectInto(doc: Document, prefix: readonly (string | number)[], spec: PostRenderSpec, refused: string[]): void {
  setAll(doc, [...prefix, 'metadata', 'labels'], spec.labels);
  setAll(doc, [...prefix, 'metadata', 'annotations'], spec.annotations);
  if (spec.owner !== undefined) placeOwnership(doc, prefix, spec.owner, refused);
}

/**
 * Same-namespace objects get a controller ownerReference to the CR; cluster-scoped and
 * other-namespace objects cannot (the garbage collector would delete them), so they get
 * operator-sdk's primary-resource annotations — or are refused unless the entry allows them.
 */
function placeOwnership(doc: Document, prefix: readonly (string | number)[], owner: PostRenderOwner, refused: string[]): void {
  const apiVersion = text(doc.getIn([...prefix, 'apiVersion']));
  const kind = text(doc.getIn([...prefix, 'kind']));
  const name = text(doc.getIn([...prefix, 'metadata', 'name']));
  const rawNamespace = doc.getIn([...prefix, 'metadata', 'namespace']);
  if (owner.clusterScopedKinds.includes(`${apiVersion}/${kind}`)) {
    if (!owner.allowClusterScoped) refused.push(`cluster-scoped ${kind} ${name}`);
    else setAll(doc, [...prefix, 'metadata', 'annotations'], owner.nonOwnedAnnotations);
    return;
  }
  const namespace = typeof rawNamespace === 'string' && rawNamespace !== '' ? rawNamespace : owner.namespace;
  if (namespace !== owner.namespace) {
    if (!owner.allowCrossNamespace) refused.push(`${kind} ${name} in namespace ${namespace}`);
    else setAll(doc, [...prefix, 'metadata', 'annotations'], owner.nonOwnedAnnotations);
    return;
  }
  // Helm leaves `resource-policy: keep` objects behind on uninstall; an ownerReference would
  // let the garbage collector delete them with the CR anyway.
  if (doc.getIn([...prefix, 'metadata', 'annotations', KEEP_POLICY.annotation]) === KEEP_POLICY.value) {
    setAll(doc, [...prefix, 'metadata', 'annotations'], owner.nonOwnedAnnotations);
    return;
  }
  addOwnerReference(doc, [...prefix, 'metadata', 'ownerReferences'], owner);
}

/** A scalar field's text; '' for anything else (a template may leave a field empty or odd). */
function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function addOwnerReference(doc: Document, path: readonly (string | number)[], owner: PostRenderOwner): void {
  const existing = doc.getIn(path);
  const refs: unknown = isSeq(existing) ? existing.toJSON() : [];
  const list = Array.isArray(refs) ? (refs as Record<string, unknown>[]) : [];
  if (list.some((r) => r['uid'] === owner.reference.uid)) return;
  // An object may have only one controller; a chart that already names one keeps it.
  const controller = !list.some((r) => r['controller'] === true);
  const ref = { ...owner.reference, controller, blockOwnerDeletion: true };
  if (isSeq(existing)) existing.add(doc.createNode(ref));
  else doc.setIn(path, doc.createNode([ref]));
}

function setAll(doc: Document, path: readonly (string | number)[], entries: Readonly<Record<string, string>>): void {
  const keys = Object.keys(entries);
  if (keys.length === 0) return;
  // `labels:` with no value parses as null; replace anything that is not a map with one.
  const parentPath = path.slice(0, -1);
  if (!isMap(doc.getIn(parentPath))) doc.setIn(parentPath, doc.createNode({}));
  if (!isMap(doc.getIn(path))) doc.setIn(path, doc.createNode({}));
  for (const key of keys) {
    const node = doc.createNode(entries[key]);
    // Always double-quote: label values like "true" or "on" must stay strings for go-yaml.
    node.type = 'QUOTE_DOUBLE';
    doc.setIn([...path, key], node);
  }
}
