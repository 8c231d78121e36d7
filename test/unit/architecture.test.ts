/**
 * The layout docs/architecture/overview.md describes, checked on the source with TypeScript's own
 * parser (architecture-rules.ts): every folder is a layer and imports only downward, no folders
 * and no modules import each other in a circle, each layer runs only the packages its list names
 * (the shared core and the Helm engine's decisions: no I/O at all), src/engines/ansible keeps apart from Helm and registries, and Helm's
 * storage format is known only to src/helm. Each rule is also shown failing on the tree with one
 * import added that breaks it.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { folderCycles, folderOf, forbiddenPackages, importsOf, moduleCycles, readGraph, upwardImports, type ImportGraph } from './architecture-rules.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const SRC = join(ROOT, 'src');

/** Bottom first: a folder may import its own modules and those of folders before it. */
const LAYERS = ['lib', 'core', 'engines/helm', 'config', 'kube', 'registry', 'helm', 'dependents', 'observe', 'apiproxy', 'engines/ansible', 'controller', 'generate', 'cli'] as const;

/**
 * The Ansible engine's own line: of the layers below it, it uses the shared core (kube,
 * confinement and names, lib, logs and metrics servers, config types, the dependents' watcher and
 * readiness, the proxy) but not Helm or registries, and only the wiring (controller, cli) uses it.
 */
const ANSIBLE = 'engines/ansible';
const ANSIBLE_MAY_IMPORT = ['engines/ansible', 'lib', 'core', 'config', 'kube', 'observe', 'dependents', 'apiproxy'];
const ANSIBLE_IMPORTED_BY = ['engines/ansible', 'controller', 'cli'];
/** Single modules src/engines/ansible may use beyond those folders: where the project's cache directory is decided. */
const ANSIBLE_MAY_ALSO_IMPORT = ['helm/find-helm.ts'];

/**
 * The packages each layer's code runs (type-only imports are erased and not counted). A package
 * new to a layer is a decision: add it here, in the layer whose job needs it.
 */
const PACKAGES: Record<(typeof LAYERS)[number], readonly string[]> = {
  lib: ['node:crypto', 'node:fs', 'node:path', 'node:url'],
  // The core decides; hashing is its only computation beyond the language. No I/O, no clock of its own.
  core: ['node:crypto'],
  'engines/helm': ['node:crypto'],
  // CEL: outputs and readyWhen are parsed and type-checked at start (status-expressions.ts).
  config: ['node:crypto', 'node:fs', 'node:os', 'node:path', 'node:util', 'node:zlib', 'semver', 'yaml', '@marcbachmann/cel-js'],
  kube: ['@kubernetes/client-node', 'node:fs', 'node:http', 'node:net', 'node:os', 'node:path', 'undici', 'yaml'],
  registry: ['node:crypto', 'node:fs', 'node:os', 'node:path', 'node:tls', 'undici', 'yaml'],
  helm: ['execa', 'node:buffer', 'node:child_process', 'node:crypto', 'node:fs', 'node:http', 'node:os', 'node:path', 'node:readline', 'node:stream', 'node:util', 'node:zlib', 'yaml'],
  // Reaches the API server only through kube.
  dependents: ['node:crypto', 'node:timers', 'yaml'],
  // reflect-metadata: @peculiar/x509 needs it loaded first (a bare import, which a regex over `from` never saw).
  observe: ['@peculiar/x509', 'chokidar', 'node:crypto', 'node:fs', 'node:http', 'node:http2', 'node:https', 'node:os', 'node:path', 'node:tls', 'pino', 'pino-pretty', 'prom-client', 'reflect-metadata'],
  apiproxy: ['node:crypto', 'node:fs', 'node:https', 'node:os', 'node:stream', 'yaml'],
  'engines/ansible': ['execa', 'node:crypto', 'node:fs', 'node:os', 'node:path', 'node:timers', 'prom-client'],
  controller: ['chokidar', 'node:crypto', 'node:fs', 'node:os', 'node:path'],
  generate: ['node:fs', 'node:os', 'node:path', 'node:util', 'yaml'],
  cli: ['execa', 'node:crypto', 'node:fs', 'node:net', 'node:os', 'node:path', 'node:util'],
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return e.name.endsWith('.ts') ? [p] : [];
  });
}

const files = sourceFiles(SRC).map((f) => relative(SRC, f));
const graph = readGraph(SRC, files);

/** The tree with one more import in `file`. */
function withImport(file: string, text: string): ImportGraph {
  const more = new Map(graph);
  more.set(file, [...(graph.get(file) ?? []), ...importsOf(file, text)]);
  return more;
}

