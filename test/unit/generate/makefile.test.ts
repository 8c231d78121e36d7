/**
 * The scaffold's Makefile as a user drives it: `make -n <target>` prints the commands make would
 * run, so each target is checked against the chartpilot and kubectl command lines it stands for.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { execa } from 'execa';
import { projectMakefile } from '../../../src/generate/makefile.js';

const dir = mkdtempSync(join(tmpdir(), 'chartpilot-makefile-'));
after(() => { rmSync(dir, { recursive: true, force: true }); });
writeFileSync(join(dir, 'Makefile'), projectMakefile({ name: 'webapp-operator', namespace: 'webapp-operator-system', image: 'registry.example:5000/team/webapp-operator:0.1.0' }));

async function dryRun(...args: string[]): Promise<{ lines: string[]; exitCode: number }> {
  const r = await execa('make', ['-n', ...args], { cwd: dir, reject: false, env: { ...process.env, MAKEFLAGS: '' } });
  return { lines: r.stdout.split('\n').filter((l) => l !== ''), exitCode: r.exitCode ?? -1 };
}

describe('the scaffold’s Makefile', () => {
  it('make install run: the CRDs and namespace, then the operator here with its namespace and readable logs', async () => {
    const { lines, exitCode } = await dryRun('run');
    assert.equal(exitCode, 0);
    assert.deepEqual(lines, [
      'kubectl create namespace webapp-operator-system --dry-run=client -o yaml | kubectl apply -f -',
      'kubectl apply -f deploy/crds/',
      'POD_NAMESPACE=webapp-operator-system chartpilot run --watches-file watches.yaml --log-format console',
    ]);
  });

  it('generate and bundle pass the names new chose, and the image IMG (a registry port is not a tag)', async () => {
    assert.deepEqual((await dryRun('generate')).lines, [
      'chartpilot generate all --watches-file watches.yaml --output-dir deploy --name webapp-operator --namespace webapp-operator-system --service-account webapp-operator --image registry.example:5000/team/webapp-operator:0.1.0',
    ]);
    assert.deepEqual((await dryRun('generate', 'IMG=other:2')).lines.at(-1)?.endsWith('--image other:2'), true);
    const bundle = await dryRun('bundle', 'VERSION=0.2.0');
    assert.match(bundle.lines.at(-1) ?? '', /generate bundle .* --version 0\.2\.0 --image registry\.example:5000\/team\/webapp-operator:0\.1\.0$/);
  });

  it('bundle without VERSION says how to give it, and fails', async () => {
    const r = await execa('make', ['bundle', 'CHARTPILOT=false'], { cwd: dir, reject: false, env: { ...process.env, MAKEFLAGS: '' } });
    assert.notEqual(r.exitCode, 0);
    assert.match(r.stdout, /make bundle VERSION=<semver>/);
  });

  it('help lists every target with what it does', async () => {
    const r = await execa('make', ['-s', 'help'], { cwd: dir, reject: false, env: { ...process.env, MAKEFLAGS: '' } });
    assert.equal(r.exitCode, 0, r.stderr);
    for (const target of ['install', 'uninstall', 'run', 'deploy', 'undeploy', 'generate', 'bundle', 'docker-build', 'docker-push']) {
      assert.match(r.stdout, new RegExp(`^${target}\\t\\S`, 'm'), target);
    }
  });
});
