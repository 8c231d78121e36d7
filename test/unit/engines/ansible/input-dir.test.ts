/** The private input directory of a run and the rotation of its artifacts, on a real disk. */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, readlink, rm, stat, symlink, utimes } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { newIdent, rotateArtifacts, shellQuote, writeInputDir } from '../../../../src/engines/ansible/input-dir.js';
import { runnerArgs, runEnv } from '../../../../src/engines/ansible/runner.js';

const work = await mkdtemp(join(tmpdir(), 'chartpilot-input-dir-test-'));
after(async () => {
  await rm(work, { recursive: true, force: true });
});

describe('input directory', () => {
  it('writes ansible-runner’s layout, private to the user, and removes it', async () => {
    const base = join(work, 'base');
    const input = await writeInputDir({ extraVars: { a: 1, s: 'x y' }, kubeconfig: 'kc-text', python: '/venv/bin/python', extraArgs: ['--tags', 'a b', "it's"] }, base);
    assert.equal((await stat(base)).mode & 0o777, 0o700);
    assert.equal((await stat(input.dir)).mode & 0o777, 0o700);
    assert.deepEqual(JSON.parse(await readFile(join(input.dir, 'env/extravars'), 'utf8')), { a: 1, s: 'x y' });
    assert.equal(await readFile(join(input.dir, 'env/cmdline'), 'utf8'), `--tags 'a b' 'it'"'"'s'`);
    assert.equal(await readFile(join(input.dir, 'inventory/hosts'), 'utf8'), 'localhost ansible_connection=local ansible_python_interpreter=/venv/bin/python\n');
    assert.equal(await readFile(input.kubeconfigPath, 'utf8'), 'kc-text');
    for (const f of ['env/extravars', 'kubeconfig', 'inventory/hosts']) assert.equal((await stat(join(input.dir, f))).mode & 0o777, 0o600, f);
    await input.remove();
    assert.deepEqual(await readdir(base), []);
  });

  it('refuses a base that is a link, and makes an existing base private', async () => {
    const real = join(work, 'real');
    await mkdir(real, { mode: 0o755 });
    const link = join(work, 'link');
    await symlink(real, link);
    await assert.rejects(writeInputDir({ extraVars: {}, kubeconfig: '', python: 'python3', extraArgs: [] }, link), /is not a directory/);
    const input = await writeInputDir({ extraVars: {}, kubeconfig: '', python: 'python3', extraArgs: [] }, real);
    assert.equal((await stat(real)).mode & 0o777, 0o700);
    await input.remove();
  });

  it('writes no cmdline without --ansible-args', async () => {
    const input = await writeInputDir({ extraVars: {}, kubeconfig: '', python: 'python3', extraArgs: [] }, join(work, 'base2'));
    assert.deepEqual((await readdir(join(input.dir, 'env'))).sort(), ['extravars']);
    await input.remove();
  });

  it('quotes arguments as a shell would', () => {
    assert.equal(shellQuote('--check'), '--check');
    assert.equal(shellQuote('a=b,c:d/e'), 'a=b,c:d/e');
    assert.equal(shellQuote(''), "''");
    assert.equal(shellQuote('$HOME'), "'$HOME'");
  });

  it('makes idents that sort by time and differ', () => {
    const a = newIdent(new Date('2026-01-02T03:04:05.678Z'));
    const b = newIdent(new Date('2026-01-02T03:04:06.000Z'));
    assert.match(a, /^20260102T030405678Z-[0-9a-f]{6}$/);
    assert.ok(a < b);
    assert.notEqual(newIdent(), newIdent());
  });
});

describe('artifacts rotation', () => {
  async function runs(dir: string, names: string[], from = 0): Promise<void> {
    for (const [i, n] of names.entries()) {
      await mkdir(join(dir, n), { recursive: true });
      const t = new Date(Date.UTC(2026, 0, 1, 0, 0, from + i));
      await utimes(join(dir, n), t, t);
    }
  }

  it('keeps the newest runs and points latest at the current one', async () => {
    const dir = join(work, 'rot1');
    await runs(dir, ['r1', 'r2', 'r3', 'r4']);
    await rotateArtifacts(dir, 2, 'r4');
    assert.deepEqual((await readdir(dir)).sort(), ['latest', 'r3', 'r4']);
    assert.equal(await readlink(join(dir, 'latest')), 'r4');
    await runs(dir, ['r5'], 10);
    await rotateArtifacts(dir, 2, 'r5');
    assert.deepEqual((await readdir(dir)).sort(), ['latest', 'r4', 'r5']);
    assert.equal(await readlink(join(dir, 'latest')), 'r5');
    // The current run stays even when its time is older than the others'.
    await runs(dir, ['r0'], -5);
    await rotateArtifacts(dir, 2, 'r0');
    assert.deepEqual((await readdir(dir)).sort(), ['latest', 'r0', 'r5']);
  });

  it('keeps everything with 0', async () => {
    const dir = join(work, 'rot2');
    await runs(dir, ['a', 'b', 'c']);
    await rotateArtifacts(dir, 0);
    assert.deepEqual((await readdir(dir)).sort(), ['a', 'b', 'c']);
  });
});