describe('architecture', () => {
  it('knows every top-level folder of src/ as a layer', () => {
    const folders = new Set(files.map(folderOf));
    assert.deepEqual([...folders].filter((f) => !(LAYERS as readonly string[]).includes(f)), [], 'add the new folder to LAYERS and PACKAGES (and docs/architecture/overview.md)');
  });

  it('imports only downward; shown failing on the folder cycle the tree had (observe → controller/workqueue.ts)', () => {
    assert.deepEqual(upwardImports(graph, LAYERS), []);
    const before = withImport('observe/metrics.ts', "import type { WorkQueueMetrics } from '../controller/workqueue.js';");
    assert.deepEqual(upwardImports(before, LAYERS), ['observe/metrics.ts → controller/workqueue.ts']);
  });

  it('has no cycle of folders; shown failing on the one the tree had (controller → ansible → observe → controller)', () => {
    assert.deepEqual(folderCycles(graph), []);
    const before = withImport('observe/metrics.ts', "import type { WorkQueueMetrics } from '../controller/workqueue.js';");
    assert.deepEqual(folderCycles(before).map((c) => c.split(' → ').length > 2), [true]);
    assert.ok(folderCycles(before).some((c) => c.includes('observe → controller')), folderCycles(before).join('\n'));
  });

  it('keeps src/engines/ansible apart from Helm and registries: it imports only the shared core, and only the wiring imports it', () => {
    const wrong: string[] = [];
    for (const [file, edges] of graph) {
      for (const { target, kind } of edges) {
        if (kind !== 'module') continue;
        if (folderOf(file) === ANSIBLE && !ANSIBLE_MAY_IMPORT.includes(folderOf(target)) && !ANSIBLE_MAY_ALSO_IMPORT.includes(target)) wrong.push(`${file} → ${target}`);
        if (folderOf(target) === ANSIBLE && !ANSIBLE_IMPORTED_BY.includes(folderOf(file))) wrong.push(`${file} → ${target}`);
      }
    }
    assert.deepEqual(wrong, []);
  });

  it('runs in each layer only the packages its list names; shown failing on node:fs in the core', () => {
    assert.deepEqual(forbiddenPackages(graph, PACKAGES), []);
    const io = withImport('core/kstatus.ts', "import { readFileSync } from 'node:fs';\nimport type { Logger } from 'pino';\nconst lazy = await import('execa');");
    assert.deepEqual(forbiddenPackages(io, PACKAGES), ['core/kstatus.ts → node:fs', 'core/kstatus.ts → execa'], 'a type-only import is erased and allowed');
  });

  it('keeps the shared core and the Helm engine decisions free of the edges', () => {
    const outside = [...graph]
      .filter(([file]) => folderOf(file) === 'core' || folderOf(file) === 'engines/helm')
      .flatMap(([file, edges]) => edges.filter((e) => e.kind === 'module' && !['core', 'engines/helm', 'lib'].includes(folderOf(e.target))).map((e) => `${file} → ${e.target}`));
    assert.deepEqual(outside, []);
  });

  it('drives both engines through the one seam: the controller shell never names either reconciler', () => {
    const named = [...graph]
      .filter(([file]) => file.startsWith('controller/') && file !== 'controller/manager.ts')
      .flatMap(([file, edges]) => edges.filter((e) => e.target === 'engines/helm/reconciler.ts' || e.target === 'engines/ansible/reconciler.ts').map((e) => `${file} → ${e.target}`));
    assert.deepEqual(named, [], 'the shell depends on core/engine.ts; only the wiring (manager.ts) builds engines');
  });

  it('has no import cycle', () => {
    assert.deepEqual(moduleCycles(graph), []);
  });

  it('has no import cycle in bench/ either (its modules, and what they import from src/)', () => {
    // Keyed by repository-relative path, so bench → src edges are followed too.
    const benchFiles = sourceFiles(join(ROOT, 'bench')).map((f) => relative(ROOT, f));
    const reached = new Set(benchFiles);
    const queue = [...benchFiles];
    const edges = new Map<string, ReturnType<typeof importsOf>>();
    while (queue.length > 0) {
      const f = queue.pop() ?? '';
      const deps = importsOf(f, readFileSync(join(ROOT, f), 'utf8'));
      edges.set(f, deps);
      for (const d of deps) {
        if (d.kind === 'module' && !reached.has(d.target)) {
          reached.add(d.target);
          queue.push(d.target);
        }
      }
    }
    assert.ok(benchFiles.length > 10, 'bench/ was read');
    assert.deepEqual(moduleCycles(edges), []);
  });

  it('resolves every relative import to a file that exists', () => {
    const missing = [...graph].flatMap(([file, edges]) => edges.filter((e) => e.kind === 'module' && !graph.has(e.target)).map((e) => `${file} → ${e.target}`));
    assert.deepEqual(missing, []);
  });

  it('leaves Helm’s storage format to src/helm', () => {
    const leaks = files.filter((f) => folderOf(f) !== 'helm' && /sh\.helm\.release\.v1|owner=helm/.test(readFileSync(join(SRC, f), 'utf8')));
    assert.deepEqual(leaks, []);
  });
});
