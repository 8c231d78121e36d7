/**
 * `chartpilot generate crd`: one CustomResourceDefinition per watched group and kind (several
 * watches entries of one kind in different versions become versions of one CRD, as the API
 * requires), with a spec schema derived from the chart's values.schema.json when it has one.
 */
import type { GroupVersionKind } from '../config/types.js';
import { ChartReadError } from '../config/chart-files.js';
import { ChartProblem, loadChartInfo, type ChartInfo } from './chart-meta.js';
import { crdNames, kindProblem, type CrdNames } from './kind-names.js';
import { structuralSpecSchema, type Schema } from './schema.js';

export interface CrdEntry extends GroupVersionKind {
  /** Absolute path of the chart directory or .tgz. */
  readonly chartPath: string;
}

export interface GeneratedCrd {
  readonly name: string;
  /** `<group>_<plural>.yaml`, kubebuilder's file naming. */
  readonly fileName: string;
  readonly object: Record<string, unknown>;
  readonly names: CrdNames;
  /** Where the CRD checks less than the chart's schema, `version: path: why` per line. */
  readonly notes: readonly string[];
}

export type CrdResult = { ok: true; crds: GeneratedCrd[] } | { ok: false; problems: string[] };

const DNS1035 = /^[a-z]([-a-z0-9]*[a-z0-9])?$/u;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/u;

/** Categories let `kubectl get chartpilot` list every kind chartpilot serves. */
export const CRD_CATEGORY = 'chartpilot';

