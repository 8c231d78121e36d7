/**
 * Finds what the RBAC must cover: renders every chart (default values, then each sample CR, with
 * the entry's overrideValues laid on top as the operator does), reads its templates, and resolves
 * every kind to its resource through discovery when a cluster answers, else a built-in table.
 */
import { apiVersionOf, type AnsibleSource, type GroupVersionKind } from '../config/types.js';
import { deepMerge, overrideValuesToTree } from '../config/watches.js';
import { isForbidden, isNotFound } from '../kube/errors.js';
import type { KubeClient } from '../kube/rest.js';
import { loadChartInfo } from './chart-meta.js';
import { pluralOf } from './kind-names.js';
import { scanManifest, scanTemplates, type FoundKind } from './manifest-kinds.js';
import type { ChartObject, RbacPlan, WatchedResource } from './rbac-model.js';
import { groupOf, guessResource, tableLookup, tableLookupByKind, type ResourceInfo } from './resource-table.js';
import { READ_VERBS } from './rbac-rules.js';
import { errorMessage } from '../lib/errors.js';
import type { TaskKind, TaskScan } from './ansible-tasks.js';
import type { ValuesFromSettings } from '../core/values-from.js';

export interface PlanEntry extends GroupVersionKind {
  readonly chartPath: string;
  /** How comments name the chart (the path as watches.yaml gives it, or relative to it). */
  readonly chartLabel: string;
  readonly overrideValues: Readonly<Record<string, string>>;
  readonly allowClusterScoped: boolean;
  /** The ServiceAccount its CRs run as (the entry's, else the default); undefined = the operator. */
  readonly serviceAccount?: string | undefined;
  /** Set for a kind served by an Ansible role or playbook (then chartPath is ''). */
  readonly ansible?: AnsibleSource | undefined;
  readonly valuesFrom?: ValuesFromSettings | undefined;
}

export interface Resolved {
  readonly info: ResourceInfo;
  readonly resolution: ChartObject['resolution'];
}

export interface Resolver {
  /** For the output's header: "discovery at <server>" or "the built-in table". */
  readonly description: string;
  resolve(apiVersion: string, kind: string): Promise<Resolved>;
  /** The plural the API serves a watched kind under (the CRD may predate our naming). */
  watchedPlural(gvk: GroupVersionKind): Promise<string>;
}

export interface PlanDeps {
  /** `helm template` of a chart with values; rejects when the chart does not render. */
  render(chartPath: string, values: Record<string, unknown>): Promise<string>;
  readonly resolver: Resolver;
  /** What an Ansible entry's role/playbook (and finalizer's) tasks touch (ansible-tasks.ts). */
  scanAnsible?(source: AnsibleSource): Promise<TaskScan>;
}

/** Sample CR specs by `apiVersion kind`, rendered in addition to the chart defaults. */
export type Samples = ReadonlyMap<string, readonly Record<string, unknown>[]>;

export function sampleKey(apiVersion: string, kind: string): string {
  return `${apiVersion} ${kind}`;
}

function fromTable(apiVersion: string, kind: string): Resolved {
  const info = tableLookup(apiVersion, kind);
  return info === undefined ? { info: guessResource(apiVersion, kind), resolution: 'guess' } : { info, resolution: 'table' };
}

export const tableResolver: Resolver = {
  description: "the built-in table of common kinds (no cluster was asked)",
  resolve: (apiVersion, kind) => Promise.resolve(fromTable(apiVersion, kind)),
  watchedPlural: (gvk) => Promise.resolve(pluralOf(gvk.kind)),
};

/** Resolves through the API server's discovery, falling back to the table for kinds it lacks. */
export function discoveryResolver(client: KubeClient): Resolver {
  return {
    // No server address: the output is committed, and must not change with the cluster used.
    description: "the cluster's API discovery (the built-in table for kinds it does not serve)",
    async resolve(apiVersion, kind) {
      try {
        const r = await client.resourceFor(apiVersion, kind);
        return { info: { group: r.group, kind, resource: r.plural, namespaced: r.namespaced }, resolution: 'discovery' };
      } catch (err) {
        if (isNotFound(err) || isForbidden(err)) return fromTable(apiVersion, kind);
        throw err;
      }
    },
    async watchedPlural(gvk) {
      try {
        return (await client.resourceFor(apiVersionOf(gvk), gvk.kind)).plural;
      } catch (err) {
        if (isNotFound(err) || isForbidden(err)) return pluralOf(gvk.kind);
        throw err;
      }
    },
  };
}

