// The Ansible run edge with the real ansible-runner: stats of a run that succeeds, the failed task
// of one that fails (its echoed secret redacted), a hung run stopped at its timeout with no
// process left, an aborted run, a role's kubernetes.core.k8s task creating a ConfigMap through
// the kubeconfig it is given, requeue_after and k8s_status read from the events, Ansible's own
// errors (a YAML error, a missing runtime) as one line naming the fix.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { extraVarsFor } from '../../src/engines/ansible/extra-vars.js';
import { runAnsible, type AnsibleRuntimePaths, type RunOutcome, type RunRequest, type RunnerEvent } from '../../src/engines/ansible/runner.js';
import { ansibleRuntime } from './ansible-run.js';
import { REPO_ROOT } from './fixtures.js';
import { getJson, newNamespace, testCluster } from './harness.js';

const FIXTURES = join(REPO_ROOT, 'test/fixtures/ansible');
const playbook = (name: string): string => join(FIXTURES, 'playbooks', name);

// The project's runtime, found as the operator finds it (provisioned first when missing).
const rt = await ansibleRuntime();
const runtime: AnsibleRuntimePaths = { ansibleRunner: rt.ansibleRunner, python: rt.python, collectionsPath: rt.collectionsPath };
const work = await mkdtemp(join(tmpdir(), 'chartpilot-runner-test-'));
after(async () => {
  await rm(work, { recursive: true, force: true });
});

function request(over: Partial<RunRequest> & Pick<RunRequest, 'runnable'>): RunRequest {
  return {
    runtime,
    extraVars: { ansible_operator_meta: { name: 'cr1', namespace: 'ns1' } },
    kubeconfig: 'apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n',
    verbosity: 0,
    extraArgs: [],
    rolesPath: [],
    collectionsPath: [],
    artifactsDir: join(work, 'artifacts', randomBytes(4).toString('hex')),
    maxArtifacts: 20,
    timeoutMs: 120_000,
    secrets: [],
    runBase: join(work, 'runs'),
    ...over,
  };
}

/** Pids of processes whose command line contains `marker`. */
async function processesWith(marker: string): Promise<number[]> {
  const out: number[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    const cmd = await readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '');
    if (cmd.includes(marker)) out.push(Number(name));
  }
  return out;
}

/** AnsiballZ's module payload directories in the system's temporary directory. */
async function payloadDirsInTmp(): Promise<string[]> {
  return (await readdir(tmpdir())).filter((n) => /^ansible_.+_payload_/u.test(n));
}

async function runDirsLeft(): Promise<string[]> {
  return readdir(join(work, 'runs')).catch(() => []);
}

