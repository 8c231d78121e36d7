// `kubectl get … -o json` answered in the test process. Tests poll with it (every 250 ms while a
// wait lasts) and each kubectl process costs ~0.1 s of CPU to start: about 3000 of them took
// ~300 CPU-s of a suite run on 2 cores. Only the plain forms are answered here (one type, at most
// one name, -n/-A, -l, --field-selector, --ignore-not-found, JSON output); anything else returns
// undefined and the caller runs the real kubectl. kubectl-get.test.ts compares both answers.
import { KubeApiError, type KubeClient } from '../../src/kube/rest.js';

/** What kubectl would have printed and exited with. */
export interface GetResult {
  readonly stdout: string;
  readonly stderr: string;
  readonly exitCode: number;
}

export interface GetRequest {
  /** As typed: plural, singular, short name or kind, optionally `.group` or `.version.group`. */
  readonly type: string;
  readonly name: string | undefined;
  readonly namespace: string | undefined;
  readonly allNamespaces: boolean;
  readonly labelSelector: string | undefined;
  readonly fieldSelector: string | undefined;
  readonly ignoreNotFound: boolean;
}

/** The request `kubectl <args>` makes, when it is a form answered here; else undefined. */
export function parseKubectlGet(args: readonly string[]): GetRequest | undefined {
  if (args[0] !== 'get') return undefined;
  const positional: string[] = [];
  let namespace: string | undefined;
  let allNamespaces = false;
  let labelSelector: string | undefined;
  let fieldSelector: string | undefined;
  let ignoreNotFound = false;
  let json = false;
  for (let i = 1; i < args.length; i++) {
    const arg = args[i] ?? '';
    const eq = arg.indexOf('=');
    const flag = arg.startsWith('--') && eq > 0 ? arg.slice(0, eq) : arg;
    const inline = arg.startsWith('--') && eq > 0 ? arg.slice(eq + 1) : undefined;
    const value = (): string | undefined => inline ?? args[++i];
    if (!arg.startsWith('-')) positional.push(arg);
    else if (flag === '-n' || flag === '--namespace') namespace = value();
    else if (flag === '-A' || flag === '--all-namespaces') allNamespaces = true;
    else if (flag === '-l' || flag === '--selector') labelSelector = value();
    else if (flag === '--field-selector') fieldSelector = value();
    else if (flag === '--ignore-not-found' && (inline === undefined || inline === 'true')) ignoreNotFound = true;
    else if (arg === '-ojson' || arg === '-o=json' || ((flag === '-o' || flag === '--output') && value() === 'json')) json = true;
    else return undefined;
  }
  if (!json || positional.length === 0 || positional.length > 2) return undefined;
  let [type = '', name] = positional;
  if (type.includes('/')) {
    if (name !== undefined) return undefined;
    [type = '', name] = type.split('/', 2);
  }
  if (type === '' || type.includes(',') || name === '') return undefined;
  if (name !== undefined && (allNamespaces || labelSelector !== undefined || fieldSelector !== undefined)) return undefined;
  return { type, name, namespace, allNamespaces, labelSelector, fieldSelector, ignoreNotFound };
}

export interface Resource {
  readonly group: string;
  readonly version: string;
  readonly plural: string;
  readonly singular: string;
  readonly kind: string;
  readonly shortNames: readonly string[];
  readonly namespaced: boolean;
}

interface DiscoveryResource {
  resource: string;
  responseKind?: { kind?: string };
  scope?: string;
  singularResource?: string;
  shortNames?: string[];
}
interface DiscoveryList {
  items?: { metadata?: { name?: string }; versions?: { version: string; resources?: DiscoveryResource[] }[] }[];
}

/** Every resource the server serves, at its group's preferred version, core first (kubectl's order). */
export function resourcesOf(lists: readonly DiscoveryList[]): Resource[] {
  const out: Resource[] = [];
  for (const list of lists) {
    for (const group of list.items ?? []) {
      const preferred = group.versions?.[0];
      if (preferred === undefined) continue;
      for (const r of preferred.resources ?? []) {
        if (r.resource.includes('/')) continue;
        out.push({
          group: group.metadata?.name ?? '',
          version: preferred.version,
          plural: r.resource,
          singular: r.singularResource ?? '',
          kind: r.responseKind?.kind ?? '',
          shortNames: r.shortNames ?? [],
          namespaced: r.scope === 'Namespaced',
        });
      }
    }
  }
  return out;
}

