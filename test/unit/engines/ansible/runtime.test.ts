import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { AnsibleRuntimeMissingError, findAnsibleRuntime, runtimeEnv } from '../../../../src/engines/ansible/runtime.js';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '../../../../..');
const HASH = '0123456789abcdef';

function tempDir(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'ansible-runtime-'));
  t.after(() => { rmSync(dir, { recursive: true, force: true }); });
  return dir;
}

function executable(path: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, '#!/bin/sh\nexit 0\n');
  chmodSync(path, 0o755);
}

/** A runtime directory as the script leaves it; complete=false leaves out runtime.json (a half build). */
function fakeRuntime(dir: string, hash: string, opts: { complete?: boolean; mtime?: Date } = {}): string {
  for (const bin of ['python', 'ansible-runner', 'ansible-playbook']) executable(join(dir, 'venv', 'bin', bin));
  mkdirSync(join(dir, 'collections', 'ansible_collections'), { recursive: true });
  if (opts.complete !== false) {
    const json = join(dir, 'runtime.json');
    writeFileSync(json, JSON.stringify({
      hash, python: '3.11.2', ansibleCore: '2.19.14', ansibleRunner: '2.4.3', kubernetes: '35.0.0',
      collections: { 'kubernetes.core': '6.2.0', 'operator_sdk.util': '0.5.0' },
    }));
    if (opts.mtime !== undefined) utimesSync(json, opts.mtime, opts.mtime);
  }
  return dir;
}

/** A package root whose devcluster/ansible-runtime.sh prints `hash` for --hash, as the real one does. */
function fakeCheckout(root: string, hash: string): string {
  const script = join(root, 'devcluster', 'ansible-runtime.sh');
  mkdirSync(dirname(script), { recursive: true });
  writeFileSync(script, `[ "$1" = --hash ] && echo ${hash}\n`);
  return root;
}

