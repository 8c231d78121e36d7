/** What the bundle's build-time check (scripts/bundler.ts) refuses: what would break only at run time. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Metafile } from 'esbuild';
import { checkBundle, OPTIONAL_EXTERNALS, PATH_USERS } from '../../../scripts/bundler.js';

/** A metafile with one output importing `imports`, and that output's text. */
function bundleOf(imports: { path: string; external: boolean }[], text: string, inputs: Metafile['inputs'] = {}): [Metafile, (file: string) => string] {
  const meta = {
    inputs,
    outputs: { 'dist/bundle/chartpilot.js': { bytes: text.length, inputs: {}, imports: imports.map((i) => ({ ...i, kind: 'require-call' as const })), exports: [] } },
  } as unknown as Metafile;
  return [meta, () => text];
}

describe('the bundle check', () => {
  it("accepts node's built-ins and the optional requires it knows", () => {
    const optional = Object.keys(OPTIONAL_EXTERNALS)[0] ?? '';
    const [meta, read] = bundleOf([{ path: 'node:fs', external: true }, { path: 'zlib', external: true }, { path: optional, external: true }, { path: 'dist/bundle/chunk-A.js', external: false }], '');
    assert.deepEqual(checkBundle(meta, read), []);
  });

  it('refuses a package left to node_modules at run time', () => {
    const [meta, read] = bundleOf([{ path: 'left-pad', external: true }], '');
    const problems = checkBundle(meta, read);
    assert.equal(problems.length, 1);
    assert.match(problems[0] ?? '', /loads "left-pad" from node_modules at run time/);
  });

  it('refuses a module that finds files beside itself, once per module, naming it; the known ones pass', () => {
    const known = Object.keys(PATH_USERS)[0] ?? '';
    const text = [
      '// node_modules/some-lib/index.js',
      'var tpl = readFileSync(join(__dirname, "tpl.html"));',
      'var again = __filename;',
      '// dist/src/generate/own.js',
      'var here = __dirname;',
      `// ${known}`,
      'var worker = join(__dirname, "worker.js");',
      '// node_modules/innocent/index.js',
      'var dirnameLike = my__dirname + "__filenames";',
    ].join('\n');
    const [meta, read] = bundleOf([], text);
    const problems = checkBundle(meta, read);
    assert.deepEqual(problems.map((p) => /: (\S+) uses __dirname/.exec(p)?.[1]), ['node_modules/some-lib/index.js', 'dist/src/generate/own.js']);
  });

  it('refuses an import() of a CommonJS module (esbuild hands another chunk only its default export); of an ES module it is fine', () => {
    const input = (format: 'cjs' | 'esm', imports: { path: string; original: string }[] = []) => ({ bytes: 1, format, imports: imports.map((i) => ({ ...i, kind: 'dynamic-import' as const })) });
    const [meta, read] = bundleOf([], '', {
      'dist/src/observe/certificates.js': input('esm', [{ path: 'node_modules/x509/x509.cjs.js', original: 'x509' }, { path: 'dist/src/observe/x509.js', original: './x509.js' }]),
      'node_modules/x509/x509.cjs.js': input('cjs'),
      'dist/src/observe/x509.js': input('esm'),
    });
    const problems = checkBundle(meta, read);
    assert.equal(problems.length, 1);
    assert.match(problems[0] ?? '', /^dist\/src\/observe\/certificates\.js import\(\)s "x509", a CommonJS module/);
  });
});
