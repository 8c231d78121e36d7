/**
 * The extra vars of one Ansible run, built as operator-sdk's ansible-operator builds them
 * (internal/ansible/runner/runner.go makeParameters), so a role written for it reads the same
 * variables here: the spec's keys in snake_case (unless `snakeCaseParameters: false`),
 * `ansible_operator_meta: {name, namespace}`, `_<group>_<kind>` (the whole object) and
 * `_<group>_<kind>_spec`, then the entry's `vars`, then the finalizer's `vars` on a finalizer run.
 * Unlike ansible-operator, every value taken from the CR is marked unsafe, always (see below).
 */
import type { AnsibleSource, GroupVersionKind } from '../../config/types.js';
import { toSnake } from '../../config/paramconv.js';
import { stringLeaves } from '../../lib/redact.js';

type Json = Record<string, unknown>;

const isMap = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * @param cr the custom resource as read from the API server
 * @param source the entry's Ansible settings (`snakeCaseParameters`, `markUnsafe`, `vars`)
 * @param extra the finalizer's `vars` on a finalizer run; applied last, as ansible-operator does
 */
export function extraVarsFor(
  cr: Readonly<Json>,
  source: Pick<AnsibleSource, 'snakeCaseParameters' | 'markUnsafe' | 'vars'>,
  gvk: GroupVersionKind,
  extra?: Readonly<Json>,
): Json {
  const tooDeep = deeperThan(cr, MAX_NESTING);
  if (tooDeep !== undefined) {
    throw new RangeError(`the custom resource nests deeper than ${String(MAX_NESTING)} levels (at ${tooDeep}): Ansible cannot read such variables; flatten that field`);
  }
  const spec = isMap(cr['spec']) ? cr['spec'] : {};
  const out: Json = {};
  // Everything from the CR is unsafe (never templated) whatever the entry's markUnsafe says:
  // ansible-operator's default (false) lets `{{ lookup('pipe', …) }}` in a spec value run in the
  // operator's container as soon as the role uses the value. `markUnsafe` is accepted and ignored.
  for (const [k, v] of Object.entries(spec)) {
    const key = source.snakeCaseParameters ? toSnake(k) : k;
    // Extra vars outrank the inventory: a spec key `ansibleBecomeExe` (or `ansible_connection`,
    // `ansible_ssh_common_args`, …) would set how Ansible runs commands. Such keys are not passed.
    if (isAnsibleSetting(key)) continue;
    out[key] = markUnsafe(source.snakeCaseParameters ? snakeKeys(v) : v);
  }
  const meta = isMap(cr['metadata']) ? cr['metadata'] : {};
  out['ansible_operator_meta'] = { name: meta['name'] ?? '', namespace: meta['namespace'] ?? '' };
  const objectKey = objectVarName(gvk);
  out[objectKey] = markUnsafe(cr);
  out[`${objectKey}_spec`] = markUnsafe(spec);
  Object.assign(out, source.vars, extra ?? {});
  return out;
}

/**
 * How deep a CR may nest maps and lists. The API server stores thousands of levels; the copies
 * here recurse, and so do Python's JSON reader (1000 frames) and Ansible's templating.
 */
export const MAX_NESTING = 100;

/** The path of the first value nested deeper than `max` (`spec.a.b[0]…`), or undefined; iterative. */
function deeperThan(root: unknown, max: number): string | undefined {
  const stack: { value: unknown; depth: number; path: string }[] = [{ value: root, depth: 0, path: '' }];
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    const { value, depth, path } = top;
    if (typeof value !== 'object' || value === null) continue;
    if (depth >= max) return path.length > 120 ? `${path.slice(0, 120)}…` : path;
    const entries = Array.isArray(value) ? value.map((v, i) => [`[${String(i)}]`, v] as const) : Object.entries(value).map(([k, v]) => [`${path === '' ? '' : '.'}${k}`, v] as const);
    for (const [step, v] of entries) stack.push({ value: v, depth: depth + 1, path: path + step });
  }
  return undefined;
}

/**
 * Ansible's own variables that extra vars can replace (measured on 2.19): `omit` (a spec
 * `omit: https://elsewhere` would turn every `x | default(omit)` of the role into that value —
 * a `host:`, a `src:`) and the inventory's names. `role_path` and `playbook_dir` cannot be replaced,
 * but are listed with the rest of the documented special variables.
 */
const ANSIBLE_MAGIC_VARS = new Set([
  'omit',
  'hostvars',
  'groups',
  'group_names',
  'inventory_hostname',
  'inventory_hostname_short',
  'inventory_dir',
  'inventory_file',
  'play_hosts',
  'playbook_dir',
  'role_name',
  'role_names',
  'role_path',
]);

/**
 * Whether a variable name is one Ansible reads as a setting of the connection, become or
 * interpreter (`ansible_*`) or one of its special variables: never taken from a CR's spec, which
 * still reaches the role whole in `_<group>_<kind>_spec`.
 */
export function isAnsibleSetting(name: string): boolean {
  return name.startsWith('ansible_') || ANSIBLE_MAGIC_VARS.has(name);
}

/** `_<group>_<kind lower-cased>` with `.` and `-` made `_` (`_cache_example_com_memcached`; core `Secret`: `__secret`). */
export function objectVarName(gvk: GroupVersionKind): string {
  return `_${gvk.group}_${gvk.kind.toLowerCase()}`.replace(/[.-]/gu, '_');
}

/**
 * ansible-operator's `markUnsafe`: every string becomes `{__ansible_unsafe: s}`, which Ansible
 * reads from JSON extra vars as an unsafe (never templated) string, so `{{ … }}` in a CR's spec
 * is not evaluated by the operator's Ansible. Map keys are never templated, so they stay as they are.
 */
export function markUnsafe(value: unknown): unknown {
  if (typeof value === 'string') return { __ansible_unsafe: value };
  if (Array.isArray(value)) return value.map(markUnsafe);
  if (isMap(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, markUnsafe(v)]));
  return value;
}

/** Every map key below `value` in snake_case (paramconv.MapToSnake's recursion into maps and lists). */
function snakeKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(snakeKeys);
  if (isMap(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [toSnake(k), snakeKeys(v)]));
  return value;
}

/**
 * The strings a run's messages must not show: every string of the CR outside its metadata and
 * status (the spec; a Secret's data, also decoded), for redaction of failed tasks' errors.
 */
export function redactionStringsFor(cr: Readonly<Json>, gvk: GroupVersionKind): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(cr)) {
    if (k === 'metadata' || k === 'status' || k === 'apiVersion' || k === 'kind') continue;
    out.push(...stringLeaves(v));
  }
  const data = cr['data'];
  if (gvk.group === '' && gvk.kind === 'Secret' && isMap(data)) {
    for (const v of Object.values(data)) if (typeof v === 'string') out.push(Buffer.from(v, 'base64').toString('utf8'));
  }
  return out;
}
