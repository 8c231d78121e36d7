/**
 * `chartpilot generate crd`: one CustomResourceDefinition per watched group and kind (several
 * watches entries of one kind in different versions become versions of one CRD, as the API
 * requires), with a spec schema derived from the chart's values.schema.json when it has one.
 */
import { basename } from 'node:path';
import type { AnsibleSource, GroupVersionKind } from '../config/types.js';
import { ChartReadError } from '../config/chart-files.js';
import { readArgumentSpecs } from './ansible-files.js';
import { argumentSpecSchema, openSpecSchema } from './ansible-schema.js';
import { ChartProblem, loadChartInfo, type ChartInfo } from './chart-meta.js';
import { InputError } from './errors.js';
import { crdNames, kindProblem, type CrdNames } from './kind-names.js';
import { structuralSpecSchema, type Schema } from './schema.js';
import type { ValuesFromSettings } from '../core/values-from.js';
import type { DependsOnSettings } from '../core/dependencies.js';
import { MAX_DEPENDENCIES } from '../config/depends-on.js';
import { MAX_REFERENCES } from '../config/values-from.js';
import type { OutputDeclaration, StatusExpressions } from '../core/outputs.js';

export interface CrdEntry extends GroupVersionKind {
  /** Absolute path of the chart directory or .tgz ('' for an Ansible entry). */
  readonly chartPath: string;
  /** Set for a kind served by an Ansible role or playbook. */
  readonly ansible?: AnsibleSource | undefined;
  /** The entry's valuesFrom: its specField is a list of references, not a value. */
  readonly valuesFrom?: ValuesFromSettings | undefined;
  /** The entry's dependsOn: its specField lists the CRs a CR waits for, not a value. */
  readonly dependsOn?: DependsOnSettings | undefined;
  /** The entry's outputs: typed properties of status.outputs, and columns for those that ask. */
  readonly status?: StatusExpressions | undefined;
}

export interface GeneratedCrd {
  readonly name: string;
  /** `<group>_<plural>.yaml`, kubebuilder's file naming. */
  readonly fileName: string;
  readonly object: Record<string, unknown>;
  readonly names: CrdNames;
  /** Where the CRD checks less than the chart's schema, `version: path: why` per line. */
  readonly notes: readonly string[];
  /** Served by an Ansible role or playbook (its spec schema comes from argument specs, or is open). */
  readonly ansible: boolean;
}

export type CrdResult = { ok: true; crds: GeneratedCrd[] } | { ok: false; problems: string[] };

const DNS1035 = /^[a-z]([-a-z0-9]*[a-z0-9])?$/u;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/u;

/** Categories let `kubectl get chartpilot` list every kind chartpilot serves. */
export const CRD_CATEGORY = 'chartpilot';

/**
 * What `kubectl get` prints: the summary the operator writes (core/summary.ts) — a state word
 * that tells a failed, foreign, stalled or progressing CR from a healthy one, its reason, and its
 * message last (long, one line) — then what is deployed. Ready itself (operator-sdk's column
 * source) is there with `-o wide`.
 */