describe('command and environment', () => {
  const base = { inputDir: '/in', ident: 'id1', artifactsDir: '/art', rolesPath: ['/extra/roles'], verbosity: 0, skipFacts: false };

  it('runs a role by name from its parent directory, on localhost', () => {
    assert.deepEqual(runnerArgs({ ...base, runnable: { role: '/opt/ansible/roles/memcached' }, verbosity: 3 }), [
      'run', '/in', '--json', '-i', 'id1', '--artifact-dir', '/art',
      '--role', 'memcached', '--roles-path', '/opt/ansible/roles:/extra/roles', '--hosts', 'localhost', '-vvv',
    ]);
    assert.ok(runnerArgs({ ...base, runnable: { role: '/r/x' }, skipFacts: true }).includes('--role-skip-facts'));
  });

  it('runs a playbook where it is', () => {
    assert.deepEqual(runnerArgs({ ...base, runnable: { playbook: '/opt/ansible/playbooks/site.yml' }, verbosity: 9 }).slice(7), [
      '--project-dir', '/opt/ansible/playbooks', '-p', 'site.yml', '-vvvvvvv',
    ]);
  });

  it('replaces the operator’s API credentials with the run’s and puts the runtime first', () => {
    const env = runEnv(
      { PATH: '/usr/bin', KUBECONFIG: '/operator/kc', K8S_AUTH_API_KEY: 'operator-token', RELATED_IMAGE_DB: 'db:1', ANSIBLE_ROLES_PATH: '/env/roles' },
      { runtime: { ansibleRunner: '/rt/venv/bin/ansible-runner', python: '/rt/venv/bin/python', collectionsPath: ['/rt/collections'] }, collectionsPath: ['/mine'], rolesPath: ['/flag/roles'] },
      '/in',
      '/in/kubeconfig',
    );
    assert.equal(env['K8S_AUTH_API_KEY'], undefined);
    assert.equal(env['KUBECONFIG'], '/in/kubeconfig');
    assert.equal(env['K8S_AUTH_KUBECONFIG'], '/in/kubeconfig');
    assert.equal(env['RELATED_IMAGE_DB'], 'db:1');
    assert.equal(env['PATH'], '/rt/venv/bin:/usr/bin');
    assert.equal(env['ANSIBLE_COLLECTIONS_PATH'], '/mine:/rt/collections');
    assert.equal(env['ANSIBLE_ROLES_PATH'], '/flag/roles:/env/roles');
    assert.equal(env['ANSIBLE_LOCAL_TEMP'], '/in/tmp');
    assert.equal(env['TMPDIR'], '/in/tmp', "Python's temporary files (AnsiballZ payloads) go with the input directory");
  });

  it("passes an allow-list of the operator's environment, never its API access or other secrets", () => {
    const operator = {
      PATH: '/usr/bin',
      HOME: '/home/op',
      LC_ALL: 'C.UTF-8',
      HTTPS_PROXY: 'http://proxy:3128',
      ANSIBLE_GATHERING: 'explicit',
      RELATED_IMAGE_DB: 'db:1',
      WATCH_NAMESPACE: 'a,b',
      KUBERNETES_SERVICE_HOST: '10.0.0.1',
      KUBERNETES_SERVICE_PORT: '443',
      CHARTPILOT_SEAL_KEY: 'k',
      HELM_KUBETOKEN: 't',
      AWS_SECRET_ACCESS_KEY: 's',
      PYTHONPATH: '/evil',
      LD_PRELOAD: '/evil.so',
    };
    const env = runEnv(operator, { runtime: { ansibleRunner: '/rt/bin/ansible-runner', python: '/rt/bin/python', collectionsPath: [] }, collectionsPath: [], rolesPath: [] }, '/in', '/in/kubeconfig');
    for (const k of ['HOME', 'LC_ALL', 'HTTPS_PROXY', 'ANSIBLE_GATHERING', 'RELATED_IMAGE_DB', 'WATCH_NAMESPACE'] as const) assert.equal(env[k], operator[k], k);
    for (const k of ['KUBERNETES_SERVICE_HOST', 'KUBERNETES_SERVICE_PORT', 'CHARTPILOT_SEAL_KEY', 'HELM_KUBETOKEN', 'AWS_SECRET_ACCESS_KEY', 'PYTHONPATH', 'LD_PRELOAD']) {
      assert.equal(env[k], undefined, k);
    }
  });
});
