/**
 * bin/chartpilot.js, as every user, test and the image start chartpilot: the bundle `npm run build`
 * made before these tests, and what the launcher does without one.
 */
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { execa } from 'execa';
import { repoRoot } from '../../../devcluster/paths.js';

const ROOT = repoRoot();
const BIN = join(ROOT, 'bin', 'chartpilot.js');
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

describe('the built bundle, through bin/chartpilot.js', () => {
  it('runs from dist/bundle/ with nothing on stderr, and finds package.json from there', async () => {
    assert.ok(existsSync(join(ROOT, 'dist', 'bundle', 'chartpilot.js')), 'npm run build makes dist/bundle/chartpilot.js');
    const r = await execa(process.execPath, [BIN, 'version'], { reject: false });
    assert.equal(r.exitCode, 0, r.stderr);
    assert.equal(r.stdout, `chartpilot ${VERSION}`);
    assert.equal(r.stderr, '');
  });

  it('loads what the CLI imports on demand (generate) from its chunks', async () => {
    const r = await execa(process.execPath, [BIN, 'generate', 'crd', '--watches-file', join(ROOT, 'watches.yaml')], { reject: false });
    assert.equal(r.exitCode, 0, r.stderr);
    assert.match(r.stdout, /^kind: CustomResourceDefinition$/m);
  });

  const work = mkdtempSync(join(tmpdir(), 'chartpilot-bin-'));
  after(() => { rmSync(work, { recursive: true, force: true }); });

  it('makes its self-signed metrics certificate (x509 code from an on-demand chunk) before it finds no API server', async () => {
    // Servers start before the API server is asked for, so an unreachable one still lets the
    // certificate be made: the image test found the bundle failing exactly here.
    const kubeconfig = join(work, 'kubeconfig');
    writeFileSync(kubeconfig, `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:9", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`);
    const r = await execa(process.execPath, [BIN, 'run', '--watches-file', join(ROOT, 'watches.yaml'), '--helm-mode', 'cli', '--metrics-secure',
      '--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '127.0.0.1:0'], { env: { KUBECONFIG: kubeconfig, HELM_BIN: '/bin/false' }, reject: false, timeout: 60_000 });
    assert.match(r.stdout, /"scheme":"https","certificate":"self-signed".*"msg":"metrics server listening"/u, `${r.stdout}\n${r.stderr}`);
    assert.equal(r.exitCode, 3, r.stderr);
    assert.match(r.stderr, /^error: cannot reach the Kubernetes API server at https:\/\/127\.0\.0\.1:9/u);
  });

  it("runs a kubeconfig's exec credential plugin (client-node's ExecAuth, from an on-demand chunk)", async () => {
    const plugin = join(work, 'credential.sh');
    const ran = join(work, 'credential-ran');
    writeFileSync(plugin, `#!/bin/sh\ntouch '${ran}'\necho '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"t"}}'\n`, { mode: 0o755 });
    const kubeconfig = join(work, 'exec-kubeconfig');
    writeFileSync(kubeconfig, `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:9", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: '${plugin}', interactiveMode: Never}}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`);
    const r = await execa(process.execPath, [BIN, 'run', '--watches-file', join(ROOT, 'watches.yaml'), '--helm-mode', 'cli',
      '--metrics-bind-address', '0', '--health-probe-bind-address', '0'], { env: { KUBECONFIG: kubeconfig, HELM_BIN: '/bin/false' }, reject: false, timeout: 60_000 });
    assert.equal(r.exitCode, 3, r.stderr);
    assert.match(r.stderr, /^error: cannot reach the Kubernetes API server at https:\/\/127\.0\.0\.1:9/u);
    assert.ok(existsSync(ran), 'the credential plugin ran');
  });
  /** A package with this bin/chartpilot.js and tsc's dist/src, with or without a bundle of its own. */
  function layout(name: string, bundle?: string): string {
    const dir = join(work, name);
    mkdirSync(join(dir, 'bin'), { recursive: true });
    mkdirSync(join(dir, 'dist'));
    copyFileSync(BIN, join(dir, 'bin', 'chartpilot.js'));
    symlinkSync(join(ROOT, 'dist', 'src'), join(dir, 'dist', 'src'));
    if (bundle !== undefined) {
      mkdirSync(join(dir, 'dist', 'bundle'));
      writeFileSync(join(dir, 'dist', 'bundle', 'chartpilot.js'), bundle);
    }
    return join(dir, 'bin', 'chartpilot.js');
  }

  it('without a bundle runs tsc\'s dist/src, saying so in one line', async () => {
    const r = await execa(process.execPath, [layout('tsc-only'), 'version'], { reject: false });
    assert.equal(r.exitCode, 0, r.stderr);
    assert.equal(r.stdout, `chartpilot ${VERSION}`);
    assert.equal(r.stderr, 'chartpilot: dist/bundle/chartpilot.js is missing (npm run build makes it): running the unbundled dist/src, slower to start');
  });

  it('with a bundle that fails to load, fails with its error instead of falling back', async () => {
    const r = await execa(process.execPath, [layout('broken', "import 'no-such-package-anywhere';\nexport const main = () => 0;\n"), 'version'], { reject: false });
    assert.notEqual(r.exitCode, 0);
    assert.match(r.stderr, /Cannot find package 'no-such-package-anywhere'/);
    assert.doesNotMatch(r.stderr, /running the unbundled/);
  });
});
