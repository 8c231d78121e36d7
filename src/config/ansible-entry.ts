/**
 * The keys of operator-sdk ansible-operator's watches entries (`role`/`playbook`, `vars`,
 * `finalizer`, `manageStatus`, …), read with its defaults. Paths stay as written here; the
 * loader finds them on disk (config/ansible-paths.ts).
 */
import { isMap, isScalar, isSeq, type Node } from 'yaml';
import type { AnsibleSource, GroupVersionKind } from './types.js';
import { isDns1035Label, isDnsSubdomain } from './labels.js';
import { bool, describeNode, fieldsOf, type Field, type Where, type YamlContext } from './yaml-nodes.js';

/** Keys only an Ansible entry has. */
export const ANSIBLE_ONLY_KEYS = [
  'role',
  'playbook',
  'vars',
  'finalizer',
  'blacklist',
  'manageStatus',
  'watchClusterScopedResources',
  'snakeCaseParameters',
  'markUnsafe',
  'watchAnnotationsChanges',
  'maxRunnerArtifacts',
] as const;
export type AnsibleKey = (typeof ANSIBLE_ONLY_KEYS)[number];

/** ansible-operator's default for `maxRunnerArtifacts` (also what 0 means there). */
export const DEFAULT_MAX_RUNNER_ARTIFACTS = 20;

// A finalizer name is a qualified name (`prefix/name`), as the API server requires of finalizers.
const QUALIFIED_NAME_PART = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/u;

export interface AnsibleKeysInput {
  readonly ctx: YamlContext;
  readonly field: (key: AnsibleKey) => Field | undefined;
  readonly where: Where;
  readonly problems: string[];
  /** `role` and `playbook` as read (at most one of them set; the caller checks that). */
  readonly role: string | undefined;
  readonly playbook: string | undefined;
}

/** The entry's Ansible settings; problems are pushed to `input.problems`. */
export function readAnsibleKeys(input: AnsibleKeysInput): AnsibleSource {
  const { field, where, problems } = input;
  const max = readMaxRunnerArtifacts(field('maxRunnerArtifacts'), where, problems);
  return {
    ...(input.role === undefined ? {} : { role: input.role }),
    ...(input.playbook === undefined ? {} : { playbook: input.playbook }),
    vars: readVars(input.ctx, field('vars'), 'vars', where, problems),
    finalizer: readFinalizer(input.ctx, field('finalizer'), where, problems),
    manageStatus: bool(field('manageStatus'), true, where, problems),
    watchClusterScopedResources: bool(field('watchClusterScopedResources'), false, where, problems),
    snakeCaseParameters: bool(field('snakeCaseParameters'), true, where, problems),
    watchAnnotationsChanges: bool(field('watchAnnotationsChanges'), false, where, problems),
    markUnsafe: bool(field('markUnsafe'), false, where, problems),
    blacklist: readBlacklist(input.ctx, field('blacklist'), where, problems),
    maxRunnerArtifacts: max,
  };
}

/** A YAML map as plain JSON data (timestamps as text, as sigs.k8s.io/yaml gives them). */
function toJsonData(ctx: YamlContext, node: Node): Record<string, unknown> {
  const js: unknown = node.toJS(ctx.doc, { maxAliasCount: 1000 });
  return JSON.parse(JSON.stringify(js)) as Record<string, unknown>;
}

function readVars(ctx: YamlContext, f: Field | undefined, key: string, where: Where, problems: string[]): Record<string, unknown> {
  if (f === undefined || f.value === null) return {};
  if (!isMap(f.value)) {
    problems.push(`${where(f)}: ${key} is ${describeNode(f.value)}; expected a map of variable names to values, e.g. ${key}: {state: present}`);
    return {};
  }
  try {
    return toJsonData(ctx, f.value);
  } catch (err) {
    problems.push(`${where(f)}: ${key} cannot be read as data (${err instanceof Error ? err.message : String(err)}); use plain maps, lists and scalars`);
    return {};
  }
}

