/**
 * Which kinds a chart creates: from a rendered manifest (exact, for the values it was rendered
 * with) and from its template files (catches objects behind `{{ if }}` that the defaults leave
 * out, which operator-sdk's render-only guess misses until a CR turns them on in production).
 */
import { isMap, isSeq, parseAllDocuments } from 'yaml';
import { readArchive, type ChartFiles } from '../config/chart-files.js';
import { isPlainObject } from '../lib/json.js';

export interface FoundKind {
  /** Undefined when the template computes it (`apiVersion: {{ include ... }}`). */
  readonly apiVersion: string | undefined;
  readonly kind: string;
  /** The file it came from inside the chart, e.g. `templates/deployment.yaml` or `crds/x.yaml`. */
  readonly origin: string;
}

export interface PolicyRule {
  readonly apiGroups?: string[];
  readonly resources?: string[];
  readonly resourceNames?: string[];
  readonly verbs: string[];
  readonly nonResourceURLs?: string[];
}

/** A Role or ClusterRole the chart renders: the operator must hold its rules to create it. */
export interface RenderedRole {
  readonly kind: 'Role' | 'ClusterRole';
  readonly name: string;
  readonly origin: string;
  readonly rules: readonly PolicyRule[];
}

/** A binding whose role the chart does not render (e.g. the built-in `view`). */
export interface ForeignRoleRef {
  readonly bindingKind: string;
  readonly roleKind: string;
  readonly roleName: string;
  readonly origin: string;
}

export interface ManifestScan {
  readonly kinds: FoundKind[];
  readonly roles: RenderedRole[];
  readonly roleRefs: ForeignRoleRef[];
}

/** Kinds, roles and role references in `helm template` output. Throws on unparsable YAML. */
export function scanManifest(text: string): ManifestScan {
  const kinds: FoundKind[] = [];
  const roles: RenderedRole[] = [];
  const refs: { bindingKind: string; roleKind: string; roleName: string; origin: string }[] = [];
  for (const doc of parseAllDocuments(text, { version: '1.1' })) {
    const first = doc.errors[0];
    if (first !== undefined) throw new Error(`the rendered manifest is not valid YAML: ${first.message.split('\n')[0] ?? ''}`);
    // helm template writes "# Source: <chart>/templates/x.yaml" before every object.
    if (!isMap(doc.contents) && !isSeq(doc.contents)) continue;
    // After "---" the comment belongs to the document; at the very start, to its first node.
    const comments = `${doc.commentBefore ?? ''}\n${doc.contents.commentBefore ?? ''}`;
    const source = /Source: (?:[^/\n]+\/)?(\S+)/u.exec(comments)?.[1] ?? 'rendered manifest';
    const value: unknown = doc.toJS({ maxAliasCount: 1000 });
    for (const obj of flattenLists(value)) {
      const apiVersion = obj['apiVersion'];
      const kind = obj['kind'];
      if (typeof apiVersion !== 'string' || typeof kind !== 'string') continue;
      kinds.push({ apiVersion, kind, origin: source });
      if (apiVersion.startsWith('rbac.authorization.k8s.io/')) {
        const name = isPlainObject(obj['metadata']) && typeof obj['metadata']['name'] === 'string' ? obj['metadata']['name'] : '';
        if (kind === 'Role' || kind === 'ClusterRole') {
          roles.push({ kind, name, origin: source, rules: Array.isArray(obj['rules']) ? obj['rules'].flatMap(toRule) : [] });
        } else if ((kind === 'RoleBinding' || kind === 'ClusterRoleBinding') && isPlainObject(obj['roleRef'])) {
          const ref = obj['roleRef'];
          if (typeof ref['kind'] === 'string' && typeof ref['name'] === 'string') {
            refs.push({ bindingKind: kind, roleKind: ref['kind'], roleName: ref['name'], origin: source });
          }
        }
      }
    }
  }
  const rendered = new Set(roles.map((r) => `${r.kind}/${r.name}`));
  return { kinds, roles, roleRefs: refs.filter((r) => !rendered.has(`${r.roleKind}/${r.roleName}`)) };
}

