/**
 * Validation of one watches.yaml entry. Every problem is collected (not just the first), each as
 * one line that names the entry, the line, the key, what was found and what would be right.
 */
import { floorText, PERIOD_FLOORS } from '../lib/period-floors.js';
import { isMap, isScalar, type Node } from 'yaml';
import type { GroupVersionKind, RemoteChart, WatchEntry } from './types.js';
import { DURATION_EXAMPLES, parseGoDuration } from '../lib/duration.js';
import { expandEnv } from './env-expand.js';
import { isDns1035Label, isDnsSubdomain } from './labels.js';
import { parseSetPath } from './overrides.js';
import { ANSIBLE_ONLY_KEYS, readAnsibleKeys, type AnsibleKey } from './ansible-entry.js';
import { readRemoteChart, REMOTE_CHART_KEYS, REMOTE_KEY_HINTS, type RemoteChartKey } from './remote-chart-entry.js';
import { selectorToQuery } from './selector.js';
import { readDriftDetection } from './drift-entry.js';
import { readValuesFrom } from './values-from-entry.js';
import { readDependsOn } from './depends-on.js';
import { readStatusExpressions } from './status-expressions.js';
import { closest } from './suggest.js';
import { bool, describeNode, fieldsOf, lineOf, scalarText, type Field, type Where, type YamlContext } from './yaml-nodes.js';

/** Keys operator-sdk's helm-operator, helm-operator-plugins and ansible-operator read, plus chartpilot's own. */
export const KNOWN_KEYS = [
  'group',
  'version',
  'kind',
  'chart',
  'overrideValues',
  'watchDependentResources',
  'reconcilePeriod',
  'maxConcurrentReconciles',
  'selector',
  'dryRunOption',
  'allowClusterScoped',
  'allowCrossNamespace',
  'serviceAccount',
  'driftDetection',
  'valuesFrom',
  'dependsOn',
  'outputs',
  'readyWhen',
  ...REMOTE_CHART_KEYS,
  ...ANSIBLE_ONLY_KEYS,
] as const;
type Key = (typeof KNOWN_KEYS)[number];

const KIND = /^[A-Z][A-Za-z0-9]*$/u;
const DRY_RUN: Readonly<Record<string, WatchEntry['dryRunOption']>> = {
  none: 'none',
  client: 'client',
  server: 'server',
  // Helm's older spellings of the same choices.
  true: 'client',
  false: 'none',
};

/** An entry that passed validation, before its chart is checked on disk. */
export type EntryDraft = Omit<WatchEntry, 'chartPath'> & { readonly chart: string };

export interface EntryResult {
  /** Undefined when the entry has problems. */
  readonly draft: EntryDraft | undefined;
  /** `chart` as written, when it is a non-empty local path (checked on disk even if other keys are bad). */
  readonly chart: string | undefined;
  /** The chart from a registry the entry names, when it does. */
  readonly remote?: RemoteChart | undefined;
  readonly chartLine: number | undefined;
  /** The entry's GVK when version and kind are usable, even if other keys are wrong (for duplicates). */
  readonly gvk: GroupVersionKind | undefined;
  /** `<file> entry <n> (<gvk>)`, to prefix problems found later (chart, duplicates). */
  readonly label: string;
  readonly line: number | undefined;
  readonly problems: string[];
}

export interface EntryInput {
  readonly ctx: YamlContext;
  /** The entry with aliases followed (null when the list item is empty). */
  readonly node: Node | null;
  /** 1-based line of the list item, known even when the item is empty. */
  readonly line: number | undefined;
  /** 1-based position in the list. */
  readonly number: number;
  readonly fileName: string;
  readonly env: Readonly<Record<string, string | undefined>>;
}

export function gvkText(kind: string, version: string, group: string): string {
  return group === '' ? `${kind}.${version}` : `${kind}.${version}.${group}`;
}

export function at(label: string, line: number | undefined): string {
  return line === undefined ? label : `${label}, line ${line}`;
}