const SUMMARY = '.status.chartpilot.summary';
export const PRINTER_COLUMNS = [
  { name: 'State', type: 'string', jsonPath: `${SUMMARY}.state`, description: 'Ready, Progressing, Failed, Stalled, Foreign, ...: what chartpilot makes of the conditions' },
  { name: 'Reason', type: 'string', jsonPath: `${SUMMARY}.reason` },
  { name: 'Revision', type: 'integer', jsonPath: '.status.deployedRelease.revision' },
  { name: 'Chart', type: 'string', jsonPath: '.status.deployedRelease.chart' },
  { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  { name: 'Message', type: 'string', jsonPath: `${SUMMARY}.message` },
  { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status', priority: 1 },
] as const;

/** An Ansible kind has no release: the same summary, and with -o wide Ready and the last run's Successful. */
export const ANSIBLE_PRINTER_COLUMNS = [
  { name: 'State', type: 'string', jsonPath: `${SUMMARY}.state`, description: 'Ready, Running, Failed, Stalled, ...: what chartpilot makes of the conditions' },
  { name: 'Reason', type: 'string', jsonPath: `${SUMMARY}.reason` },
  { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  { name: 'Message', type: 'string', jsonPath: `${SUMMARY}.message` },
  { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status', priority: 1 },
  { name: 'Successful', type: 'string', jsonPath: '.status.conditions[?(@.type=="Successful")].status', priority: 1 },
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
  for (const path of new Set(entries.filter((e) => e.ansible === undefined).map((e) => e.chartPath))) {
    try {
      charts.set(path, await loadChartInfo(path));
    } catch (err) {
      if (err instanceof ChartProblem || err instanceof ChartReadError) problems.push(err.message);
      else throw err;
    }
  }
  const roles = new Map<CrdEntry, { schema: Schema; notes: readonly string[]; what: string }>();
  for (const e of entries) {
    if (e.ansible === undefined) continue;
    try {
      roles.set(e, await ansibleSpecSchema(e.ansible));
    } catch (err) {
      if (err instanceof InputError) problems.push(...err.problems);
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
      const prefix = group.length > 1 ? `${e.version}: ` : '';
      const role = roles.get(e);
      if (role !== undefined) {
        notes.push(...role.notes.map((line) => `${prefix}${line}`));
        return {
          name: e.version,
          served: true,
          storage: i === 0,
          subresources: { status: {} },
          additionalPrinterColumns: ANSIBLE_PRINTER_COLUMNS.map((c) => ({ ...c })),
          schema: { openAPIV3Schema: ansibleRootSchema(e.kind, role.what, withDependencies(withReferences({ schema: role.schema, notes: [] }, e.valuesFrom?.specField, role.what), e.dependsOn?.specField, role.what).schema) },
        };
      }
      const chart = charts.get(e.chartPath);
      if (chart === undefined) throw new Error(`chart ${e.chartPath} was not loaded`);
      const { schema, notes: versionNotes } = withDependencies(withReferences(specSchema(chart), e.valuesFrom?.specField, `chart ${chart.name}`), e.dependsOn?.specField, `chart ${chart.name}`);
      notes.push(...versionNotes.map((line) => `${prefix}${line}`));
      return {
        name: e.version,
        served: true,
        storage: i === 0,
        subresources: { status: {} },
        additionalPrinterColumns: withOutputColumns(PRINTER_COLUMNS.map((c) => ({ ...c })), e.status?.outputs ?? []),
        schema: { openAPIV3Schema: rootSchema(e.kind, chart, schema, e.status?.outputs ?? []) },
      };
    });
    const name = `${n.plural}.${first.group}`;
    crds.push({
      name,
      fileName: `${first.group}_${n.plural}.yaml`,
      names: n,
      notes,
      ansible: group.some((e) => e.ansible !== undefined),
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

/** Spec schema and the notes on it, as a version's schema is built up. */
interface SpecSchema {
  readonly schema: Schema;
  readonly notes: readonly string[];
}

/**
 * `spec` with the entry's own field `field` (a watches key's specField, `key`) beside the chart's
 * values: CRs list something there, and `served` never sees it. A values key of that name is
 * taken over, with a note.
 */
function withOwnField(spec: SpecSchema, field: string | undefined, key: string, served: string, schema: Schema): SpecSchema {
  if (field === undefined) return spec;
  const properties = (spec.schema['properties'] ?? {}) as Record<string, Schema>;
  const notes = [...spec.notes];
  if (Object.hasOwn(properties, field)) notes.push(`spec.${field}: ${served} has this key among its values, but ${key}.specField takes it, so ${served} never sees it`);
  return { schema: { ...spec.schema, properties: { ...properties, [field]: schema } }, notes };
}

/**
 * The entry's valuesFrom.specField: a list of references, checked by the API server as far as a
 * schema can (the operator checks the rest, such as a reference into another namespace).
 * `namespace` is in the schema even where the entry refuses it, so that it is refused with a
 * reason rather than pruned and read in the CR's own namespace.
 */
function withReferences(spec: SpecSchema, field: string | undefined, served: string): SpecSchema {
  return withOwnField(spec, field, 'valuesFrom', served, {
    description: `Values from Secrets and ConfigMaps, merged under the rest of the spec in order (${served} never sees this field).`,
    type: 'array',
    maxItems: MAX_REFERENCES,
    items: {
      type: 'object',
      required: ['kind', 'name'],
      properties: {
        kind: { type: 'string', enum: ['Secret', 'ConfigMap'] },
        name: { type: 'string', maxLength: 253, description: 'The Secret or ConfigMap, in the resource\'s namespace.' },
        namespace: { type: 'string', maxLength: 63, description: 'Another namespace: refused unless the watches entry sets valuesFrom.allowCrossNamespace.' },
        valuesKey: { type: 'string', maxLength: 253, description: 'The data key; default values.yaml.' },
        targetPath: { type: 'string', maxLength: 1024, description: 'Where the key\'s text goes, as one string (a Helm --set path such as db.password); without it the key holds YAML values merged at the root.' },
        optional: { type: 'boolean', description: 'A missing object or key is skipped instead of holding the release back.' },
      },
    },
  });
}

/** The entry's dependsOn.specField: the CRs a CR waits for (kind, name; apiVersion and namespace when needed). */
function withDependencies(spec: SpecSchema, field: string | undefined, served: string): SpecSchema {
  return withOwnField(spec, field, 'dependsOn', served, {
    description: `The resources this one waits for: it is not installed or upgraded until each is Ready (${served} never sees this field).`,
    type: 'array',
    maxItems: MAX_DEPENDENCIES,
    items: {
      type: 'object',
      required: ['kind', 'name'],
      properties: {
        apiVersion: { type: 'string', maxLength: 317, description: 'group/version: needed only when two kinds this operator serves share the name.' },
        kind: { type: 'string', maxLength: 63 },
        name: { type: 'string', maxLength: 253 },
        namespace: { type: 'string', maxLength: 63, description: 'Another namespace: refused unless the watches entry sets dependsOn.allowCrossNamespace.' },
      },
    },
  });
}

/** Output columns go after what is deployed and before Age, the way kubectl users read a row. */
function withOutputColumns(columns: Record<string, unknown>[], outputs: readonly OutputDeclaration[]): Record<string, unknown>[] {
  const taken = new Set(columns.map((c) => String(c['name']).toLowerCase()));
  const columnName = (name: string): string => {
    const capitalized = name.charAt(0).toUpperCase() + name.slice(1);
    // The API server refuses two columns of one name; an output named like ours says so.
    return taken.has(name.toLowerCase()) ? `Output${capitalized}` : capitalized;
  };
  const shown = outputs.filter((o) => o.column).map((o) => ({ name: columnName(o.name), type: o.type, jsonPath: `.status.outputs.${o.name}`, description: `output ${o.name}: ${o.expression}`.slice(0, 200) }));
  const age = columns.findIndex((c) => c['name'] === 'Age');
  return [...columns.slice(0, age), ...shown, ...columns.slice(age)];
}

/** status.outputs, typed as the entry declares its outputs. */
function outputsSchema(outputs: readonly OutputDeclaration[]): Schema {
  const properties: Record<string, Schema> = {};
  for (const o of outputs) properties[o.name] = { type: o.type, description: `CEL: ${o.expression}`.slice(0, 1000) };
  return { type: 'object', description: 'Computed by chartpilot from the release\'s objects (the watches entry\'s outputs); an output that cannot be resolved yet is absent (condition OutputsResolved says why).', properties };
}

function rootSchema(kind: string, chart: ChartInfo, spec: Schema, outputs: readonly OutputDeclaration[]): Schema {
  return {
    description: `${kind} is a release of the Helm chart ${chart.name}, installed and kept up to date by chartpilot.`,
    type: 'object',
    properties: {
      apiVersion: { type: 'string' },
      kind: { type: 'string' },
      metadata: { type: 'object' },
      spec,
      status: {
        description: 'Written by chartpilot: conditions (Ready, Deployed, ...), the deployed release, and under chartpilot.summary the state kubectl get prints.',
        type: 'object',
        'x-kubernetes-preserve-unknown-fields': true,
        ...(outputs.length === 0 ? {} : { properties: { outputs: outputsSchema(outputs) } }),
      },
    },
  };
}

/** What an Ansible kind runs, as descriptions name it: `role memcached` or `playbook site.yml`. */
export function ansibleRunnableName(a: AnsibleSource): string {
  return a.role !== undefined ? `role ${basename(a.role)}` : `playbook ${basename(a.playbook ?? '')}`;
}

/**
 * The spec of an Ansible kind: structural from the role's argument specs (entry point main), else
 * open, as operator-sdk's Ansible scaffold makes it. A playbook has no argument specs.
 */
async function ansibleSpecSchema(a: AnsibleSource): Promise<{ schema: Schema; notes: readonly string[]; what: string }> {
  const what = ansibleRunnableName(a);
  const specs = a.role === undefined ? undefined : await readArgumentSpecs(a.role);
  const main = specs?.entryPoints['main'];
  if (specs === undefined || main === undefined) {
    const notes = specs === undefined ? [] : [`${specs.file} has no entry point main (the one a watches entry runs); spec accepts any values`];
    return { schema: openSpecSchema(`Variables for the ${what} (it declares no argument specs, so they are not validated here).`), notes, what };
  }
  const converted = argumentSpecSchema(main, a.snakeCaseParameters);
  const { description, ...rest } = converted.schema;
  const keys = a.snakeCaseParameters ? ' Keys are camelCase: the operator passes them to the role in snake_case.' : '';
  return {
    schema: {
      description: `${typeof description === 'string' ? `${description} ` : ''}Variables for the ${what}, checked against its meta/argument_specs; keys left out take the role's defaults.${keys}`,
      ...rest,
    },
    notes: converted.notes,
    what,
  };
}

function ansibleRootSchema(kind: string, what: string, spec: Schema): Schema {
  return {
    description: `${kind} is served by the Ansible ${what}, run by chartpilot whenever what it depends on changes.`,
    type: 'object',
    properties: {
      apiVersion: { type: 'string' },
      kind: { type: 'string' },
      metadata: { type: 'object' },
      spec,
      status: {
        description: 'Written by chartpilot (conditions Ready, Running, Successful, Failure; under chartpilot its run record and the summary kubectl get prints) and by the role (k8s_status).',
        type: 'object',
        'x-kubernetes-preserve-unknown-fields': true,
      },
    },
    // A role with required options cannot run without a spec.
    ...(Array.isArray(spec['required']) && spec['required'].length > 0 ? { required: ['spec'] } : {}),
  };
}