describe('findAnsibleRuntime', () => {
  it('CHARTPILOT_ANSIBLE_RUNTIME wins over the image and the cache, and names its parts', async (t) => {
    const dir = tempDir(t);
    const own = fakeRuntime(join(dir, 'own'), 'aaaaaaaaaaaaaaaa');
    const image = fakeRuntime(join(dir, 'image'), 'bbbbbbbbbbbbbbbb');
    fakeRuntime(join(dir, 'cache', `ansible-${HASH}`), HASH);
    const packageRoot = fakeCheckout(join(dir, 'checkout'), HASH);
    const found = await findAnsibleRuntime({ CHARTPILOT_ANSIBLE_RUNTIME: own, CHARTPILOT_CACHE: join(dir, 'cache') }, { packageRoot, imageDir: image });
    assert.equal(found.source, 'CHARTPILOT_ANSIBLE_RUNTIME');
    assert.equal(found.dir, own);
    assert.equal(found.python, join(own, 'venv', 'bin', 'python'));
    assert.equal(found.ansibleRunner, join(own, 'venv', 'bin', 'ansible-runner'));
    assert.equal(found.binDir, join(own, 'venv', 'bin'));
    assert.deepEqual(found.collectionsPath, [join(own, 'collections')]);
    assert.equal(found.versions.ansibleCore, '2.19.14');
    assert.equal(found.versions.collections['kubernetes.core'], '6.2.0');

    const fromImage = await findAnsibleRuntime({ CHARTPILOT_CACHE: join(dir, 'cache') }, { packageRoot, imageDir: image });
    assert.equal(fromImage.source, 'image');
    assert.equal(fromImage.dir, image);
  });

  it('refuses a CHARTPILOT_ANSIBLE_RUNTIME that is not a runtime, in one line naming the variable', async (t) => {
    const dir = tempDir(t);
    const half = fakeRuntime(join(dir, 'half'), HASH, { complete: false });
    await assert.rejects(findAnsibleRuntime({ CHARTPILOT_ANSIBLE_RUNTIME: half }, { imageDir: join(dir, 'none') }), (err: Error) => {
      assert.ok(err instanceof AnsibleRuntimeMissingError);
      assert.match(err.message, /^CHARTPILOT_ANSIBLE_RUNTIME=.*half is not an Ansible runtime \(no runtime\.json: missing or half built\)/);
      assert.doesNotMatch(err.message, /\n/);
      return true;
    });
    const noRunner = fakeRuntime(join(dir, 'norunner'), HASH);
    rmSync(join(noRunner, 'venv', 'bin', 'ansible-runner'));
    await assert.rejects(findAnsibleRuntime({ CHARTPILOT_ANSIBLE_RUNTIME: noRunner }, { imageDir: join(dir, 'none') }), /ansible-runner is missing/);
  });

  it("in a checkout, takes the cache's runtime of this checkout's inputs hash, never another or a half-built one", async (t) => {
    const dir = tempDir(t);
    const cache = join(dir, 'cache');
    const packageRoot = fakeCheckout(join(dir, 'checkout'), HASH);
    const env = { CHARTPILOT_CACHE: cache };
    const opts = { packageRoot, imageDir: join(dir, 'no-image') };
    fakeRuntime(join(cache, 'ansible-ffffffffffffffff'), 'ffffffffffffffff');
    fakeRuntime(join(cache, `ansible-${HASH}`), HASH, { complete: false });
    await assert.rejects(findAnsibleRuntime(env, opts), (err: Error) => {
      assert.ok(err instanceof AnsibleRuntimeMissingError);
      assert.equal(err.message, `no Ansible runtime for this checkout in ${join(cache, `ansible-${HASH}`)}: run npm run cluster:provision (or bash devcluster/ansible-runtime.sh)`);
      return true;
    });
    fakeRuntime(join(cache, `ansible-${HASH}`), HASH);
    const found = await findAnsibleRuntime(env, opts);
    assert.equal(found.source, 'cache');
    assert.equal(found.dir, join(cache, `ansible-${HASH}`));
    // XDG_CACHE_HOME without CHARTPILOT_CACHE: <XDG_CACHE_HOME>/chartpilot, as provision.sh uses.
    fakeRuntime(join(dir, 'xdg', 'chartpilot', `ansible-${HASH}`), HASH);
    assert.equal((await findAnsibleRuntime({ XDG_CACHE_HOME: join(dir, 'xdg') }, opts)).dir, join(dir, 'xdg', 'chartpilot', `ansible-${HASH}`));
  });

  it('without the script (an installed package), takes the newest complete runtime of the cache', async (t) => {
    const dir = tempDir(t);
    const cache = join(dir, 'cache');
    const opts = { packageRoot: join(dir, 'installed'), imageDir: join(dir, 'no-image') };
    await assert.rejects(findAnsibleRuntime({ CHARTPILOT_CACHE: cache }, opts), (err: Error) => {
      assert.equal(err.message, `no Ansible runtime (CHARTPILOT_ANSIBLE_RUNTIME unset, none in ${opts.imageDir} or ${cache}): `
        + 'run npm run cluster:provision (or bash devcluster/ansible-runtime.sh) in a chartpilot checkout, or use the chartpilot-ansible image');
      return true;
    });
    fakeRuntime(join(cache, 'ansible-1111111111111111'), '1111111111111111', { mtime: new Date('2026-01-01T00:00:00Z') });
    fakeRuntime(join(cache, 'ansible-2222222222222222'), '2222222222222222', { mtime: new Date('2026-02-01T00:00:00Z') });
    fakeRuntime(join(cache, 'ansible-3333333333333333'), '3333333333333333', { complete: false });
    assert.equal((await findAnsibleRuntime({ CHARTPILOT_CACHE: cache }, opts)).dir, join(cache, 'ansible-2222222222222222'));
  });

  it("the real script's --hash is stable and follows its inputs", () => {
    const script = join(REPO, 'devcluster', 'ansible-runtime.sh');
    const hash = (env: Record<string, string> = {}): string =>
      execFileSync('bash', [script, '--hash'], { env: { ...process.env, ...env }, encoding: 'utf8' }).trim();
    const first = hash();
    assert.match(first, /^[0-9a-f]{16}$/);
    assert.equal(hash(), first);
    // The interpreter is an input: another Python is another runtime.
    assert.notEqual(hash({ CHARTPILOT_ANSIBLE_PYTHON: '/nonexistent/python3' }), first);
  });
});

describe('runtimeEnv', () => {
  it("puts the venv first on PATH and the runtime's collections on ANSIBLE_COLLECTIONS_PATH", async (t) => {
    const dir = tempDir(t);
    const runtime = await findAnsibleRuntime({ CHARTPILOT_ANSIBLE_RUNTIME: fakeRuntime(join(dir, 'rt'), HASH) });
    assert.deepEqual(runtimeEnv(runtime, { PATH: '/usr/bin:/bin' }), {
      PATH: `${join(dir, 'rt', 'venv', 'bin')}:/usr/bin:/bin`,
      ANSIBLE_COLLECTIONS_PATH: join(dir, 'rt', 'collections'),
    });
  });
});