export function readEntry(input: EntryInput): EntryResult {
  const { ctx, node, number, fileName } = input;
  const entryLine = input.line ?? lineOf(ctx, node);
  const bare = `${fileName} entry ${number}`;
  if (node === null || !isMap(node)) {
    return {
      draft: undefined,
      gvk: undefined,
      chart: undefined,
      chartLine: undefined,
      label: bare,
      line: entryLine,
      problems: [
        `${at(bare, entryLine)}: found ${describeNode(node)}; each entry must be a map with group, version, kind and chart`,
      ],
    };
  }

  const problems: string[] = [];
  const fields = new Map<Key, Field>();
  const unknown: Field[] = [];
  const repeated: { field: Field; first: Field; key: Key }[] = [];
  for (const f of fieldsOf(ctx, node)) {
    // Go's encoding/json (which operator-sdk reads watches.yaml through) matches keys
    // case-insensitively, so `Kind:` works there and must work here.
    const key = KNOWN_KEYS.find((k) => k === f.key) ?? KNOWN_KEYS.find((k) => k.toLowerCase() === f.key.toLowerCase());
    if (key === undefined) {
      unknown.push(f);
      continue;
    }
    const first = fields.get(key);
    if (first !== undefined) {
      repeated.push({ field: f, first, key });
      continue;
    }
    fields.set(key, f);
  }

  // The label names the GVK whenever kind and version are readable, even if other keys are wrong.
  const rawText = (k: Key): string | undefined => {
    const v = fields.get(k)?.value;
    return v !== undefined && v !== null && isScalar(v) && typeof v.value === 'string' ? v.value : undefined;
  };
  const kindRaw = rawText('kind');
  const versionRaw = rawText('version');
  const groupRaw = rawText('group') ?? '';
  const hasKind = kindRaw !== undefined && kindRaw !== '';
  const label =
    hasKind && versionRaw !== undefined && versionRaw !== ''
      ? `${bare} (${gvkText(kindRaw, versionRaw, groupRaw)})`
      : hasKind
        ? `${bare} (kind ${kindRaw})`
        : bare;
  const where: Where = (f, line) => at(label, line ?? f?.line ?? entryLine);

  for (const { field, first, key } of repeated) {
    problems.push(
      `${where(field)}: ${key} is given twice (as "${first.key}" on line ${first.line ?? '?'} and as "${field.key}"); keep one`,
    );
  }
  for (const f of unknown) {
    const guess = REMOTE_KEY_HINTS[f.key] ?? closest(f.key, KNOWN_KEYS);
    problems.push(
      `${where(f)}: unknown key "${f.key}"; ` +
        (guess === undefined ? `known keys are ${KNOWN_KEYS.join(', ')}` : `did you mean "${guess}"?`),
    );
  }

  const str = (k: Key, required: boolean): string | undefined => {
    const f = fields.get(k);
    if (f === undefined || f.value === null) {
      if (required) problems.push(`${where(f)}: ${k} is missing; ${REQUIRED_HINT[k] ?? 'set it'}`);
      return undefined;
    }
    if (!isScalar(f.value) || typeof f.value.value !== 'string') {
      problems.push(`${where(f)}: ${k} is ${describeNode(f.value)}; expected a string${exampleFor(k)}`);
      return undefined;
    }
    if (required && f.value.value === '') {
      problems.push(`${where(f)}: ${k} is empty; ${REQUIRED_HINT[k] ?? 'set it'}`);
      return undefined;
    }
    return f.value.value;
  };

  const group = str('group', false) ?? '';
  if (group !== '' && !isDnsSubdomain(group)) {
    problems.push(
      `${where(fields.get('group'))}: group "${group}" is not a valid API group; use a lower-case DNS name such as demo.example.com`,
    );
  }
  const version = str('version', true);
  if (version !== undefined && !isDns1035Label(version)) {
    problems.push(
      `${where(fields.get('version'))}: version "${version}" is not a valid API version; use lower-case letters, digits and '-', starting with a letter, e.g. v1alpha1` +
        (/^[v^~=<>]?\d/u.test(version) ? ` (a chart's version goes in chartVersion)` : ''),
    );
  }
  const kind = str('kind', true);
  if (kind !== undefined && !KIND.test(kind)) {
    problems.push(
      `${where(fields.get('kind'))}: kind "${kind}" is not a valid Kind; it must start with an upper-case letter and contain only letters and digits, e.g. Nginx`,
    );
  }
  // An entry maps its kind to exactly one of a chart, an Ansible role and an Ansible playbook.
  const sources = (['chart', 'role', 'playbook'] as const).filter((k) => fields.has(k));
  if (sources.length === 0) {
    problems.push(`${where(undefined)}: chart is missing; ${REQUIRED_HINT.chart ?? ''} (or role:/playbook: for an Ansible role or playbook)`);
  } else if (sources.length > 1) {
    problems.push(
      `${where(fields.get(sources[1] ?? 'chart'))}: the entry has ${sources.join(' and ')}; an entry maps its kind to exactly one of chart, role and playbook — keep one`,
    );
  }
  const engine = sources.length === 1 && sources[0] !== 'chart' ? 'ansible' : 'helm';
  const foreignKeys: readonly Key[] = engine === 'ansible' ? ['overrideValues', 'dryRunOption', 'driftDetection', 'outputs', 'readyWhen', ...REMOTE_CHART_KEYS] : ANSIBLE_ONLY_KEYS.filter((k) => k !== 'role' && k !== 'playbook');
  for (const k of foreignKeys) {
    const f = fields.get(k);
    if (f === undefined) continue;
    problems.push(
      engine === 'ansible'
        ? `${where(f)}: ${k} is a chart key; this entry runs an Ansible ${sources[0] ?? 'role'} — remove it${k === 'outputs' || k === 'readyWhen' ? ' (a role writes its own status with operator_sdk.util.k8s_status)' : ''}`
        : `${where(f)}: "${f.key}" is an Ansible operator key; this entry maps its kind to a chart — remove it, or replace chart with role or playbook`,
    );
  }
  const chart = engine === 'helm' && fields.has('chart') ? str('chart', true) : undefined;
  const role = fields.has('role') ? str('role', true) : undefined;
  const playbook = fields.has('playbook') ? str('playbook', true) : undefined;
  const ansible =
    engine === 'ansible'
      ? readAnsibleKeys({ ctx, field: (k: AnsibleKey) => fields.get(k), where, problems, role, playbook })
      : undefined;
  const remoteFields = new Map<RemoteChartKey, Field>();
  for (const k of REMOTE_CHART_KEYS) {
    const f = fields.get(k);
    if (f !== undefined) remoteFields.set(k, f);
  }
  const remote = chart === undefined ? undefined : readRemoteChart({ chart, fields: remoteFields, where: (f) => where(f ?? fields.get('chart')) }, problems);

  const overrideValues = readOverrides(input, fields.get('overrideValues'), where, problems);
  const watchDependentResources = bool(fields.get('watchDependentResources'), true, where, problems);
  const reconcilePeriodMs = readPeriod(fields.get('reconcilePeriod'), where, problems);
  const maxConcurrentReconciles = readMaxConcurrent(fields.get('maxConcurrentReconciles'), where, problems);

  const selectorField = fields.get('selector');
  const selector = selectorToQuery(ctx, selectorField?.value ?? null);
  for (const p of selector.problems) problems.push(`${where(selectorField, p.line)}: ${p.text}`);

  const dryRunOption = readDryRun(fields.get('dryRunOption'), where, problems);
  const allowClusterScoped = bool(fields.get('allowClusterScoped'), false, where, problems);
  const allowCrossNamespace = bool(fields.get('allowCrossNamespace'), false, where, problems);
  const serviceAccount = str('serviceAccount', false);
  if (serviceAccount !== undefined && !isDnsSubdomain(serviceAccount)) {
    problems.push(
      `${where(fields.get('serviceAccount'))}: serviceAccount "${serviceAccount}" is not a ServiceAccount name; use a lower-case DNS name such as tenant (it names a ServiceAccount in each custom resource's namespace)`,
    );
  }

  const driftField = engine === 'helm' ? fields.get('driftDetection') : undefined;
  const driftDetection = driftField === undefined ? undefined : readDriftDetection({ ctx, field: driftField, where: (line) => where(driftField, line) }, problems);

  const valuesFromField = fields.get('valuesFrom');
  const valuesFrom = valuesFromField === undefined ? undefined : readValuesFrom({ ctx, field: valuesFromField, where: (line) => where(valuesFromField, line) }, problems);

  const dependsOnField = fields.get('dependsOn');
  const dependsOn = dependsOnField === undefined ? undefined : readDependsOn(ctx, dependsOnField, (line) => where(dependsOnField, line), problems);
  if (dependsOn !== undefined && valuesFrom?.specField === dependsOn.specField) {
    problems.push(`${where(dependsOnField)}: dependsOn.specField and valuesFrom.specField are both "${dependsOn.specField}"; give each its own spec field`);
  }

  const outputsField = engine === 'helm' ? fields.get('outputs') : undefined;
  const readyWhenField = engine === 'helm' ? fields.get('readyWhen') : undefined;
  const status = readStatusExpressions(ctx, { outputs: outputsField, readyWhen: readyWhenField }, (line) => where(outputsField ?? readyWhenField, line), problems);
  // Readiness is judged from the live objects, which only watched dependents give.
  if (status?.readyWhen !== undefined && !watchDependentResources) problems.push(`${where(readyWhenField)}: readyWhen needs watchDependentResources: true (Ready is judged from the release's live objects); remove readyWhen or watch the dependents`);

  const chartField = fields.get('chart');
  const result = {
    gvk: version === undefined || kind === undefined ? undefined : { group, version, kind },
    // A chart from a registry is not looked for on disk.
    chart: remote === undefined ? chart : undefined,
    remote,
    chartLine: chartField?.line ?? entryLine,
    label,
    line: entryLine,
    problems,
  };
  if (problems.length > 0 || version === undefined || kind === undefined || (chart === undefined && ansible === undefined)) {
    return { ...result, draft: undefined };
  }
  return {
    ...result,
    draft: {
      group,
      version,
      kind,
      chart: chart ?? '',
      overrideValues,
      watchDependentResources,
      reconcilePeriodMs,
      maxConcurrentReconciles,
      labelSelector: selector.query,
      dryRunOption,
      allowClusterScoped,
      allowCrossNamespace,
      serviceAccount,
      ...(driftDetection === undefined ? {} : { driftDetection }),
      ...(valuesFrom === undefined ? {} : { valuesFrom }),
      ...(dependsOn === undefined ? {} : { dependsOn }),
      ...(status === undefined ? {} : { status }),
      ...(remote === undefined ? {} : { remote }),
      ...(ansible === undefined ? {} : { ansible }),
    },
  };
}

