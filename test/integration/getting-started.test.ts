/**
 * The getting-started pages, run as a reader runs them: every ```sh block of docs/getting-started/
 * helm.md and ansible.md, in page order, in an empty directory, against the test control plane
 * (doc-commands.ts says how a page marks its second terminal and its Ctrl-C). The reader's setup
 * (docs/getting-started/README.md, ```console blocks: a cluster, the CLI on PATH) is this test's:
 * KUBECONFIG names the test control plane; PATH has Node 24, `chartpilot` (a symlink to
 * bin/chartpilot.js, as `npm install -g` and `npm link` make one) and the control plane's bin
 * directory (kubectl, helm), as the page's `export PATH=…/chartpilot/bin:$PATH` gives a reader.
 * A command that fails or a `kubectl wait` that times out fails the test, as does an operator
 * that does not exit 0 on Ctrl-C.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { execa } from 'execa';
import { repoRoot } from '../../devcluster/paths.js';
import { docCommandBlocks, docCommandScript } from './doc-commands.js';
import { testCluster, type TestCluster } from './harness.js';

const c = await testCluster();
const PAGE_TIMEOUT_MS = 8 * 60_000;
const dirs: string[] = [];
after(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

/** The environment of a reader who did what "Before you start" says, in an empty directory. */
function readerEnv(cluster: TestCluster, home: string): Record<string, string> {
  const bin = join(home, 'bin');
  mkdirSync(bin);
  symlinkSync(join(repoRoot(), 'bin/chartpilot.js'), join(bin, 'chartpilot'));
  const env = { ...cluster.env };
  // A reader sets none of these: chartpilot must find helm on PATH and the Ansible runtime by itself.
  delete env.HELM_BIN;
  delete env.CHARTPILOT_ANSIBLE_RUNTIME;
  return {
    ...env,
    KUBECONFIG: cluster.kubeconfig,
    PATH: [bin, dirname(process.execPath), cluster.binDir, env.PATH ?? ''].join(delimiter),
    SECOND_TERMINAL_LOG: join(home, 'second-terminal.log'),
  };
}

/**
 * What a page that failed half-way may leave: its kinds' CRs (their finalizers dropped, as the
 * operator that would remove them may be gone), the CRDs and the operator's namespace.
 */
async function cleanUp(cluster: TestCluster, project: string): Promise<void> {
  const deploy = join(project, 'deploy');
  let crds: string[] = [];
  try { crds = readdirSync(join(deploy, 'crds')).map((f) => join(deploy, 'crds', f)); } catch { return; }
  for (const crd of crds) {
    const name = /^\s*name:\s*(\S+)\s*$/mu.exec(readFileSync(crd, 'utf8'))?.[1];
    if (name === undefined) continue;
    const listed = await cluster.kubectl(['get', name, '-A', '-o', 'jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}{"\\n"}{end}'], { allowFail: true });
    for (const cr of listed.stdout.split('\n').filter((l) => l.includes('/'))) {
      const [ns = '', n = ''] = cr.split('/');
      await cluster.kubectl(['patch', name, n, '-n', ns, '--type', 'merge', '-p', '{"metadata":{"finalizers":null}}'], { allowFail: true });
    }
    await cluster.kubectl(['delete', '-f', crd, '--ignore-not-found', '--wait=false'], { allowFail: true });
  }
  await cluster.kubectl(['delete', '-f', join(deploy, 'namespace.yaml'), '--ignore-not-found', '--wait=false'], { allowFail: true });
}

async function runPage(page: string, project: string): Promise<void> {
  const file = join(repoRoot(), page);
  const script = docCommandScript(page, docCommandBlocks(readFileSync(file, 'utf8')));
  const home = mkdtempSync(join(tmpdir(), 'getting-started-'));
  dirs.push(home);
  const cwd = join(home, 'reader');
  mkdirSync(cwd);
  const env = readerEnv(c, home);
  const started = Date.now();
  const r = await execa('bash', ['-c', script], { cwd, env, extendEnv: false, reject: false, all: true, timeout: PAGE_TIMEOUT_MS - 30_000 });
  let operatorLog = '';
  try { operatorLog = readFileSync(env.SECOND_TERMINAL_LOG ?? '', 'utf8'); } catch { /* never started */ }
  if (r.exitCode !== 0) {
    await cleanUp(c, join(cwd, project));
    assert.fail(
      `${page}: a command failed (exit ${String(r.exitCode)}${r.timedOut ? ', timed out' : ''}); the reader's terminal:\n${r.all.slice(-6000)}\n` +
        `--- the second terminal (last 40 lines):\n${operatorLog.split('\n').slice(-40).join('\n')}`,
    );
  }
  process.stderr.write(`${page}: every command ran in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  // The operator of the second terminal ran, served the page's resources and stopped as a reader's does.
  assert.match(operatorLog, /"msg":"stopped"/u, `the operator's log does not end with "stopped":\n${operatorLog.slice(-3000)}`);
}

describe('the getting-started pages, run as a reader runs them', () => {
  it('docs/getting-started/helm.md: a chart to a running operator, a Guestbook created, changed, broken, fixed and deleted', { timeout: PAGE_TIMEOUT_MS }, async () => {
    await runPage('docs/getting-started/helm.md', 'guestbook-operator');
  });

  it('docs/getting-started/ansible.md: a role to a running operator, a Greeting created, changed and deleted', { timeout: PAGE_TIMEOUT_MS }, async () => {
    await runPage('docs/getting-started/ansible.md', 'greeting-operator');
  });
});