function flattenLists(value: unknown): Record<string, unknown>[] {
  if (!isPlainObject(value)) return [];
  // `kind: List` (and FooList) wrap objects in items.
  if (typeof value['kind'] === 'string' && value['kind'].endsWith('List') && Array.isArray(value['items'])) {
    return value['items'].flatMap(flattenLists);
  }
  return [value];
}

function toRule(raw: unknown): PolicyRule[] {
  if (!isPlainObject(raw)) return [];
  const strings = (v: unknown): string[] | undefined => (Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string') : undefined);
  const verbs = strings(raw['verbs']) ?? [];
  if (verbs.length === 0) return [];
  const rule: Record<string, string[]> = {};
  for (const key of ['apiGroups', 'resources', 'resourceNames', 'nonResourceURLs']) {
    const v = strings(raw[key]);
    if (v !== undefined && v.length > 0) rule[key] = v;
  }
  return [{ ...rule, verbs }];
}

const TOP_LEVEL = (key: string): RegExp => new RegExp(`^${key}:[ \\t]*(.*?)[ \\t]*(?:#.*)?$`, 'gmu');

/**
 * Kinds named at the top level of the chart's template files (and of its subcharts, packaged or
 * not) and the CRDs in `crds/` directories. A heuristic by design: it reads text, not templates.
 */
export async function scanTemplates(chart: ChartFiles): Promise<FoundKind[]> {
  return scanFiles(chart.files, '');
}

async function scanFiles(files: ReadonlyMap<string, Uint8Array>, prefix: string): Promise<FoundKind[]> {
  const found: FoundKind[] = [];
  for (const [name, data] of [...files].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const parts = name.split('/');
    const base = parts.at(-1) ?? '';
    // A packaged subchart: charts/<sub>.tgz directly under this chart.
    if (parts.length === 2 && parts[0] === 'charts' && /\.tgz$/u.test(base)) {
      try {
        found.push(...(await scanFiles(await readArchive(data, name), `${prefix}${name}/`)));
      } catch {
        // A broken subchart archive fails `helm template` too, which reports it better.
      }
      continue;
    }
    const dir = parts.slice(0, -1);
    // Only this chart's own templates/ and crds/, or those of an unpacked subchart below charts/.
    const owner = dir.lastIndexOf('templates') !== -1 ? dir.lastIndexOf('templates') : dir.lastIndexOf('crds');
    if (owner === -1 || !isChartRoot(dir.slice(0, owner))) continue;
    const isCrdDir = dir[owner] === 'crds';
    if (!isCrdDir && (base.startsWith('_') || base === 'NOTES.txt')) continue;
    if (isCrdDir && !/\.(ya?ml|json)$/u.test(base)) continue;
    const text = new TextDecoder().decode(data);
    for (const chunk of text.split(/^---.*$/mu)) {
      const kinds = [...chunk.matchAll(TOP_LEVEL('kind'))].map((m) => unquote(m[1] ?? ''));
      const apiVersions = [...chunk.matchAll(TOP_LEVEL('apiVersion'))].map((m) => unquote(m[1] ?? ''));
      const kind = kinds[0];
      if (kind === undefined || kinds.length !== 1 || !/^[A-Za-z][A-Za-z0-9]*$/u.test(kind)) continue;
      const apiVersion = apiVersions.length === 1 && apiVersions[0] !== undefined && /^[a-z0-9.-]*\/?[a-z0-9]+$/u.test(apiVersions[0]) ? apiVersions[0] : undefined;
      found.push({ apiVersion, kind, origin: `${prefix}${name}` });
    }
  }
  return found;
}

/** `[]` (the chart itself) or `charts/<sub>` (an unpacked subchart), recursively. */
function isChartRoot(dir: readonly string[]): boolean {
  if (dir.length === 0) return true;
  return dir.length >= 2 && dir[dir.length - 2] === 'charts' && isChartRoot(dir.slice(0, -2));
}

function unquote(s: string): string {
  const m = /^(['"])(.*)\1$/u.exec(s);
  return m?.[2] ?? s;
}