/** kubectl's lookup of a typed resource name: `name`, `name.group` or `name.version.group`. */
export function findResource(resources: readonly Resource[], typed: string): Resource | undefined {
  const lower = typed.toLowerCase();
  const names = (r: Resource): string[] => [r.plural, r.singular, r.kind.toLowerCase(), ...r.shortNames];
  const plain = resources.find((r) => names(r).includes(lower));
  if (plain !== undefined) return plain;
  for (const r of resources) {
    if (r.group === '') continue;
    for (const n of names(r)) {
      if (lower === `${n}.${r.group}` || lower === `${n}.${r.version}.${r.group}`) return r;
    }
  }
  return undefined;
}

interface ServedObject {
  metadata?: Record<string, unknown>;
  [key: string]: unknown;
}

/** kubectl leaves managedFields out unless --show-managed-fields is given. */
function withoutManagedFields(obj: ServedObject): ServedObject {
  if (obj.metadata === undefined || !('managedFields' in obj.metadata)) return obj;
  const { managedFields: _, ...metadata } = obj.metadata;
  return { ...obj, metadata };
}

const AGGREGATED = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';

/** Answers GetRequests through one client, with the server's discovery fetched once and again on a miss. */
export class InProcessGet {
  private resources: Promise<Resource[]> | undefined;

  constructor(private readonly client: KubeClient, private readonly defaultNamespace: string) {}

  /** kubectl's result for `req`, or undefined when the type is unknown (the real kubectl then says so). */
  async run(req: GetRequest): Promise<GetResult | undefined> {
    const resource = await this.resolve(req.type);
    if (resource === undefined) return undefined;
    const base = resource.group === '' ? `/api/${resource.version}` : `/apis/${resource.group}/${resource.version}`;
    const ns = !resource.namespaced || req.allNamespaces ? '' : `/namespaces/${encodeURIComponent(req.namespace ?? this.defaultNamespace)}`;
    const path = `${base}${ns}/${resource.plural}${req.name === undefined ? '' : `/${encodeURIComponent(req.name)}`}`;
    const query = {
      ...(req.labelSelector === undefined ? {} : { labelSelector: req.labelSelector }),
      ...(req.fieldSelector === undefined ? {} : { fieldSelector: req.fieldSelector }),
    };
    try {
      const body = await this.client.request<ServedObject & { items?: ServedObject[] }>('GET', path, { query });
      if (req.name !== undefined) return { exitCode: 0, stdout: JSON.stringify(withoutManagedFields(body), null, 4), stderr: '' };
      // kubectl prints a List whose items carry apiVersion and kind (the server's list items have neither).
      const apiVersion = resource.group === '' ? resource.version : `${resource.group}/${resource.version}`;
      const items = (body.items ?? []).map((item) => ({ apiVersion, kind: resource.kind, ...withoutManagedFields(item) }));
      return { exitCode: 0, stdout: JSON.stringify({ apiVersion: 'v1', items, kind: 'List', metadata: { resourceVersion: '' } }, null, 4), stderr: '' };
    } catch (err) {
      if (!(err instanceof KubeApiError) || err.status === 0) throw err;
      if (err.reason === 'NotFound' && req.ignoreNotFound) return { exitCode: 0, stdout: '', stderr: '' };
      return { exitCode: 1, stdout: '', stderr: `Error from server (${err.reason}): ${err.message}` };
    }
  }

  private async resolve(typed: string): Promise<Resource | undefined> {
    const found = findResource(await this.discover(false), typed);
    // A miss may be a CRD created since: look once more.
    return found ?? findResource(await this.discover(true), typed);
  }

  private discover(fresh: boolean): Promise<Resource[]> {
    if (fresh || this.resources === undefined) {
      const loading = Promise.all(['/api', '/apis'].map((p) => this.client.request<DiscoveryList>('GET', p, { accept: AGGREGATED }))).then(resourcesOf);
      this.resources = loading;
      loading.catch(() => {
        if (this.resources === loading) this.resources = undefined;
      });
    }
    return this.resources;
  }
}
