/**
 * Reading an Ansible role's or playbook's YAML files for the generators: one clear line naming
 * the file when one does not parse, and the role's argument specs (`meta/argument_specs.yml`, or
 * `argument_specs` in `meta/main.yml`, as Ansible looks for them).
 */
import { readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { parseDocument } from 'yaml';
import { isPlainObject } from '../lib/json.js';
import { errorMessage } from '../lib/errors.js';
import { InputError } from './errors.js';

/** The file's YAML as data; undefined when absent; an InputError naming the file when it does not parse. */
export async function readYamlFile(path: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new InputError([`cannot read ${path}: ${errorMessage(err)}`]);
  }
  return parseYamlText(text, path);
}

/** YAML text as data (Ansible reads YAML 1.1: yes/no are booleans); an InputError naming `path` on a syntax error. */
export function parseYamlText(text: string, path: string): unknown {
  const doc = parseDocument(text, { version: '1.1', uniqueKeys: false });
  const first = doc.errors[0];
  if (first !== undefined) {
    const where = first.linePos?.[0];
    throw new InputError([
      `${path}${where === undefined ? '' : `:${String(where.line)}`} is not valid YAML (${(first.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/u, '')}); fix the file (Ansible refuses it too)`,
    ]);
  }
  return doc.toJS({ maxAliasCount: 1000 }) as unknown;
}

/** A role's `argument_specs` entry points, and the file they were read from. */
export interface ArgumentSpecs {
  readonly file: string;
  /** Entry point name (`main`, ...) → its spec (`options`, `short_description`, ...). */
  readonly entryPoints: Readonly<Record<string, unknown>>;
}

/** The role's argument specs, or undefined when it declares none. */
export async function readArgumentSpecs(roleDir: string): Promise<ArgumentSpecs | undefined> {
  const candidates = ['argument_specs.yml', 'argument_specs.yaml', 'main.yml', 'main.yaml'].map((f) => join(roleDir, 'meta', f));
  for (const file of candidates) {
    const data = await readYamlFile(file);
    if (data === undefined || data === null) continue;
    if (!isPlainObject(data)) {
      if (basename(file).startsWith('argument_specs')) throw new InputError([`${file} must hold a map with argument_specs: {main: {options: ...}}`]);
      continue;
    }
    const specs = data['argument_specs'];
    if (specs === undefined) continue;
    if (!isPlainObject(specs)) throw new InputError([`${file}: argument_specs must be a map of entry points, e.g. argument_specs: {main: {options: {size: {type: int}}}}`]);
    return { file, entryPoints: specs };
  }
  return undefined;
}