const REQUIRED_HINT: Partial<Record<Key, string>> = {
  version: 'set it to the API version of the custom resource, e.g. version: v1alpha1',
  kind: 'set it to the Kind of the custom resource, e.g. kind: Nginx',
  chart: 'set it to a chart directory or packaged .tgz, e.g. chart: helm-charts/nginx',
};

function exampleFor(k: Key): string {
  switch (k) {
    case 'group':
      return ' such as demo.example.com';
    case 'version':
      return ' such as v1alpha1';
    case 'kind':
      return ' such as Nginx';
    case 'chart':
      return ' such as helm-charts/nginx';
    case 'role':
      return ' such as memcached (a directory under roles/) or an absolute path';
    case 'playbook':
      return ' such as playbooks/memcached.yml';
    case 'serviceAccount':
      return ' such as tenant';
    default:
      return '';
  }
}

function readPeriod(f: Field | undefined, where: Where, problems: string[]): number | undefined {
  if (f === undefined || f.value === null) return undefined;
  if (isScalar(f.value) && typeof f.value.value === 'number') {
    // A bare 0 means "no periodic requeue"; any other bare number lacks its unit.
    if (f.value.value === 0) return 0;
    problems.push(
      `${where(f)}: reconcilePeriod is ${describeNode(f.value)} without a unit; write a Go duration ${DURATION_EXAMPLES} (e.g. ${scalarText(f.value)}s)`,
    );
    return undefined;
  }
  if (!isScalar(f.value) || typeof f.value.value !== 'string') {
    problems.push(`${where(f)}: reconcilePeriod is ${describeNode(f.value)}; expected a Go duration ${DURATION_EXAMPLES}`);
    return undefined;
  }
  const parsed = parseGoDuration(f.value.value.trim());
  if (!parsed.ok) {
    problems.push(`${where(f)}: reconcilePeriod ${parsed.reason}`);
    return undefined;
  }
  if (parsed.ms < 0) {
    problems.push(`${where(f)}: reconcilePeriod "${f.value.value}" is negative; use a positive duration, or 0 for no periodic re-reconcile`);
    return undefined;
  }
  const floor = PERIOD_FLOORS.reconcilePeriodMs;
  if (parsed.ms > 0 && parsed.ms < floor) {
    problems.push(`${where(f)}: reconcilePeriod "${f.value.value}" is below the minimum of ${floorText(floor)}; use ${floorText(floor)} or more, or 0 for no periodic re-reconcile`);
    return undefined;
  }
  return parsed.ms;
}

