/**
 * The layout rules test/unit/architecture.test.ts checks, as pure functions over an import graph
 * (so the test can show each rule failing on a graph that breaks it), and the reader that builds
 * the graph from the sources with TypeScript's own parser: every import, export-from and dynamic
 * import(), relative or package, with whether it is type-only (erased: no code runs).
 */
import { readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import ts from 'typescript';

export interface ImportEdge {
  /** src-relative path of the module imported (relative specifiers), or the package name. */
  readonly target: string;
  readonly kind: 'module' | 'package';
  /** Erased at build: `import type`, or an import whose every name is a type. */
  readonly typeOnly: boolean;
}

/** file (src-relative) → what it imports. */
export type ImportGraph = ReadonlyMap<string, readonly ImportEdge[]>;

/** A file's layer: its top folder of src/, or for an engine `engines/<name>`. */
export function folderOf(f: string): string {
  const [top = f, second] = f.split('/');
  return top === 'engines' && second !== undefined && f.split('/').length > 2 ? `engines/${second}` : top;
}

/** A package specifier's package: `node:fs/promises` → `node:fs`, `@a/b/c` → `@a/b`, `x/y` → `x`. */
export function packageOf(spec: string): string {
  if (spec.startsWith('node:')) return spec.split('/')[0] ?? spec;
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? spec);
}

/** What `text` (the file at src-relative `file`) imports. */
export function importsOf(file: string, text: string): ImportEdge[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const out: ImportEdge[] = [];
  const add = (spec: string, typeOnly: boolean): void => {
    if (spec.startsWith('.')) out.push({ target: normalize(join(dirname(file), spec.replace(/\.js$/u, '.ts'))), kind: 'module', typeOnly });
    else out.push({ target: packageOf(spec), kind: 'package', typeOnly });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause;
      const bindings = clause?.namedBindings;
      const allTypes =
        clause !== undefined &&
        (clause.phaseModifier === ts.SyntaxKind.TypeKeyword ||
          (clause.name === undefined && bindings !== undefined && ts.isNamedImports(bindings) && bindings.elements.length > 0 && bindings.elements.every((e) => e.isTypeOnly)));
      add(node.moduleSpecifier.text, allTypes);
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier !== undefined && ts.isStringLiteral(node.moduleSpecifier)) {
      add(node.moduleSpecifier.text, node.isTypeOnly);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [arg] = node.arguments;
      if (arg !== undefined && ts.isStringLiteralLike(arg)) add(arg.text, false);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      add(node.argument.literal.text, true);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

/** The graph of the files under `root` named by `files` (root-relative). */
export function readGraph(root: string, files: readonly string[]): ImportGraph {
  return new Map(files.map((f) => [f, importsOf(f, readFileSync(join(root, f), 'utf8'))]));
}

/** Edges from a folder to one after it in `layers` (or to a folder not in them). */
export function upwardImports(graph: ImportGraph, layers: readonly string[]): string[] {
  const out: string[] = [];
  for (const [file, edges] of graph) {
    const from = layers.indexOf(folderOf(file));
    for (const e of edges) {
      if (e.kind !== 'module') continue;
      const to = layers.indexOf(folderOf(e.target));
      if (to < 0 || from < 0 || to > from) out.push(`${file} → ${e.target}`);
    }
  }
  return out;
}

/** Circles of folders (a → b → … → a, each step some file's import), types included. */
export function folderCycles(graph: ImportGraph): string[] {
  const next = new Map<string, Set<string>>();
  for (const [file, edges] of graph) {
    for (const e of edges) {
      if (e.kind !== 'module' || folderOf(e.target) === folderOf(file)) continue;
      const set = next.get(folderOf(file)) ?? new Set<string>();
      set.add(folderOf(e.target));
      next.set(folderOf(file), set);
    }
  }
  return cyclesOf(next);
}

/** Circles of modules, types included. */
export function moduleCycles(graph: ImportGraph): string[] {
  return cyclesOf(new Map([...graph].map(([f, edges]) => [f, new Set(edges.filter((e) => e.kind === 'module').map((e) => e.target))])));
}

function cyclesOf(next: ReadonlyMap<string, ReadonlySet<string>>): string[] {
  const state = new Map<string, 'active' | 'done'>();
  const cycles: string[] = [];
  const visit = (n: string, path: string[]): void => {
    if (state.get(n) === 'done') return;
    if (state.get(n) === 'active') {
      cycles.push([...path.slice(path.indexOf(n)), n].join(' → '));
      return;
    }
    state.set(n, 'active');
    for (const d of next.get(n) ?? []) visit(d, [...path, n]);
    state.set(n, 'done');
  };
  for (const n of next.keys()) visit(n, []);
  return cycles;
}

/**
 * Packages a folder's code runs that its allow-list does not name (type-only imports are erased
 * and never count). `allowed`: folder → packages; a folder without a list may run any.
 */
export function forbiddenPackages(graph: ImportGraph, allowed: Readonly<Record<string, readonly string[]>>): string[] {
  const out: string[] = [];
  for (const [file, edges] of graph) {
    const list = allowed[folderOf(file)];
    if (list === undefined) continue;
    for (const e of edges) if (e.kind === 'package' && !e.typeOnly && !list.includes(e.target)) out.push(`${file} → ${e.target}`);
  }
  return out;
}