/** The columns `kubectl get` shows: readiness first, then what is deployed. */
export const PRINTER_COLUMNS = [
  { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
  { name: 'Reason', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].reason' },
  { name: 'Revision', type: 'integer', jsonPath: '.status.deployedRelease.revision' },
  { name: 'Chart', type: 'string', jsonPath: '.status.deployedRelease.chart' },
  { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
] as const;

/** Why a group/version/kind cannot become a CRD (one line each), empty when it can. */
export function gvkProblems(e: GroupVersionKind): string[] {
  const problems: string[] = [];
  const what = `${e.kind}.${e.version}${e.group === '' ? '' : `.${e.group}`}`;
  if (e.group === '' || !e.group.includes('.') || e.group.length > 253 || !DNS1123_SUBDOMAIN.test(e.group)) {
    problems.push(
      `${what}: group "${e.group}" cannot hold a CustomResourceDefinition; use a lower-case domain you own with at least one dot, e.g. demo.example.com`,
    );
  }
  if (!DNS1035.test(e.version) || e.version.length > 63) {
    problems.push(`${what}: version "${e.version}" must be a lower-case DNS label such as v1alpha1`);
  }
  const kp = kindProblem(e.kind);
  if (kp !== undefined) problems.push(`${what}: ${kp}`);
  return problems;
}

/**
 * Kubernetes' version priority (GA > beta > alpha, higher numbers first, others last), so the
 * storage version of a multi-version CRD is the most stable one.
 */
export function compareVersions(a: string, b: string): number {
  const rank = (v: string): [number, number, number, string] => {
    const m = /^v(\d+)(?:(alpha|beta)(\d+))?$/u.exec(v);
    if (!m) return [3, 0, 0, v];
    const level = m[2] === undefined ? 0 : m[2] === 'beta' ? 1 : 2;
    return [level, -Number(m[1]), -Number(m[3] ?? 0), v];
  };
  const ra = rank(a);
  const rb = rank(b);
  for (let i = 0; i < 3; i++) {
    const d = (ra[i] as number) - (rb[i] as number);
    if (d !== 0) return d;
  }
  return ra[3] < rb[3] ? -1 : ra[3] > rb[3] ? 1 : 0;
}

export async function generateCrds(entries: readonly CrdEntry[]): Promise<CrdResult> {
  const problems = entries.flatMap(gvkProblems);
  if (problems.length > 0) return { ok: false, problems };

  const charts = new Map<string, ChartInfo>();
  for (const path of new Set(entries.map((e) => e.chartPath))) {
    try {
      charts.set(path, await loadChartInfo(path));
    } catch (err) {
      if (err instanceof ChartProblem || err instanceof ChartReadError) problems.push(err.message);
      else throw err;
    }
  }
  if (problems.length > 0) return { ok: false, problems };

  const names = crdNames(entries.map((e) => e.kind));
  const byKind = new Map<string, CrdEntry[]>();
  for (const e of entries) {
    const key = `${e.group}/${e.kind}`;
    byKind.set(key, [...(byKind.get(key) ?? []), e]);
  }

  const crds: GeneratedCrd[] = [];
  for (const group of byKind.values()) {
    const first = group[0];
    const n = first === undefined ? undefined : names.get(first.kind);
    if (first === undefined || n === undefined) continue;
    // The most stable version is the storage version.
    const sorted = [...group].sort((a, b) => compareVersions(a.version, b.version));
    const notes: string[] = [];
    const versions = sorted.map((e, i) => {
      const chart = charts.get(e.chartPath);
      if (chart === undefined) throw new Error(`chart ${e.chartPath} was not loaded`);
      const { schema, notes: versionNotes } = specSchema(chart);
      const prefix = group.length > 1 ? `${e.version}: ` : '';
      notes.push(...versionNotes.map((line) => `${prefix}${line}`));
      return {
        name: e.version,
        served: true,
        storage: i === 0,
        subresources: { status: {} },
        additionalPrinterColumns: PRINTER_COLUMNS.map((c) => ({ ...c })),
        schema: { openAPIV3Schema: rootSchema(e.kind, chart, schema) },
      };
    });
    const name = `${n.plural}.${first.group}`;
    crds.push({
      name,
      fileName: `${first.group}_${n.plural}.yaml`,
      names: n,
      notes,
      object: {
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: { name },
        spec: {
          group: first.group,
          names: {
            kind: n.kind,
            listKind: n.listKind,
            plural: n.plural,
            singular: n.singular,
            ...(n.shortNames.length > 0 ? { shortNames: [...n.shortNames] } : {}),
            categories: [CRD_CATEGORY],
          },
          scope: 'Namespaced',
          versions,
        },
      },
    });
  }
  // Two kinds whose plurals collide in one group would be one CRD name: the API refuses that.
  const seen = new Map<string, string>();
  for (const c of crds) {
    const other = seen.get(c.name);
    if (other !== undefined) problems.push(`kinds ${other} and ${c.names.kind} would both be served as ${c.name}; rename one`);
    seen.set(c.name, c.names.kind);
  }
  if (problems.length > 0) return { ok: false, problems };
  crds.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { ok: true, crds };
}

function specSchema(chart: ChartInfo): { schema: Schema; notes: readonly string[] } {
  if (chart.schema === undefined) {
    return {
      schema: {
        description: `Helm values for chart ${chart.name} (it has no values.schema.json, so they are not validated here).`,
        type: 'object',
        'x-kubernetes-preserve-unknown-fields': true,
      },
      notes: [],
    };
  }
  const converted = structuralSpecSchema(chart.schema, chart.defaults);
  const { description, ...rest } = converted.schema;
  return {
    schema: {
      description:
        typeof description === 'string'
          ? description
          : `Helm values for chart ${chart.name}, checked against its values.schema.json; keys left out take the chart's defaults.`,
      ...rest,
    },
    notes: converted.notes,
  };
}

function rootSchema(kind: string, chart: ChartInfo, spec: Schema): Schema {
  return {
    description: `${kind} is a release of the Helm chart ${chart.name}, installed and kept up to date by chartpilot.`,
    type: 'object',
    properties: {
      apiVersion: { type: 'string' },
      kind: { type: 'string' },
      metadata: { type: 'object' },
      spec,
      status: {
        description: 'Written by chartpilot: conditions (Ready, Deployed, ...) and the deployed release.',
        type: 'object',
        'x-kubernetes-preserve-unknown-fields': true,
      },
    },
  };
}