describe('ansible-runner runs', () => {
  it('reports the stats of a playbook that succeeds, and streams its events', async () => {
    const events: RunnerEvent[] = [];
    const outcome = await runAnsible(request({ runnable: { playbook: playbook('ok.yml') }, onEvent: (e) => events.push(e) }));
    assert.equal(outcome.result, 'successful', outcome.message);
    assert.deepEqual(outcome.stats, { ok: 2, changed: 1, skipped: 1, failures: 0 });
    assert.deepEqual(outcome.failedTasks, []);
    assert.ok(outcome.cpuMs !== undefined && outcome.cpuMs > 100 && outcome.cpuMs < 60_000, `cpuMs ${String(outcome.cpuMs)}`);
    assert.match(outcome.message, /^playbook ok\.yml ran: ok=2 changed=1 skipped=1 failures=0$/);
    assert.ok(events.some((e) => e.event === 'playbook_on_task_start' && e.event_data?.['task'] === 'greet'));
    assert.equal(events.at(-1)?.event, 'playbook_on_stats');
    assert.deepEqual(await runDirsLeft(), [], 'the private input directory is removed after the run');
  });

  it('passes --ansible-args to ansible-playbook (check mode skips the command)', async () => {
    const outcome = await runAnsible(request({ runnable: { playbook: playbook('ok.yml') }, extraArgs: ['--check', '--diff'], verbosity: 2 }));
    assert.equal(outcome.result, 'successful', outcome.message);
    assert.deepEqual(outcome.stats, { ok: 1, changed: 0, skipped: 2, failures: 0 });
  });

  it('names the failed task and redacts the secret it echoes; ignored and rescued failures do not count', async () => {
    const password = `pw-${randomBytes(6).toString('hex')}`;
    const outcome = await runAnsible(
      request({ runnable: { playbook: playbook('fail.yml') }, extraVars: { password }, secrets: [password] }),
    );
    assert.equal(outcome.result, 'failed', outcome.message);
    assert.equal(outcome.stats.failures, 1);
    assert.deepEqual(outcome.failedTasks, [{ task: 'log in to the database', message: 'cannot log in with password <redacted>' }]);
    assert.match(outcome.message, /^playbook fail\.yml failed: task "log in to the database": cannot log in with password <redacted>$/);
    assert.ok(!JSON.stringify(outcome).includes(password));
  });

  it('stops a hung run at its timeout, leaving no process and no temporary file', async () => {
    const payloadsBefore = new Set(await payloadDirsInTmp());
    const marker = `600.${String(Date.now() % 1_000_000)}`;
    const t0 = Date.now();
    const outcome = await runAnsible(
      request({ runnable: { playbook: playbook('hang.yml') }, extraVars: { sleep_marker: marker }, timeoutMs: 6000 }),
    );
    assert.equal(outcome.result, 'timeout', outcome.message);
    assert.match(outcome.message, /did not finish within 6s \(task "wait forever" was running\) and was stopped/);
    assert.ok(Date.now() - t0 < 6000 + 5000 + 5000, `stopped in ${String(Date.now() - t0)} ms`);
    assert.deepEqual(await processesWith(`sleep ${marker}`), []);
    assert.deepEqual(await processesWith(marker), [], 'no ansible-playbook or ansible-runner left');
    assert.deepEqual(await runDirsLeft(), []);
    // The stopped task's module payload went with the run's directory, not into $TMPDIR.
    assert.deepEqual((await payloadDirsInTmp()).filter((n) => !payloadsBefore.has(n)), []);
  });

  it('stops an aborted run and reports it canceled', async () => {
    const marker = `700.${String(Date.now() % 1_000_000)}`;
    const ac = new AbortController();
    const running = runAnsible(
      request({
        runnable: { playbook: playbook('hang.yml') },
        extraVars: { sleep_marker: marker },
        signal: ac.signal,
        onEvent: (e) => {
          if (e.event === 'runner_on_start') {
            setTimeout(() => {
              ac.abort();
            }, 500);
          }
        },
      }),
    );
    const outcome: RunOutcome = await running;
    assert.equal(outcome.result, 'canceled', outcome.message);
    assert.deepEqual(await processesWith(marker), []);
  });

  it('stops a run aborted while its input was still being written', async () => {
    const marker = `710.${String(Date.now() % 1_000_000)}`;
    const ac = new AbortController();
    // Aborted in the same tick: the run is past its first check and writing its input directory.
    const running = runAnsible(request({ runnable: { playbook: playbook('hang.yml') }, extraVars: { sleep_marker: marker }, signal: ac.signal, timeoutMs: 60_000 }));
    ac.abort();
    const outcome = await running;
    assert.equal(outcome.result, 'canceled', outcome.message);
    assert.deepEqual(await processesWith(marker), []);
  });

  it('reads requeue_after (a local module and the runtime’s operator_sdk.util) and k8s_status from the events', async () => {
    const outcome = await runAnsible(request({ runnable: { playbook: playbook('requeue.yml') } }));
    assert.equal(outcome.result, 'successful', outcome.message);
    assert.equal(outcome.requeueAfterMs, 90_000);
    assert.equal(outcome.statusWrittenByRole, true);
    const real = await runAnsible(request({ runnable: { playbook: playbook('requeue-fqcn.yml') } }));
    assert.equal(real.result, 'successful', real.message);
    assert.equal(real.requeueAfterMs, 45_000, 'operator_sdk.util.requeue_after of the runtime');
    const plain = await runAnsible(request({ runnable: { playbook: playbook('ok.yml') } }));
    assert.equal(plain.requeueAfterMs, undefined);
    assert.equal(plain.statusWrittenByRole, false);
  });

  it('passes spec values as text that is never templated, whatever markUnsafe says', async () => {
    const cr = { apiVersion: 'x.dev/v1', kind: 'K', metadata: { name: 'k', namespace: 'n' }, spec: { command: '{{ 1 + 1 }}' } };
    const shown = async (markUnsafe: boolean): Promise<unknown> => {
      let msg: unknown;
      const extraVars = extraVarsFor(cr, { snakeCaseParameters: true, markUnsafe, vars: {} }, { group: 'x.dev', version: 'v1', kind: 'K' });
      const outcome = await runAnsible(
        request({
          runnable: { playbook: playbook('unsafe.yml') },
          extraVars,
          onEvent: (e) => {
            const res = e.event_data?.['res'] as { msg?: unknown } | undefined;
            if (e.event === 'runner_on_ok') msg = res?.msg;
          },
        }),
      );
      assert.equal(outcome.result, 'successful', outcome.message);
      return msg;
    };
    assert.equal(await shown(true), 'command={{ 1 + 1 }} type=str');
    assert.equal(await shown(false), 'command={{ 1 + 1 }} type=str');
  });

  it('reports a playbook that does not parse as an error naming the file and the fix', async () => {
    const outcome = await runAnsible(request({ runnable: { playbook: playbook('syntax.yml') } }));
    assert.equal(outcome.result, 'error', outcome.message);
    assert.match(outcome.message, /^playbook syntax\.yml could not run: YAML parsing failed: .*syntax\.yml:\d+:\d+\).*; fix the role or playbook/);
    assert.doesNotMatch(outcome.message, /\n/);
  });

  it('reports a role that does not parse, and a module of a missing collection, naming the fix', async () => {
    const role = await runAnsible(request({ runnable: { role: join(FIXTURES, 'roles/broken') }, extraVars: {} }));
    assert.equal(role.result, 'error', role.message);
    assert.match(role.message, /^role broken could not run: .*broken\/tasks\/main\.yml.*; fix the role or playbook/);
    const missing = await runAnsible(request({ runnable: { playbook: playbook('nomodule.yml') } }));
    assert.equal(missing.result, 'error', missing.message);
    assert.match(missing.message, /couldn't resolve module\/action 'example\.missing\.thing'.*; install the collection into a path of --ansible-collections-path/);
  });

  it('reports a missing ansible-runner as an error naming how to install it', async () => {
    const outcome = await runAnsible(request({ runnable: { playbook: playbook('ok.yml') }, runtime: { ...runtime, ansibleRunner: join(work, 'nope/ansible-runner') } }));
    assert.equal(outcome.result, 'error');
    assert.match(outcome.message, /ansible-runner is not at .*: install the Ansible runtime/);
  });

  it('keeps the newest maxArtifacts runs and points latest at the last', async () => {
    const artifactsDir = join(work, 'rotated');
    for (let i = 0; i < 3; i++) {
      const o = await runAnsible(request({ runnable: { playbook: playbook('ok.yml') }, artifactsDir, maxArtifacts: 2 }));
      assert.equal(o.result, 'successful', o.message);
    }
    const entries = (await readdir(artifactsDir)).sort();
    assert.equal(entries.length, 3, entries.join(' '));
    assert.ok(entries.includes('latest'));
    const latest = await readFile(join(artifactsDir, 'latest', 'status'), 'utf8');
    assert.equal(latest.trim(), 'successful');
  });
});