export async function planRbac(entries: readonly PlanEntry[], samples: Samples, deps: PlanDeps): Promise<RbacPlan> {
  const warnings: string[] = [];
  const watched: WatchedResource[] = [];
  const objects: ChartObject[] = [];
  const roles: RbacPlan['roles'][number][] = [];
  const boundRoles: RbacPlan['boundRoles'][number][] = [];

  for (const entry of entries) {
    // Who creates this chart's objects, on everything planned for it (absent: the operator).
    const runsAs = entry.serviceAccount === undefined ? {} : { serviceAccount: entry.serviceAccount };
    watched.push({ group: entry.group, kind: entry.kind, plural: await deps.resolver.watchedPlural(entry), ...runsAs, ...(entry.ansible === undefined ? {} : { ansible: true }), ...(entry.valuesFrom === undefined ? {} : { valuesFrom: entry.valuesFrom }) });
    if (entry.ansible !== undefined) {
      if (deps.scanAnsible === undefined) throw new Error('planRbac: an Ansible entry needs deps.scanAnsible');
      const scan = await deps.scanAnsible(entry.ansible);
      warnings.push(...scan.notes.map((n) => `${entry.chartLabel}: ${n}`));
      objects.push(...(await ansibleObjects(entry, scan.kinds, deps.resolver, warnings)));
      continue;
    }
    const chart = entry.chartLabel;
    const overrides = overrideValuesToTree(entry.overrideValues);
    const specs: { label: string; values: Record<string, unknown> }[] = [
      { label: 'its default values', values: overrides },
      ...(samples.get(sampleKey(apiVersionOf(entry), entry.kind)) ?? []).map((spec, i) => ({
        label: `sample ${String(i + 1)} of ${entry.kind}`,
        values: deepMerge(spec, overrides),
      })),
    ];

    const rendered: FoundKind[] = [];
    for (const s of specs) {
      let manifest: string;
      try {
        manifest = await deps.render(entry.chartPath, s.values);
      } catch (err) {
        warnings.push(`chart ${chart} does not render with ${s.label} (${firstLine(err)}); only its template files were read`);
        continue;
      }
      try {
        const scan = scanManifest(manifest);
        rendered.push(...scan.kinds);
        roles.push(...scan.roles.map((r) => ({ ...r, chart, ...runsAs })));
        boundRoles.push(...scan.roleRefs.map((r) => ({ chart, roleKind: r.roleKind, roleName: r.roleName, ...runsAs })));
      } catch (err) {
        warnings.push(`chart ${chart} rendered with ${s.label}: ${firstLine(err)}`);
      }
    }
    const info = await loadChartInfo(entry.chartPath);
    const fromFiles = await scanTemplates(info.files);

    const seen = new Map<string, ChartObject>();
    const add = async (found: FoundKind, isRendered: boolean): Promise<void> => {
      const crdsDir = /(^|\/)crds\//u.test(found.origin);
      let resolved: Resolved | undefined;
      if (found.apiVersion !== undefined) {
        resolved = await deps.resolver.resolve(found.apiVersion, found.kind);
      } else {
        // The template computes its apiVersion: only a kind the table knows unambiguously counts.
        const byKind = tableLookupByKind(found.kind);
        if (byKind === undefined) {
          if (!rendered.some((r) => r.kind === found.kind)) {
            warnings.push(`chart ${chart}: ${found.origin} creates a ${found.kind} whose apiVersion is computed by the template and the kind is not one chartpilot knows; not granted — render it with a sample (--sample) that enables it`);
          }
          return;
        }
        resolved = { info: byKind, resolution: 'table' };
      }
      const key = `${resolved.info.group}/${resolved.info.resource}/${String(crdsDir)}`;
      const prior = seen.get(key);
      if (prior !== undefined) {
        if (isRendered && !prior.rendered) seen.set(key, { ...prior, rendered: true });
        return;
      }
      if (resolved.resolution === 'guess') {
        warnings.push(`chart ${chart} creates ${found.kind} (${found.apiVersion ?? '?'}), which neither the cluster nor the built-in table knows; granted as resource "${resolved.info.resource}" — check the name (run with a cluster that has the kind's CRD to resolve it)`);
      }
      seen.set(key, {
        chart,
        group: resolved.info.group,
        resource: resolved.info.resource,
        kind: found.kind,
        namespaced: resolved.info.namespaced,
        resolution: resolved.resolution,
        rendered: isRendered,
        crdsDir,
        clusterScopedAllowed: entry.allowClusterScoped,
        ...runsAs,
      });
    };
    for (const f of rendered) await add(f, true);
    for (const f of fromFiles) await add(f, false);
    objects.push(...seen.values());
  }
  return { watched, objects, roles, boundRoles, warnings, resolvedBy: deps.resolver.description };
}

