/**
 * The ClusterServiceVersion of an OLM registry+v1 bundle, as a pure function of what the other
 * generators produce: the Deployment (deploy.ts), the RBAC objects bound to the operator's
 * ServiceAccount (rbac.ts, metrics.ts), the CRDs (crd.ts) and the samples. The split of the RBAC
 * objects into CSV permissions and separate bundle files is operator-sdk's: what is bound to the
 * operator becomes `permissions`/`clusterPermissions` (OLM creates and binds them), the rest stays
 * an object of its own.
 */
import { isPlainObject } from '../lib/json.js';
import type { HubMetadata } from './bundle-meta.js';

export type KubeObject = Record<string, unknown>;

/** Where OLM puts the namespaces an OperatorGroup targets; chartpilot reads them from WATCH_NAMESPACE. */
export const TARGET_NAMESPACES_ANNOTATION = 'olm.targetNamespaces';

/** chartpilot runs in all four of OLM's install modes: WATCH_NAMESPACE takes "", one or a list. */
export const INSTALL_MODES = [
  { type: 'OwnNamespace', supported: true },
  { type: 'SingleNamespace', supported: true },
  { type: 'MultiNamespace', supported: true },
  { type: 'AllNamespaces', supported: true },
] as const;

const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/u;

export function isSemver(v: string): boolean {
  return SEMVER.test(v);
}

export interface PolicyRule {
  readonly apiGroups?: readonly string[];
  readonly resources?: readonly string[];
  readonly resourceNames?: readonly string[];
  readonly nonResourceURLs?: readonly string[];
  readonly verbs: readonly string[];
}

export interface Permission {
  readonly serviceAccountName: string;
  readonly rules: readonly PolicyRule[];
}

/** RBAC objects split as OLM wants them. */
export interface RbacSplit {
  /** Rules of Roles bound to the operator: OLM grants them in the namespaces the OperatorGroup targets. */
  readonly permissions: readonly PolicyRule[];
  /** Rules of ClusterRoles bound to the operator: granted cluster-wide. */
  readonly clusterPermissions: readonly PolicyRule[];
  /** Roles and ClusterRoles not bound to the operator (e.g. metrics-reader), kept as bundle objects. */
  readonly objects: readonly KubeObject[];
}

function boundToOperator(binding: KubeObject, serviceAccount: string): boolean {
  const subjects = Array.isArray(binding['subjects']) ? binding['subjects'] : [];
  return subjects.some((s) => isPlainObject(s) && s['kind'] === 'ServiceAccount' && s['name'] === serviceAccount);
}

function roleRef(binding: KubeObject): { kind: string; name: string } | undefined {
  const ref = binding['roleRef'];
  return isPlainObject(ref) && typeof ref['kind'] === 'string' && typeof ref['name'] === 'string' ? { kind: ref['kind'], name: ref['name'] } : undefined;
}

function nameOf(o: KubeObject): string {
  const m = o['metadata'];
  return isPlainObject(m) && typeof m['name'] === 'string' ? m['name'] : '';
}

function rulesOf(role: KubeObject): PolicyRule[] {
  return (Array.isArray(role['rules']) ? role['rules'] : []).filter(isPlainObject) as unknown as PolicyRule[];
}

/**
 * Splits RBAC objects by whether a binding gives them to the operator's ServiceAccount. Bindings
 * are dropped: OLM makes its own for the CSV's permissions, and a binding to a ServiceAccount in
 * a fixed namespace would be wrong wherever the operator is installed.
 */
export function splitRbac(objects: readonly KubeObject[], serviceAccount: string): RbacSplit {
  const bindings = objects.filter((o) => o['kind'] === 'RoleBinding' || o['kind'] === 'ClusterRoleBinding');
  const bound = new Set(
    bindings
      .filter((b) => boundToOperator(b, serviceAccount))
      .map(roleRef)
      .filter((r) => r !== undefined)
      .map((r) => `${r.kind}/${r.name}`),
  );
  const permissions: PolicyRule[] = [];
  const clusterPermissions: PolicyRule[] = [];
  const rest: KubeObject[] = [];
  for (const o of objects) {
    if (o['kind'] !== 'Role' && o['kind'] !== 'ClusterRole') continue;
    const isBound = bound.has(`${o['kind']}/${nameOf(o)}`);
    if (!isBound) rest.push(withoutNamespace(o));
    else if (o['kind'] === 'Role') permissions.push(...rulesOf(o));
    else clusterPermissions.push(...rulesOf(o));
  }
  return { permissions: dedupe(permissions), clusterPermissions: dedupe(clusterPermissions), objects: rest };
}

