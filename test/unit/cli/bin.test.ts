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

  it('`run` hands a command given first over to it (the image runs `chartpilot run` plus the Deployment args)', async () => {
    // Earlier chartpilot Deployments' `args: [run, ...]` and `podman run <image> version|generate ...`.
    const version = await execa(process.execPath, [BIN, 'run', 'version'], { reject: false });
    assert.equal(version.exitCode, 0, version.stderr);
    assert.equal(version.stdout, `chartpilot ${VERSION}`);
    const crd = await execa(process.execPath, [BIN, 'run', 'generate', 'crd', '--watches-file', join(ROOT, 'watches.yaml')], { reject: false });
    assert.equal(crd.exitCode, 0, crd.stderr);
    assert.match(crd.stdout, /^kind: CustomResourceDefinition$/m);
    const help = await execa(process.execPath, [BIN, 'run', '--help'], { reject: false });
    assert.equal(help.exitCode, 0, help.stderr);
    assert.match(help.stdout, /--watches-file <path>/u);
  });

  it('`run` without --watches-file and no watches file anywhere exits 2 naming where it looked', async () => {
    const empty = join(work, 'empty');
    mkdirSync(empty, { recursive: true });
    const r = await execa(process.execPath, [BIN, 'run', '--leader-elect'], { reject: false, cwd: empty, env: { HOME: join(work, 'home') } });
    assert.equal(r.exitCode, 2, r.stderr);
    assert.equal(r.stderr.trim(), `error: no watches file: looked for ${join(empty, 'watches.yaml')}, ${join(work, 'home', 'watches.yaml')}, /opt/chartpilot/watches.yaml; give its path with --watches-file=<path> (operator-sdk images: COPY watches.yaml \${HOME}/watches.yaml with WORKDIR \${HOME})`);
  });

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
      '--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '127.0.0.1:0'], { env: { KUBECONFIG: kubeconfig, HELM_BIN: '/bin/false', POD_NAMESPACE: 'chartpilot-system' }, reject: false, timeout: 60_000 });
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
      '--metrics-bind-address', '0', '--health-probe-bind-address', '0'], { env: { KUBECONFIG: kubeconfig, HELM_BIN: '/bin/false', POD_NAMESPACE: 'chartpilot-system' }, reject: false, timeout: 60_000 });
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

  it('names every command in its help, and `help <command>` is that command\'s help', async () => {
    const top = await execa(process.execPath, [BIN, 'help'], { reject: false });
    assert.equal(top.exitCode, 0);
    for (const words of ['chartpilot run', 'chartpilot new <dir> --chart', 'chartpilot new --ansible', 'bundle', 'catalog', 'monitoring', 'chartpilot adopt', '--version, -v']) {
      assert.ok(top.stdout.includes(words), `help names ${words}`);
    }
    const run = await execa(process.execPath, [BIN, 'help', 'run'], { reject: false });
    assert.equal(run.exitCode, 0);
    assert.match(run.stdout, /^Usage: chartpilot run \[flags\]/);
    const generate = await execa(process.execPath, [BIN, 'help', 'generate'], { reject: false });
    assert.match(generate.stdout, /^Usage: chartpilot generate <what>/);
    for (const flag of ['-v', '--version', 'version']) {
      const v = await execa(process.execPath, [BIN, flag], { reject: false });
      assert.equal(v.stdout, `chartpilot ${VERSION}`, flag);
    }
    const unknown = await execa(process.execPath, [BIN, 'helm'], { reject: false });
    assert.equal(unknown.exitCode, 2);
    assert.match(unknown.stderr, /unknown command "helm"; the commands are run, new, generate, adopt, version, help/);
  });

  it('writes readable log lines with --log-format console (pino-pretty, from an on-demand chunk)', async () => {
    const r = await execa(process.execPath, [BIN, 'run', '--log-format', 'console', '--watches-file', join(ROOT, 'watches.yaml'), '--health-probe-bind-address=0', '--metrics-bind-address=0'], {
      reject: false,
      env: { KUBECONFIG: join(work, 'missing-kubeconfig'), POD_NAMESPACE: 'default' },
      timeout: 30_000,
    });
    assert.match(r.stdout, /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: file descriptor limit$/m, r.stdout + r.stderr);
    assert.doesNotMatch(r.stdout, /^\{"level"/m, 'no JSON line');
  });

  it('refuses a Node older than 24 in one line, before loading anything', async (t) => {
    // The machine's own node, where it is an older one (Debian's is 20 on these machines).
    const older = ['/usr/bin/node', '/usr/local/bin/node'].find((p) => existsSync(p));
    const version = older === undefined ? undefined : (await execa(older, ['--version'], { reject: false })).stdout.trim();
    if (older === undefined || version === undefined || Number(/^v(\d+)/.exec(version)?.[1] ?? 24) >= 24) {
      t.skip(`no Node older than 24 on this machine to start it with (found ${version ?? 'none'})`);
      return;
    }
    const r = await execa(older, [BIN, '--help'], { reject: false });
    assert.equal(r.exitCode, 3);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, new RegExp(`^chartpilot needs Node\\.js 24 or later; this is ${version.replaceAll('.', '\\.')} `));
    assert.equal(r.stderr.trim().split('\n').length, 1, 'one line');
  });
});