/** The verbs an Ansible task needs on what it names, when fewer than all; undefined = all. */
const TASK_ACCESS: Readonly<Record<Exclude<TaskKind['access'], 'write'>, { verbs: readonly string[]; why: string }>> = {
  read: { verbs: READ_VERBS, why: 'objects the roles only read (k8s_info)' },
  // k8s_status reads the object, then merge-patches its status (replaces it with replace: true).
  status: { verbs: ['get', 'patch', 'update'], why: 'status the roles write (operator_sdk.util.k8s_status)' },
  // k8s_event reads an Event of the same name and replaces it to count a repeat.
  event: { verbs: ['get', 'create', 'update'], why: 'Events the roles record (operator_sdk.util.k8s_event counts repeats by reading and replacing them)' },
};

/**
 * What an Ansible entry's tasks touch, as rules: written kinds with every verb, k8s_info kinds read
 * only, k8s_status kinds' `/status` (and a get of the object), k8s_event's Events; fewer verbs give
 * way to all verbs where another task writes the same resource.
 */
async function ansibleObjects(entry: PlanEntry, kinds: readonly TaskKind[], resolver: Resolver, warnings: string[]): Promise<ChartObject[]> {
  const runsAs = entry.serviceAccount === undefined ? {} : { serviceAccount: entry.serviceAccount };
  const seen = new Map<string, ChartObject>();
  const add = (info: ResourceInfo, resource: string, kind: string, resolution: ChartObject['resolution'], only: ChartObject['only']): void => {
    const key = `${info.group}/${resource}/${JSON.stringify(only ?? null)}`;
    if (seen.has(key)) return;
    seen.set(key, {
      chart: entry.chartLabel,
      group: info.group,
      resource,
      kind,
      namespaced: info.namespaced,
      resolution,
      rendered: true,
      crdsDir: false,
      clusterScopedAllowed: entry.allowClusterScoped,
      ...(only === undefined ? {} : { only }),
      ...runsAs,
    });
  };
  const ownPlural = await resolver.watchedPlural(entry);
  for (const found of kinds) {
    let resolved: Resolved;
    // The watched kind itself (k8s_status of the CR): its CRD may not exist yet where this runs.
    if (found.kind === entry.kind && (found.apiVersion === undefined || groupOf(found.apiVersion) === entry.group)) {
      resolved = { info: { group: entry.group, kind: entry.kind, resource: ownPlural, namespaced: true }, resolution: 'table' };
    } else if (found.apiVersion !== undefined) resolved = await resolver.resolve(found.apiVersion, found.kind);
    else {
      const byKind = tableLookupByKind(found.kind);
      if (byKind === undefined) {
        warnings.push(`${entry.chartLabel}: ${found.origin} uses a ${found.kind} whose apiVersion is computed, and the kind is not one chartpilot knows; not granted — add a rule for it by hand`);
        continue;
      }
      resolved = { info: byKind, resolution: 'table' };
    }
    if (resolved.resolution === 'guess') {
      warnings.push(`${entry.chartLabel}: ${found.origin} uses ${found.kind} (${found.apiVersion ?? '?'}), which neither the cluster nor the built-in table knows; granted as resource "${resolved.info.resource}" — check the name`);
    }
    const { info, resolution } = resolved;
    if (found.access === 'write') add(info, info.resource, found.kind, resolution, undefined);
    else if (found.access === 'status') {
      add(info, `${info.resource}/status`, found.kind, resolution, TASK_ACCESS.status);
      add(info, info.resource, found.kind, resolution, { verbs: ['get'], why: 'objects whose status the roles write: k8s_status reads them first' });
    } else add(info, info.resource, found.kind, resolution, TASK_ACCESS[found.access]);
  }
  return [...seen.values()];
}

function firstLine(err: unknown): string {
  const text = errorMessage(err);
  return text.split('\n').find((l) => l.trim() !== '')?.trim() ?? text;
}