function dedupe(rules: readonly PolicyRule[]): PolicyRule[] {
  const seen = new Set<string>();
  return rules.filter((r) => {
    const key = JSON.stringify(r);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** Bundle objects carry no namespace: OLM creates them in the namespace the operator is installed in. */
export function withoutNamespace(o: KubeObject): KubeObject {
  const m = o['metadata'];
  if (!isPlainObject(m) || !('namespace' in m)) return o;
  const { namespace: _dropped, ...metadata } = m;
  return { ...o, metadata };
}

/**
 * The Deployment's spec as OLM runs it: WATCH_NAMESPACE from the pod's olm.targetNamespaces
 * annotation ("" for AllNamespaces, else the target namespaces comma-separated, which is
 * WATCH_NAMESPACE's own format).
 */
export function olmDeploymentSpec(deployment: KubeObject): KubeObject {
  const spec = structuredClone(deployment['spec']);
  if (!isPlainObject(spec)) throw new Error('the generated Deployment has no spec');
  const template = spec['template'];
  const podSpec = isPlainObject(template) ? template['spec'] : undefined;
  const containers = isPlainObject(podSpec) && Array.isArray(podSpec['containers']) ? podSpec['containers'] : [];
  for (const c of containers) {
    if (!isPlainObject(c) || !Array.isArray(c['env'])) continue;
    c['env'] = c['env'].map((e: unknown) =>
      isPlainObject(e) && e['name'] === 'WATCH_NAMESPACE'
        ? { name: 'WATCH_NAMESPACE', valueFrom: { fieldRef: { fieldPath: `metadata.annotations['${TARGET_NAMESPACES_ANNOTATION}']` } } }
        : e,
    );
  }
  return spec;
}

export interface SpecDescriptor {
  readonly path: string;
  readonly displayName: string;
  readonly description?: string;
}

/** "replicaCount" → "Replica Count", "image.pullPolicy" → "Pull Policy". */
function displayNameOf(path: string): string {
  const last = path.split('.').pop() ?? path;
  const words = last.replace(/([a-z0-9])([A-Z])/gu, '$1 $2').replace(/[-_]+/gu, ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/**
 * One specDescriptor per spec field the CRD schema describes (from values.schema.json), down to
 * `maxDepth` levels: the form OperatorHub's console builds for a new resource.
 */
export function specDescriptors(specSchema: unknown, maxDepth = 3): SpecDescriptor[] {
  const out: SpecDescriptor[] = [];
  const walk = (schema: unknown, prefix: string, depth: number): void => {
    if (!isPlainObject(schema) || !isPlainObject(schema['properties']) || depth > maxDepth) return;
    for (const [key, child] of Object.entries(schema['properties']).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      if (!/^[A-Za-z_][A-Za-z0-9_-]*$/u.test(key) || !isPlainObject(child)) continue;
      const path = prefix === '' ? key : `${prefix}.${key}`;
      const description = typeof child['description'] === 'string' ? child['description'] : undefined;
      if (description !== undefined) out.push({ path, displayName: typeof child['title'] === 'string' ? child['title'] : displayNameOf(path), description });
      walk(child, path, depth + 1);
    }
  };
  walk(specSchema, '', 1);
  return out;
}

export interface OwnedCrd {
  readonly name: string;
  readonly version: string;
  readonly kind: string;
  readonly displayName: string;
  readonly description: string;
  readonly specDescriptors?: readonly SpecDescriptor[];
}

/** One owned entry per served version of each CRD, described by its chart. */
export function ownedCrds(crds: readonly KubeObject[], describe: (kind: string) => string): OwnedCrd[] {
  const out: OwnedCrd[] = [];
  for (const crd of crds) {
    const spec = crd['spec'];
    if (!isPlainObject(spec) || !isPlainObject(spec['names'])) continue;
    const kind = String(spec['names']['kind']);
    for (const v of Array.isArray(spec['versions']) ? spec['versions'] : []) {
      if (!isPlainObject(v) || v['served'] === false) continue;
      const schema = isPlainObject(v['schema']) ? v['schema']['openAPIV3Schema'] : undefined;
      const specSchema = isPlainObject(schema) && isPlainObject(schema['properties']) ? schema['properties']['spec'] : undefined;
      const descriptors = specDescriptors(specSchema);
      out.push({
        name: nameOf(crd),
        version: String(v['name']),
        kind,
        displayName: kind.replace(/([a-z0-9])([A-Z])/gu, '$1 $2'),
        description: describe(kind),
        ...(descriptors.length > 0 ? { specDescriptors: descriptors } : {}),
      });
    }
  }
  return out;
}

export interface CsvInput {
  readonly packageName: string;
  readonly version: string;
  readonly image: string;
  readonly deploymentName: string;
  readonly deployment: KubeObject;
  readonly serviceAccount: string;
  readonly rbac: RbacSplit;
  readonly crds: readonly KubeObject[];
  /** Chart description per kind (for the owned CRDs). */
  readonly describeKind: (kind: string) => string;
  readonly samples: readonly KubeObject[];
  readonly hub: HubMetadata;
  readonly replaces?: string | undefined;
  readonly skipRange?: string | undefined;
  readonly createdAt?: string | undefined;
  /** Suggested install namespace (the operator namespace of `generate deploy`). */
  readonly namespace: string;
  readonly builder: string;
}

export function csvName(packageName: string, version: string): string {
  return `${packageName}.v${version}`;
}

export function buildCsv(i: CsvInput): KubeObject {
  const h = i.hub;
  const annotations: Record<string, string> = {
    'alm-examples': JSON.stringify(i.samples, null, 2),
    capabilities: 'Basic Install',
    containerImage: i.image,
    ...(i.createdAt === undefined ? {} : { createdAt: i.createdAt }),
    description: h.description,
    'operatorframework.io/suggested-namespace': i.namespace,
    'operators.operatorframework.io/builder': i.builder,
    ...(i.skipRange === undefined ? {} : { 'olm.skipRange': i.skipRange }),
  };
  const spec: Record<string, unknown> = {
    displayName: h.displayName,
    description: h.description,
    version: i.version,
    ...(i.replaces === undefined ? {} : { replaces: i.replaces }),
    ...(h.minKubeVersion === undefined ? {} : { minKubeVersion: h.minKubeVersion }),
    maturity: /^0\./u.test(i.version) || i.version.includes('-') ? 'alpha' : 'stable',
    provider: { name: h.provider },
    maintainers: h.maintainers.map((m) => ({ name: m.name, email: m.email })),
    links: h.links.map((l) => ({ name: l.name, url: l.url })),
    keywords: [...h.keywords],
    // An empty entry rather than none, as operator-sdk writes it: its OperatorHub check crashes on an empty list.
    icon: [h.icon === undefined ? { base64data: '', mediatype: '' } : { base64data: h.icon.base64data, mediatype: h.icon.mediatype }],
    installModes: INSTALL_MODES.map((m) => ({ ...m })),
    customresourcedefinitions: { owned: ownedCrds(i.crds, i.describeKind) },
    install: {
      strategy: 'deployment',
      spec: {
        deployments: [{ name: i.deploymentName, label: labelsOf(i.deployment), spec: olmDeploymentSpec(i.deployment) }],
        ...(i.rbac.clusterPermissions.length === 0 ? {} : { clusterPermissions: [{ serviceAccountName: i.serviceAccount, rules: i.rbac.clusterPermissions }] }),
        ...(i.rbac.permissions.length === 0 ? {} : { permissions: [{ serviceAccountName: i.serviceAccount, rules: i.rbac.permissions }] }),
      },
    },
  };
  return {
    apiVersion: 'operators.coreos.com/v1alpha1',
    kind: 'ClusterServiceVersion',
    metadata: { name: csvName(i.packageName, i.version), annotations },
    spec,
  };
}

function labelsOf(o: KubeObject): Record<string, unknown> {
  const m = o['metadata'];
  return isPlainObject(m) && isPlainObject(m['labels']) ? m['labels'] : {};
}
