/**
 * Which kinds an Ansible role or playbook touches, read from its tasks for `generate rbac`: the
 * `kubernetes.core.k8s` (write), `k8s_info` (read) and `operator_sdk.util.k8s_status` (status)
 * tasks whose `kind`/`api_version`, `definition`, `src` or `template` are literal, walking blocks,
 * handlers and includes whose file name is literal. Whatever is computed at run time (a templated
 * kind, a definition from a variable, an include of `{{ file }}`) becomes a note naming the file and
 * the task and what to grant by hand: reading tasks is a guess that must say where it stops.
 */
import { readdir, readFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { isPlainObject } from '../lib/json.js';
import { readYamlFile } from './ansible-files.js';
import type { AnsibleSource } from '../config/types.js';
import { InputError } from './errors.js';

export type Access = 'write' | 'read' | 'status' | 'event';

export interface TaskKind {
  /** Undefined when the task gives the kind but computes the apiVersion. */
  readonly apiVersion: string | undefined;
  readonly kind: string;
  readonly access: Access;
  /** `tasks/main.yml: task "Create the ConfigMap"`, relative to the role or playbook. */
  readonly origin: string;
}

export interface TaskScan {
  readonly kinds: TaskKind[];
  /** What could not be read, with what to add by hand. */
  readonly notes: string[];
}

const WRITE_MODULES = ['kubernetes.core.k8s', 'community.kubernetes.k8s', 'k8s'];
const READ_MODULES = ['kubernetes.core.k8s_info', 'community.kubernetes.k8s_info', 'k8s_info'];
const STATUS_MODULES = ['operator_sdk.util.k8s_status', 'community.kubernetes.k8s_status', 'k8s_status'];
const EVENT_MODULES = ['operator_sdk.util.k8s_event', 'community.kubernetes.k8s_event', 'k8s_event'];
const INCLUDE_TASKS = ['include_tasks', 'import_tasks', 'include', 'ansible.builtin.include_tasks', 'ansible.builtin.import_tasks', 'ansible.builtin.include'];
const INCLUDE_ROLE = ['include_role', 'import_role', 'ansible.builtin.include_role', 'ansible.builtin.import_role'];
const BLOCK_KEYS = ['block', 'rescue', 'always'];

const templated = (v: string): boolean => v.includes('{{') || v.includes('{%');

interface Walk {
  /** Where relative paths in notes start (the watches file's directory). */
  readonly base: string;
  readonly kinds: TaskKind[];
  readonly notes: string[];
  /** Files already walked (includes may repeat or recurse). */
  readonly seen: Set<string>;
}

/** The kinds a role's tasks and handlers touch. */
export async function scanRole(roleDir: string, base: string): Promise<TaskScan> {
  const w: Walk = { base, kinds: [], notes: [], seen: new Set() };
  await walkRole(roleDir, w);
  return { kinds: w.kinds, notes: w.notes };
}

/** The kinds a playbook's plays touch: their tasks, handlers and roles. */
export async function scanPlaybook(playbook: string, base: string): Promise<TaskScan> {
  const w: Walk = { base, kinds: [], notes: [], seen: new Set() };
  await walkPlaybook(playbook, w);
  return { kinds: w.kinds, notes: w.notes };
}

function label(w: Walk, file: string): string {
  const rel = relative(w.base, file);
  return rel.startsWith('..') ? file : rel;
}

async function walkRole(roleDir: string, w: Walk): Promise<void> {
  if (w.seen.has(roleDir)) return;
  w.seen.add(roleDir);
  for (const sub of ['tasks', 'handlers']) {
    const dir = join(roleDir, sub);
    let files: string[];
    try {
      files = (await readdir(dir)).filter((f) => /\.ya?ml$/u.test(f)).sort();
    } catch {
      continue;
    }
    // Every file: Ansible only starts at main.yml, but the others are included from it, perhaps
    // under a computed name that we could not follow.
    for (const f of files) await walkTaskFile(join(dir, f), roleDir, w);
  }
}

async function walkPlaybook(file: string, w: Walk): Promise<void> {
  if (w.seen.has(file)) return;
  w.seen.add(file);
  const plays = await readYamlFile(file);
  if (plays === undefined) {
    w.notes.push(`${label(w, file)} does not exist; nothing read from it`);
    return;
  }
  if (plays === null) return;
  if (!Array.isArray(plays)) throw new InputError([`${file} is not a playbook (a list of plays); fix the file`]);
  const dir = dirname(file);
  for (const play of plays) {
    if (!isPlainObject(play)) continue;
    const imported = play['import_playbook'] ?? play['ansible.builtin.import_playbook'];
    if (typeof imported === 'string') {
      if (templated(imported)) w.notes.push(`${label(w, file)}: import_playbook ${imported} is computed; grant what it creates by hand`);
      else await walkPlaybook(isAbsolute(imported) ? imported : join(dir, imported), w);
      continue;
    }
    for (const key of ['pre_tasks', 'tasks', 'post_tasks', 'handlers']) await walkTasks(play[key], file, dir, undefined, w);
    const roles = play['roles'];
    if (Array.isArray(roles)) {
      for (const r of roles) {
        const name = typeof r === 'string' ? r : isPlainObject(r) ? (r['role'] ?? r['name']) : undefined;
        if (typeof name === 'string') await includeRole(name, dir, `${label(w, file)}: roles`, w);
      }
    }
  }
}

async function walkTaskFile(file: string, roleDir: string | undefined, w: Walk): Promise<void> {
  if (w.seen.has(file)) return;
  w.seen.add(file);
  const tasks = await readYamlFile(file);
  if (tasks === undefined) {
    w.notes.push(`${label(w, file)} does not exist; nothing read from it`);
    return;
  }
  await walkTasks(tasks, file, dirname(file), roleDir, w);
}

async function walkTasks(tasks: unknown, file: string, dir: string, roleDir: string | undefined, w: Walk): Promise<void> {
  if (tasks === null || tasks === undefined) return;
  if (!Array.isArray(tasks)) throw new InputError([`${file} is not a list of tasks; fix the file (Ansible refuses it too)`]);
  for (const task of tasks) {
    if (!isPlainObject(task)) continue;
    for (const key of BLOCK_KEYS) await walkTasks(task[key], file, dir, roleDir, w);
    await readTask(task, file, dir, roleDir, w);
  }
}

function taskName(task: Record<string, unknown>, module: string): string {
  return typeof task['name'] === 'string' ? `task "${task['name']}"` : `a ${module} task`;
}

async function readTask(task: Record<string, unknown>, file: string, dir: string, roleDir: string | undefined, w: Walk): Promise<void> {
  const at = (module: string): string => `${label(w, file)}: ${taskName(task, module)}`;
  for (const module of INCLUDE_TASKS) {
    const arg = task[module];
    if (arg === undefined) continue;
    const target = typeof arg === 'string' ? arg : isPlainObject(arg) ? arg['file'] : undefined;
    if (typeof target !== 'string' || templated(target)) {
      w.notes.push(`${at(module)} includes ${typeof target === 'string' ? target : 'a computed file'}, which is not read: grant what it creates by hand`);
      continue;
    }
    // Ansible looks next to the including file, then in the role's tasks/.
    const candidates = isAbsolute(target) ? [target] : [join(dir, target), ...(roleDir === undefined ? [] : [join(roleDir, 'tasks', target)])];
    let found = false;
    for (const c of candidates) {
      if ((await readYamlFile(c)) !== undefined) {
        await walkTaskFile(c, roleDir, w);
        found = true;
        break;
      }
    }
    if (!found) w.notes.push(`${at(module)} includes ${target}, which was not found; grant what it creates by hand`);
  }
  for (const module of INCLUDE_ROLE) {
    const arg = task[module];
    if (arg === undefined) continue;
    const name = isPlainObject(arg) ? arg['name'] : undefined;
    if (typeof name !== 'string' || templated(name)) {
      w.notes.push(`${at(module)} includes a computed role, which is not read: grant what it creates by hand`);
      continue;
    }
    await includeRole(name, roleDir === undefined ? dir : dirname(roleDir), at(module), w);
  }
  for (const module of EVENT_MODULES) {
    // An Event names its kind in involvedObject, but what it writes is always an Event.
    if (task[module] !== undefined) w.kinds.push({ apiVersion: 'v1', kind: 'Event', access: 'event', origin: at(module) });
  }
  for (const [modules, access] of [[WRITE_MODULES, 'write'], [READ_MODULES, 'read'], [STATUS_MODULES, 'status']] as const) {
    for (const module of modules) {
      if (task[module] === undefined) continue;
      const args = isPlainObject(task[module]) ? task[module] : isPlainObject(task['args']) ? task['args'] : undefined;
      if (args === undefined) {
        w.notes.push(`${at(module)} passes its arguments as one string, which is not read: grant the kind it ${verbOf(access)} by hand`);
        continue;
      }
      await readK8sArgs(args, access, at(module), dir, roleDir, w);
    }
  }
}

async function includeRole(name: string, rolesDir: string, at: string, w: Walk): Promise<void> {
  const candidates = [join(rolesDir, name), join(rolesDir, 'roles', name)];
  for (const c of candidates) {
    try {
      await readdir(c);
    } catch {
      continue;
    }
    await walkRole(c, w);
    return;
  }
  w.notes.push(`${at} uses role ${name}, which was not found next to it (${candidates.join(', ')}); grant what it creates by hand`);
}

function verbOf(access: Access): string {
  return access === 'write' ? 'creates' : access === 'read' ? 'reads' : access === 'status' ? 'writes the status of' : 'records';
}

/** The kinds one k8s/k8s_info/k8s_status task names. */
async function readK8sArgs(args: Record<string, unknown>, access: Access, at: string, dir: string, roleDir: string | undefined, w: Walk): Promise<void> {
  const apiVersion = args['api_version'] ?? args['apiVersion'] ?? args['api'] ?? args['version'];
  const kind = args['kind'];
  const definition = args['definition'] ?? args['resource_definition'];
  const template = args['template'];
  const src = args['src'];
  let computed = false;
  if (definition !== undefined && !addDefinition(definition, access, at, w)) computed = true;
  if (src !== undefined) {
    const r = typeof src === 'string' ? await addFile(src, 'files', access, at, dir, roleDir, w) : 'computed';
    if (r === 'computed') computed = true;
  }
  for (const t of Array.isArray(template) ? template : template === undefined ? [] : [template]) {
    const path = typeof t === 'string' ? t : isPlainObject(t) ? t['path'] : undefined;
    const r = typeof path === 'string' ? await addFile(path, 'templates', access, at, dir, roleDir, w) : 'computed';
    if (r === 'computed') computed = true;
  }
  if (definition === undefined && src === undefined && template === undefined) {
    if (typeof kind === 'string' && !templated(kind)) {
      const version = typeof apiVersion === 'string' && !templated(apiVersion) ? apiVersion : undefined;
      w.kinds.push({ apiVersion: version, kind, access, origin: at });
    } else computed = true;
  }
  if (computed) {
    w.notes.push(`${at}: the kind it ${verbOf(access)} is computed at run time (a template or a variable), so it is not granted: add a rule for it by hand`);
  }
}

/** Objects of a literal definition (a map, a list, or YAML text); false when computed. */
function addDefinition(definition: unknown, access: Access, at: string, w: Walk): boolean {
  if (typeof definition === 'string') return addYamlText(definition, access, at, w);
  const objects = Array.isArray(definition) ? definition : [definition];
  let ok = true;
  for (const o of objects) ok = addObject(o, access, at, w) && ok;
  return ok;
}

function addObject(o: unknown, access: Access, at: string, w: Walk): boolean {
  if (!isPlainObject(o)) return false;
  const kind = o['kind'];
  const apiVersion = o['apiVersion'];
  if (typeof kind !== 'string' || templated(kind)) return false;
  w.kinds.push({ apiVersion: typeof apiVersion === 'string' && !templated(apiVersion) ? apiVersion : undefined, kind, access, origin: at });
  return true;
}

/**
 * Objects in a Jinja template, a manifest file or a definition given as text: only its literal
 * top-level `kind:`/`apiVersion:` lines count (the rest may be any Jinja). False when a document's
 * kind is computed (or it has none).
 */
function addYamlText(text: string, access: Access, at: string, w: Walk): boolean {
  let ok = true;
  let found = 0;
  for (const doc of text.split(/^---[ \t]*$/mu)) {
    const kind = /^kind:[ \t]*["']?([^\s"'#]+)/mu.exec(doc)?.[1];
    const apiVersion = /^apiVersion:[ \t]*["']?([^\s"'#]+)/mu.exec(doc)?.[1];
    if (kind === undefined || templated(kind)) {
      // A document of only comments or Jinja control lines holds no object.
      if (kind !== undefined || doc.replace(/^[ \t]*(#.*|\{%.*%\}|\{#.*#\})?[ \t]*$/gmu, '').trim() !== '') ok = false;
      continue;
    }
    w.kinds.push({ apiVersion: apiVersion === undefined || templated(apiVersion) ? undefined : apiVersion, kind, access, origin: at });
    found++;
  }
  return ok && found > 0;
}

/** `src:` (files/) or `template:` (templates/): read where Ansible looks, relative to the role. */
async function addFile(path: string, sub: 'files' | 'templates', access: Access, at: string, dir: string, roleDir: string | undefined, w: Walk): Promise<'ok' | 'computed' | 'missing'> {
  if (templated(path)) return 'computed';
  const candidates = isAbsolute(path) ? [path] : [...(roleDir === undefined ? [] : [join(roleDir, sub, path)]), join(dir, sub, path), join(dir, path)];
  for (const c of candidates) {
    let text: string;
    try {
      text = await readFile(c, 'utf8');
    } catch {
      continue;
    }
    // A plain manifest must parse (Ansible parses it too); a template is Jinja until rendered.
    if (sub === 'files') {
      const bad = parseAllDocuments(text, { version: '1.1' }).find((d) => d.errors.length > 0)?.errors[0];
      if (bad !== undefined) throw new InputError([`${c} is not valid YAML (${bad.message.split('\n')[0] ?? ''}); fix the file (Ansible refuses it too)`]);
    }
    return addYamlText(text, access, at, w) ? 'ok' : 'computed';
  }
  w.notes.push(`${at}: ${path} was not found (looked in ${candidates.map((c) => label(w, c)).join(', ')}); grant what it creates by hand`);
  return 'missing';
}

/** What an Ansible entry's runs touch: its role or playbook, and its finalizer's when it has its own. */
export async function scanAnsibleSource(source: AnsibleSource, base: string): Promise<TaskScan> {
  const w: Walk = { base, kinds: [], notes: [], seen: new Set() };
  for (const r of [source, ...(source.finalizer === undefined ? [] : [source.finalizer])]) {
    if (r.role !== undefined) await walkRole(r.role, w);
    else if (r.playbook !== undefined) await walkPlaybook(r.playbook, w);
  }
  return { kinds: w.kinds, notes: w.notes };
}
