import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { findHelm, findWarmHelm } from '../../../src/helm/find-helm.js';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '../../../..');

function tempDir(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'find-helm-'));
  t.after(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

function fakeHelm(path: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, '#!/bin/sh\necho fake\n');
  chmodSync(path, 0o755);
}

describe('findHelm', () => {
  it('HELM_BIN wins, then helm on PATH, then the chartpilot cache', async (t) => {
    const dir = tempDir(t);
    fakeHelm(join(dir, 'path-bin', 'helm'));
    fakeHelm(join(dir, 'cache', 'bin', 'helm'));
    const env = { PATH: join(dir, 'path-bin'), CHARTPILOT_CACHE: join(dir, 'cache') };
    assert.deepEqual(await findHelm({ ...env, HELM_BIN: '/opt/helm' }, dir), { bin: '/opt/helm', source: 'HELM_BIN' });
    assert.deepEqual(await findHelm(env, dir), { bin: 'helm', source: 'PATH' });
    assert.deepEqual(await findHelm({ ...env, PATH: '/nonexistent' }, dir), { bin: join(dir, 'cache', 'bin', 'helm'), source: 'cache' });
    assert.deepEqual(await findHelm({ PATH: '', XDG_CACHE_HOME: dir }, dir), undefined, 'no cache, no node_modules: none');
  });

  it('chartpilot-helm (helm that also runs warm) comes before the cache\'s plain helm; findWarmHelm finds only it', async (t) => {
    const dir = tempDir(t);
    fakeHelm(join(dir, 'cache', 'bin', 'helm'));
    const env = { PATH: join(dir, 'path-bin'), CHARTPILOT_CACHE: join(dir, 'cache') };
    assert.equal(await findWarmHelm(env), undefined);
    fakeHelm(join(dir, 'cache', 'bin', 'chartpilot-helm'));
    assert.deepEqual(await findHelm(env, dir), { bin: join(dir, 'cache', 'bin', 'chartpilot-helm'), source: 'cache' });
    assert.deepEqual(await findWarmHelm(env), { bin: join(dir, 'cache', 'bin', 'chartpilot-helm'), source: 'cache' });
    fakeHelm(join(dir, 'path-bin', 'chartpilot-helm'));
    assert.deepEqual(await findWarmHelm(env), { bin: join(dir, 'path-bin', 'chartpilot-helm'), source: 'PATH' });
    fakeHelm(join(dir, 'path-bin', 'helm'));
    assert.deepEqual(await findHelm(env, dir), { bin: 'helm', source: 'PATH' }, 'helm on PATH still wins for the commands that run plain helm');
  });

  it("unpacks the npm layer's helm into the cache once, and it runs", async (t) => {
    const dir = tempDir(t);
    const env = { PATH: '', CHARTPILOT_CACHE: join(dir, 'cache') };
    const found = await findHelm(env, REPO);
    assert.deepEqual(found, { bin: join(dir, 'cache', 'npm-layer', 'helm'), source: 'npm-layer' });
    assert.equal(execFileSync(found.bin, ['version', '--template', '{{.Version}}'], { encoding: 'utf8' }), 'v4.1.4');
    assert.deepEqual(await findHelm(env, '/nonexistent'), found, 'found again without the package');
  });
});
