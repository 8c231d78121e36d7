/**
 * The bundle `npm run build` makes after tsc (scripts/bundle.ts; the Dockerfile runs the same):
 * chartpilot's CLI and operator bundled by esbuild into dist/bundle/, which bin/chartpilot.js and
 * the image run. Node then opens a handful of files instead of ~650 (dist/src's modules plus
 * undici, execa, yaml, …): the module loader's resolving, stat-ing and package.json reading was
 * about half of every start's CPU.
 *
 * - chartpilot.js is the entry. Code that the CLI loads only on demand (`generate`/`new`, `adopt`,
 *   the x509 code behind --metrics-secure, client-node's auth providers: oidc alone pulls in 1 MB of
 *   client-node's API) stays behind its dynamic import, in chunk files beside it (esbuild's code
 *   splitting). One file with everything in it measured worse: each start parses all 5.6 MB, and
 *   keeps it, so the operator's RSS at ready was above the unbundled one (93 vs 90 MB; split: 81).
 *   Splitting's known caveat, top-level code of shared chunks running before the importing
 *   chunk's own, cannot reorder anything here: chartpilot's modules have no top-level side effects.
 * - postrender.js, the helm post-renderer's script transport (a Node process per helm call), is a
 *   separate single-file build: it needs a few modules and should load nothing else.
 *
 * The input is tsc's output (dist/src), the code the unit tests run, not the TypeScript sources:
 * one compiler decides what the code means. Names are kept (no minification: whitespace and syntax
 * minification saved ~3 MB of RSS and no measurable CPU, at the price of one-line stack traces);
 * source maps, chained to the .ts sources, lie beside each file for `node --enable-source-maps`.
 * The files are then made pure ASCII where only comments held other characters
 * (scripts/ascii-source.ts): V8 stores a script's source at one byte per character only then
 * (operator at ready 82.1 → 78.9 MB RSS, scripts/start-costs.sh).
 *
 * What the bundle cannot carry fails the build (checkBundle): a package left to be loaded from
 * node_modules at run time, a dependency's module that finds files beside itself (`__dirname`),
 * which in the bundle would be dist/bundle/, or an import() of a CommonJS module, which esbuild's
 * chunks answer with its default export only. The image has no node_modules at all.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { readFile } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { build, type BuildOptions, type Metafile, type Plugin } from 'esbuild';
import { BUNDLE_DIR } from '../src/lib/package-root.js';
import { asciiSource } from './ascii-source.js';

/** The CLI's entry, tsc's module below the package root; its bundle is dist/bundle/chartpilot.js. */
export const CLI_ENTRY = 'dist/src/cli/main.js';
/** The post-renderer's, bundled alone as dist/bundle/postrender.js (src/helm/postrender/plugin.ts runs it). */
export const POSTRENDER_ENTRY = 'dist/src/helm/postrender/main.js';

/**
 * Packages a bundled module may still `require` at run time, each because the require is optional
 * (inside try/catch, with a fallback) and the package is not a dependency of chartpilot.
 */
export const OPTIONAL_EXTERNALS: Readonly<Record<string, string>> = {
  // debug (via @kubernetes/client-node's socks dependency) colours its output when it has it.
  'supports-color': 'debug tries it for colours and does without',
};

/**
 * Dependency modules that use `__dirname`/`__filename`, which an ESM bundle does not define, and
 * why that code never runs in chartpilot. Any other module doing so fails the build.
 */
export const PATH_USERS: Readonly<Record<string, string>> = {
  // pino starts a worker thread from a file beside its own module, only for transports.
  'node_modules/pino/lib/transport.js': 'pino transports only; chartpilot logs to a stream (src/observe/logger.ts)',
  'node_modules/thread-stream/index.js': 'pino transports only',
  // `typeof __filename !== "undefined"` guards it.
  'node_modules/undici/index.js': 'guarded by typeof',
};

/** CommonJS dependencies `require` node's built-ins: give the ESM bundle a `require` for them. */
const BANNER = "import { createRequire as __chartpilotCreateRequire } from 'node:module';\nconst require = __chartpilotCreateRequire(import.meta.url);";

/**
 * Non-ASCII characters esbuild leaves as they are: inside regular expression literals. Each is
 * written as its \\u escape, which matches the same character, so the chunk stays ASCII
 * (scripts/ascii-source.ts says why that matters). A text no longer found fails the build.
 */
export const REGEX_ESCAPES: Readonly<Record<string, readonly (readonly [string, string])[]>> = {
  'node_modules/@marcbachmann/cel-js/lib/functions.js': [['(ns|us|\u00b5s|ms|s|m|h)/', '(ns|us|\\u00b5s|ms|s|m|h)/']],
};

