/**
 * The layout docs/architecture/overview.md describes, checked on the source: folders import only downward, no module
 * imports itself in a circle, the reconcile core depends on nothing but its own model and ports
 * (and lib/), and Helm's storage format is known only to src/helm.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, normalize, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const SRC = join(ROOT, 'src');

/** Bottom first: a folder may import its own modules and those of folders before it. */
const LAYERS = ['lib', 'reconcile', 'config', 'kube', 'registry', 'helm', 'dependents', 'controller', 'observe', 'apiproxy', 'generate', 'cli'] as const;

/**
 * The Ansible engine sits beside the layers rather than in their line: it uses the shared core
 * (kube, confinement and names, lib, logs and metrics servers, config types, the dependents'
 * watcher and readiness) and only the wiring (controller, cli) uses it; Helm and registries stay apart.
 */
const ANSIBLE = 'ansible';
const ANSIBLE_MAY_IMPORT = ['ansible', 'lib', 'reconcile', 'config', 'kube', 'observe', 'dependents', 'apiproxy'];
const ANSIBLE_IMPORTED_BY = ['ansible', 'controller', 'cli'];
/** Single modules src/ansible may use beyond those folders: where the project's cache directory is decided. */
const ANSIBLE_MAY_ALSO_IMPORT = ['helm/find-helm.ts'];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return e.name.endsWith('.ts') ? [p] : [];
  });
}

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^;]*?\sfrom\s+['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)/g;

/** src-relative path of every module a file imports (relative specifiers only; packages are not ours). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(IMPORT)) {
    const spec = m[1] ?? m[2];
    if (spec === undefined) continue;
    out.push(relative(SRC, normalize(join(dirname(file), spec.replace(/\.js$/, '.ts')))));
  }
  return out;
}

const files = sourceFiles(SRC).map((f) => relative(SRC, f));
const graph = new Map(files.map((f) => [f, importsOf(join(SRC, f))]));
const folderOf = (f: string): string => f.split('/')[0] ?? f;

describe('architecture', () => {
  it('knows every top-level folder of src/', () => {
    const folders = new Set(files.map(folderOf));
    assert.deepEqual([...folders].filter((f) => f !== ANSIBLE && !(LAYERS as readonly string[]).includes(f)), [], 'add the new folder to LAYERS (and docs/architecture/overview.md)');
  });

  it('keeps src/ansible beside the layers: it imports only the shared core, and only the wiring imports it', () => {
    const wrong: string[] = [];
    for (const [file, deps] of graph) {
      for (const dep of deps) {
        if (folderOf(file) === ANSIBLE && !ANSIBLE_MAY_IMPORT.includes(folderOf(dep)) && !ANSIBLE_MAY_ALSO_IMPORT.includes(dep)) wrong.push(`${file} → ${dep}`);
        if (folderOf(dep) === ANSIBLE && !ANSIBLE_IMPORTED_BY.includes(folderOf(file))) wrong.push(`${file} → ${dep}`);
      }
    }
    assert.deepEqual(wrong, []);
  });

  it('imports only downward', () => {
    const upward: string[] = [];
    for (const [file, deps] of graph) {
      if (folderOf(file) === ANSIBLE) continue; // its own rule, above
      const from = LAYERS.indexOf(folderOf(file) as (typeof LAYERS)[number]);
      for (const dep of deps) {
        if (folderOf(dep) === ANSIBLE) continue;
        const to = LAYERS.indexOf(folderOf(dep) as (typeof LAYERS)[number]);
        if (to > from) upward.push(`${file} → ${dep}`);
      }
    }
    assert.deepEqual(upward, []);
  });

  it('keeps the reconcile core free of the edges', () => {
    const outside = [...graph]
      .filter(([file]) => folderOf(file) === 'reconcile')
      .flatMap(([file, deps]) => deps.filter((d) => !['reconcile', 'lib'].includes(folderOf(d))).map((d) => `${file} → ${d}`));
    assert.deepEqual(outside, []);
  });

  it('has no import cycle', () => {
    const state = new Map<string, 'active' | 'done'>();
    const cycles: string[] = [];
    const visit = (f: string, path: string[]): void => {
      if (state.get(f) === 'done') return;
      if (state.get(f) === 'active') {
        cycles.push([...path.slice(path.indexOf(f)), f].join(' → '));
        return;
      }
      state.set(f, 'active');
      for (const d of graph.get(f) ?? []) visit(d, [...path, f]);
      state.set(f, 'done');
    };
    for (const f of files) visit(f, []);
    assert.deepEqual(cycles, []);
  });

  it('has no import cycle in bench/ either (its modules, and what they import from src/)', () => {
    // Keyed by repository-relative path, so bench → src edges are followed too.
    const rel = (f: string): string => relative(ROOT, f);
    const benchFiles = sourceFiles(join(ROOT, 'bench')).map(rel);
    const edges = new Map<string, string[]>();
    const importsFrom = (f: string): string[] => {
      const known = edges.get(f);
      if (known !== undefined) return known;
      const deps = importsOf(join(ROOT, f)).map((d) => rel(join(SRC, d)));
      edges.set(f, deps);
      return deps;
    };
    const state = new Map<string, 'active' | 'done'>();
    const cycles: string[] = [];
    const visit = (f: string, path: string[]): void => {
      if (state.get(f) === 'done') return;
      if (state.get(f) === 'active') {
        cycles.push([...path.slice(path.indexOf(f)), f].join(' → '));
        return;
      }
      state.set(f, 'active');
      for (const d of importsFrom(f)) visit(d, [...path, f]);
      state.set(f, 'done');
    };
    for (const f of benchFiles) visit(f, []);
    assert.ok(benchFiles.length > 10, 'bench/ was read');
    assert.deepEqual(cycles, []);
  });

  it('resolves every relative import to a file that exists', () => {
    const missing = [...graph].flatMap(([file, deps]) => deps.filter((d) => !graph.has(d)).map((d) => `${file} → ${d}`));
    assert.deepEqual(missing, []);
  });

  it('leaves Helm’s storage format to src/helm', () => {
    const leaks = files.filter((f) => folderOf(f) !== 'helm' && /sh\.helm\.release\.v1|owner=helm/.test(readFileSync(join(SRC, f), 'utf8')));
    assert.deepEqual(leaks, []);
  });
});