function readMaxConcurrent(f: Field | undefined, where: Where, problems: string[]): number | undefined {
  if (f === undefined || f.value === null) return undefined;
  const v = isScalar(f.value) ? f.value.value : undefined;
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 1) return v;
  problems.push(
    `${where(f)}: maxConcurrentReconciles is ${describeNode(f.value)}; expected a whole number of at least 1 (omit it to use --max-concurrent-reconciles)`,
  );
  return undefined;
}

function readDryRun(f: Field | undefined, where: Where, problems: string[]): WatchEntry['dryRunOption'] {
  if (f === undefined || f.value === null) return undefined;
  if (isScalar(f.value) && typeof f.value.value === 'string') {
    if (f.value.value === '') return undefined;
    const mapped = Object.hasOwn(DRY_RUN, f.value.value) ? DRY_RUN[f.value.value] : undefined;
    if (mapped !== undefined) return mapped;
  }
  problems.push(
    `${where(f)}: dryRunOption is ${describeNode(f.value)}; expected none, client or server (server lets the chart's lookup function see the cluster)`,
  );
  return undefined;
}

function readOverrides(
  input: EntryInput,
  f: Field | undefined,
  where: Where,
  problems: string[],
): Record<string, string> {
  const out: Record<string, string> = {};
  if (f === undefined || f.value === null) return out;
  if (!isMap(f.value)) {
    problems.push(
      `${where(f)}: overrideValues is ${describeNode(f.value)}; expected a map of Helm --set paths to values, e.g. image.repository: quay.io/example/nginx`,
    );
    return out;
  }
  for (const o of fieldsOf(input.ctx, f.value)) {
    const here = where(f, o.line);
    const path = parseSetPath(o.key);
    if (!path.ok) problems.push(`${here}: overrideValues key ${path.reason}`);
    if (o.value !== null && !isScalar(o.value)) {
      problems.push(
        `${here}: overrideValues "${o.key}" is ${describeNode(o.value)}; each value must be a single value — set nested keys with a dotted path, e.g. ${o.key}.name: value`,
      );
      continue;
    }
    const raw = o.value === null ? '' : scalarText(o.value);
    if (raw.includes('{{')) {
      // operator-sdk runs values through Go text/template with sprig functions; we do not have
      // that engine, and passing "{{ … }}" on to the chart verbatim would silently differ.
      problems.push(
        `${here}: overrideValues "${o.key}" uses a Go template ({{ … }}), which chartpilot does not evaluate; use a plain value or $VAR / \${VAR} from the environment`,
      );
      continue;
    }
    Object.defineProperty(out, o.key, {
      value: expandEnv(raw, input.env),
      writable: true,
      enumerable: true,
      configurable: true,
    });
  }
  return out;
}