describe('a role against the API server', () => {
  it('creates a ConfigMap with kubernetes.core.k8s through the kubeconfig it is given', async (t) => {
    const c = await testCluster();
    const ns = await newNamespace(t, 'ansible-runner');
    const cr = { apiVersion: 'test.chartpilot.dev/v1', kind: 'Greeter', metadata: { name: 'g1', namespace: ns }, spec: { size: 3, greeting: 'hi there' } };
    const gvk = { group: 'test.chartpilot.dev', version: 'v1', kind: 'Greeter' };
    const extraVars = extraVarsFor(cr, { snakeCaseParameters: true, markUnsafe: false, vars: {} }, gvk);
    const outcome = await runAnsible(
      request({ runnable: { role: join(FIXTURES, 'roles/configmap') }, extraVars, kubeconfig: await readFile(c.kubeconfig, 'utf8') }),
    );
    assert.equal(outcome.result, 'successful', outcome.message);
    assert.equal(outcome.stats.changed, 1);
    const cm = await getJson<{ data: Record<string, string> }>(c, ['get', 'configmap', 'g1-config', '-n', ns, '-o', 'json']);
    assert.deepEqual(cm.data, { greeting: 'hi there', size: '3' });

    const again = await runAnsible(
      request({ runnable: { role: join(FIXTURES, 'roles/configmap') }, extraVars, kubeconfig: await readFile(c.kubeconfig, 'utf8') }),
    );
    assert.equal(again.result, 'successful', again.message);
    assert.equal(again.stats.changed, 0, 'an unchanged re-run changes nothing');
  });

  it('fails the k8s task without credentials and says why', async () => {
    const outcome = await runAnsible(request({ runnable: { role: join(FIXTURES, 'roles/configmap') }, extraVars: { size: 1, ansible_operator_meta: { name: 'x', namespace: 'default' } } }));
    assert.equal(outcome.result, 'failed', outcome.message);
    assert.equal(outcome.failedTasks[0]?.task, 'create the configmap');
    assert.match(outcome.message, /^role configmap failed: task "create the configmap": /);
  });
});
