import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { layoutOf, packageLayout, packageRoot, packageVersion } from '../../../src/lib/package-root.js';
import { repoRoot } from '../../../devcluster/paths.js';

describe('package root', () => {
  it("tells tsc's layout from this module's own path", () => {
    assert.deepEqual(layoutOf('/opt/cp/dist/src/lib/package-root.js'), { root: '/opt/cp', bundled: false });
  });

  it('tells the bundle layout from any file directly in dist/bundle/ (the entry or the chunk holding this module)', () => {
    assert.deepEqual(layoutOf('/opt/chartpilot/dist/bundle/chartpilot.js'), { root: '/opt/chartpilot', bundled: true });
    assert.deepEqual(layoutOf('/home/me/cp/dist/bundle/chunk-ABC123.js'), { root: '/home/me/cp', bundled: true });
  });

  it('refuses any other place rather than guessing a root', () => {
    for (const file of ['/opt/cp/dist/chartpilot.js', '/opt/cp/dist/bundle/sub/chunk.js', '/opt/cp/dist/src/cli/main.js', '/opt/cp/src/lib/package-root.ts']) {
      assert.throws(() => layoutOf(file), new RegExp(`runs from ${file.replace(/\./g, '\\.')}, which is neither`), file);
    }
  });

  it("in these tests' process (tsc's layout) is the repository, and its version is package.json's", () => {
    assert.deepEqual(packageLayout(), { root: repoRoot(), bundled: false });
    assert.equal(packageRoot(), repoRoot());
    const pkg = JSON.parse(readFileSync(join(repoRoot(), 'package.json'), 'utf8')) as { version: string };
    assert.equal(packageVersion(), pkg.version);
  });
});