function readFinalizer(ctx: YamlContext, f: Field | undefined, where: Where, problems: string[]): AnsibleSource['finalizer'] {
  if (f === undefined || f.value === null) return undefined;
  if (!isMap(f.value)) {
    problems.push(`${where(f)}: finalizer is ${describeNode(f.value)}; expected a map, e.g. finalizer: {name: demo.example.com/finalizer, vars: {state: absent}}`);
    return undefined;
  }
  const known = new Set(['name', 'role', 'playbook', 'vars']);
  const sub = new Map<string, Field>();
  for (const s of fieldsOf(ctx, f.value)) {
    if (!known.has(s.key)) {
      problems.push(`${where(f, s.line)}: finalizer has an unknown key "${s.key}"; known keys are name, role, playbook, vars`);
      continue;
    }
    sub.set(s.key, s);
  }
  const text = (k: string): string | undefined => {
    const s = sub.get(k);
    if (s === undefined || s.value === null) return undefined;
    if (isScalar(s.value) && typeof s.value.value === 'string' && s.value.value !== '') return s.value.value;
    problems.push(`${where(f, s.line)}: finalizer ${k} is ${describeNode(s.value)}; expected a non-empty string`);
    return undefined;
  };
  const name = text('name');
  const role = text('role');
  const playbook = text('playbook');
  const vars = readVars(ctx, sub.get('vars'), 'finalizer vars', where, problems);
  if (name === undefined) {
    if (!sub.has('name')) problems.push(`${where(f)}: finalizer has no name; add name: <domain>/<name>, e.g. name: demo.example.com/finalizer`);
    return undefined;
  }
  const parts = name.split('/');
  const [prefix, last] = parts.length === 2 ? parts : [undefined, parts[0]];
  if (parts.length > 2 || last === undefined || !QUALIFIED_NAME_PART.test(last) || (prefix !== undefined && !isDnsSubdomain(prefix))) {
    problems.push(`${where(f, sub.get('name')?.line)}: finalizer name "${name}" is not a valid finalizer name; use <domain>/<name>, e.g. demo.example.com/finalizer`);
    return undefined;
  }
  if (role !== undefined && playbook !== undefined) {
    problems.push(`${where(f)}: finalizer has both role and playbook; keep one`);
    return undefined;
  }
  if (role === undefined && playbook === undefined && !sub.has('vars')) {
    problems.push(`${where(f)}: finalizer ${name} runs nothing; give it a role, a playbook, or vars (the main role or playbook then runs with them)`);
    return undefined;
  }
  return {
    name,
    ...(role === undefined ? {} : { role }),
    ...(playbook === undefined ? {} : { playbook }),
    vars,
  };
}

function readBlacklist(ctx: YamlContext, f: Field | undefined, where: Where, problems: string[]): GroupVersionKind[] {
  if (f === undefined || f.value === null) return [];
  if (!isSeq(f.value)) {
    problems.push(`${where(f)}: blacklist is ${describeNode(f.value)}; expected a list of {group, version, kind}`);
    return [];
  }
  const out: GroupVersionKind[] = [];
  for (const item of f.value.items) {
    const node = item as Node | null;
    if (node === null || !isMap(node)) {
      problems.push(`${where(f)}: a blacklist item is ${describeNode(node)}; expected {group, version, kind}, e.g. {group: apps, version: v1, kind: ReplicaSet}`);
      continue;
    }
    const got: Record<string, string> = {};
    for (const s of fieldsOf(ctx, node)) {
      if (s.value !== null && isScalar(s.value) && typeof s.value.value === 'string') got[s.key.toLowerCase()] = s.value.value;
    }
    const kind = got['kind'];
    const version = got['version'] ?? '';
    const group = got['group'] ?? '';
    if (kind === undefined || kind === '' || (version !== '' && !isDns1035Label(version))) {
      problems.push(`${where(f)}: a blacklist item needs kind (and version when known), e.g. {group: apps, version: v1, kind: ReplicaSet}`);
      continue;
    }
    out.push({ group, version, kind });
  }
  return out;
}

function readMaxRunnerArtifacts(f: Field | undefined, where: Where, problems: string[]): number {
  if (f === undefined || f.value === null) return DEFAULT_MAX_RUNNER_ARTIFACTS;
  const v = isScalar(f.value) ? f.value.value : undefined;
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return v === 0 ? DEFAULT_MAX_RUNNER_ARTIFACTS : v;
  problems.push(`${where(f)}: maxRunnerArtifacts is ${describeNode(f.value)}; expected a whole number (how many runs' artifacts are kept per custom resource; default ${DEFAULT_MAX_RUNNER_ARTIFACTS})`);
  return DEFAULT_MAX_RUNNER_ARTIFACTS;
}