/** The plugin that applies REGEX_ESCAPES. */
function regexEscapes(root: string): Plugin {
  return {
    name: 'regex-escapes',
    setup(b) {
      // Only the listed files reach the callback (esbuild's filter is Go's regexp: no u flag).
      const names = Object.keys(REGEX_ESCAPES).map((f) => f.replace(/^node_modules\//u, '').replace(/[.*+?^${}()|[\]\\]/gu, '\\$&').replaceAll('/', '[\\\\/]'));
      b.onLoad({ filter: new RegExp(`[\\\\/]node_modules[\\\\/](?:${names.join('|')})$`) }, async (args) => {
        const rel = relative(root, args.path).split(sep).join('/');
        const escapes = REGEX_ESCAPES[rel];
        if (escapes === undefined) return undefined;
        let contents = await readFile(args.path, 'utf8');
        for (const [from, to] of escapes) {
          if (!contents.includes(from)) throw new Error(`${rel} no longer has ${JSON.stringify(from)}: update REGEX_ESCAPES in scripts/bundler.ts`);
          contents = contents.replaceAll(from, to);
        }
        return { contents, loader: 'js' };
      });
    },
  };
}

/** esbuild's options for one entry (`name` → dist/bundle/<name>.js); `splitting` puts dynamic imports in chunk files. */
export function bundleOptions(root: string, name: string, entry: string, splitting: boolean): BuildOptions & { metafile: true } {
  return {
    absWorkingDir: root,
    entryPoints: { [name]: join(root, entry) },
    outdir: join(root, BUNDLE_DIR),
    // In dist/bundle/ itself, not a subfolder: src/lib/package-root.ts tells the layout from the folder.
    chunkNames: '[name]-[hash]',
    splitting,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    banner: { js: BANNER },
    sourcemap: 'linked',
    // The bundle's own comments name each module's source file; license comments go to the end.
    legalComments: 'eof',
    metafile: true,
    logLevel: 'warning',
    plugins: [regexEscapes(root)],
  };
}

const isBuiltin = (spec: string): boolean => spec.startsWith('node:') || builtinModules.includes(spec);

/** A module's section in esbuild's unminified output starts with a `// <path>` comment line. */
const MODULE_COMMENT = /^\/\/ ((?:node_modules|dist)\/\S+)$/u;
const PATH_GLOBALS = /\b__(?:dirname|filename)\b/u;

/**
 * What in a bundle would break at run time: a non-optional external package, an unknown
 * `__dirname` user, an import() of a CommonJS module.
 */
export function checkBundle(metafile: Metafile, readOutput: (file: string) => string): string[] {
  const problems: string[] = [];
  for (const [file, input] of Object.entries(metafile.inputs)) {
    for (const i of input.imports) {
      if (i.kind === 'dynamic-import' && metafile.inputs[i.path]?.format === 'cjs') {
        problems.push(`${file} import()s "${i.original ?? i.path}", a CommonJS module: from another chunk esbuild hands over only its default export (evanw/esbuild#3245); import it statically in an ES module of ours and import() that (as src/observe/x509.ts does)`);
      }
    }
  }
  for (const [file, output] of Object.entries(metafile.outputs)) {
    if (!file.endsWith('.js')) continue;
    for (const i of output.imports) {
      if (i.external && !isBuiltin(i.path) && !(i.path in OPTIONAL_EXTERNALS)) {
        problems.push(`${file} loads "${i.path}" from node_modules at run time (it is not bundled); bundle it, or list it in OPTIONAL_EXTERNALS if the require is optional`);
      }
    }
    let module = '';
    const reported = new Set<string>();
    for (const line of readOutput(file).split('\n')) {
      const m = MODULE_COMMENT.exec(line);
      if (m?.[1] !== undefined) {
        module = m[1];
        continue;
      }
      if (module !== '' && PATH_GLOBALS.test(line) && !(module in PATH_USERS) && !reported.has(module)) {
        reported.add(module);
        problems.push(`${file}: ${module} uses __dirname/__filename, which would name dist/bundle/ (or be undefined): keep it out of the bundle's path, or list it in PATH_USERS with why it never runs`);
      }
    }
  }
  return problems;
}

/**
 * Builds dist/bundle/ afresh from dist/src (tsc must have run); throws with every problem found.
 * twoByte: files that keep non-ASCII characters outside comments (V8 holds them at two bytes a character).
 */
export async function buildBundle(root: string): Promise<{ metafiles: Metafile[]; twoByte: string[] }> {
  // Chunk names carry a content hash: without this, every build would leave its old chunks behind.
  rmSync(join(root, BUNDLE_DIR), { recursive: true, force: true });
  const results = await Promise.all([
    build(bundleOptions(root, 'chartpilot', CLI_ENTRY, true)),
    build(bundleOptions(root, 'postrender', POSTRENDER_ENTRY, false)),
  ]);
  const problems = results.flatMap((r) => checkBundle(r.metafile, (file) => readFileSync(join(root, file), 'utf8')));
  if (problems.length > 0) throw new Error(`the bundle would break at run time:\n  ${problems.join('\n  ')}`);
  const twoByte = asciiOutputs(root, results.map((r) => r.metafile));
  return { metafiles: results.map((r) => r.metafile), twoByte };
}

/**
 * Rewrites each output file whose only non-ASCII characters are in comments as ASCII (see
 * scripts/ascii-source.ts); returns the files left as they were.
 */
function asciiOutputs(root: string, metafiles: readonly Metafile[]): string[] {
  const left: string[] = [];
  for (const file of metafiles.flatMap((m) => Object.keys(m.outputs)).filter((f) => f.endsWith('.js'))) {
    const path = join(root, file);
    const code = readFileSync(path, 'utf8');
    const ascii = asciiSource(code);
    if (ascii === undefined) left.push(file);
    else if (ascii !== code) writeFileSync(path, ascii);
  }
  return left;
}
