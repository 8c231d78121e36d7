// A CR author attacking the Ansible engine through what they write (spec values and keys), run
// by the real ansible-runner as the operator runs it (extraVarsFor → runAnsible): nothing they
// write is ever evaluated as a template or read as an Ansible setting, whatever the entry's
// markUnsafe, and the run sees none of the operator's own environment.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { extraVarsFor } from '../../src/ansible/extra-vars.js';
import { runAnsible, type AnsibleRuntimePaths, type RunnerEvent, type RunRequest } from '../../src/ansible/runner.js';
import { ansibleRuntime } from './ansible-run.js';

const rt = await ansibleRuntime();
const runtime: AnsibleRuntimePaths = { ansibleRunner: rt.ansibleRunner, python: rt.python, collectionsPath: rt.collectionsPath };
const work = await mkdtemp(join(tmpdir(), 'chartpilot-hostile-test-'));
after(async () => {
  await rm(work, { recursive: true, force: true });
});

const gvk = { group: 'hostile.chartpilot.dev', version: 'v1', kind: 'Victim' };

/** A role (the operator author's, trusted) in its own roles directory; returns its path. */
async function role(name: string, tasks: string): Promise<string> {
  const dir = join(work, 'roles', name);
  await mkdir(join(dir, 'tasks'), { recursive: true });
  await writeFile(join(dir, 'tasks', 'main.yml'), tasks);
  return dir;
}

function request(roleDir: string, extraVars: Record<string, unknown>, onEvent: (e: RunnerEvent) => void): RunRequest {
  return {
    runtime,
    runnable: { role: roleDir },
    extraVars,
    kubeconfig: 'apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n',
    verbosity: 0,
    extraArgs: [],
    rolesPath: [],
    collectionsPath: [],
    artifactsDir: join(work, 'artifacts', randomBytes(4).toString('hex')),
    maxArtifacts: 2,
    timeoutMs: 120_000,
    secrets: [],
    runBase: join(work, 'runs'),
    onEvent,
  };
}

/** The `msg` of every debug task that ran, in order. */
function debugMessages(events: readonly RunnerEvent[]): string[] {
  return events
    .filter((e) => e.event === 'runner_on_ok' && e.event_data?.['task_action'] === 'debug')
    .map((e) => {
      const res = e.event_data?.['res'] as { msg?: unknown } | undefined;
      return String(res?.msg);
    });
}

describe('spec values are data, never templates (markUnsafe: false, the default)', () => {
  it('does not evaluate {{ lookup(...) }} from the spec where a role uses the value', async () => {
    const marker = join(work, `pwned-${randomBytes(4).toString('hex')}`);
    const dir = await role(
      'uses-spec',
      [
        '- debug: { msg: "name={{ greeting }}" }',
        '- debug: { msg: "nested={{ config.inner }}" }',
        '- debug: { msg: "first={{ things[0] }}" }',
        '- set_fact: { copied: "{{ greeting }}" }',
        '- debug: { msg: "copied={{ copied }}" }',
        '- debug: { msg: "object={{ _hostile_chartpilot_dev_victim.spec.greeting }}" }',
        '',
      ].join('\n'),
    );
    const touch = `{{ lookup('pipe', 'touch ${marker}') }}`;
    const cr = {
      apiVersion: 'hostile.chartpilot.dev/v1',
      kind: 'Victim',
      metadata: { name: 'v1', namespace: 'tenant' },
      spec: { greeting: touch, config: { inner: "{{ lookup('env', 'HOME') }}" }, things: ['{{ 7 * 7 }}'] },
    };
    const events: RunnerEvent[] = [];
    const outcome = await runAnsible(request(dir, extraVarsFor(cr, { snakeCaseParameters: true, markUnsafe: false, vars: {} }, gvk), (e) => events.push(e)));
    assert.equal(outcome.result, 'successful', outcome.message);
    assert.equal(existsSync(marker), false, 'a command from the spec ran in the operator');
    assert.deepEqual(debugMessages(events), [
      `name=${touch}`,
      `nested={{ lookup('env', 'HOME') }}`,
      'first={{ 7 * 7 }}',
      `copied=${touch}`,
      `object=${touch}`,
    ]);
  });

  it('does not let a spec key set an Ansible connection or become variable (ansible_*)', async () => {
    const marker = join(work, `pwned-${randomBytes(4).toString('hex')}`);
    const dir = await role('plain', '- command: "true"\n- debug: { msg: "done" }\n');
    const cr = {
      apiVersion: 'hostile.chartpilot.dev/v1',
      kind: 'Victim',
      metadata: { name: 'v2', namespace: 'tenant' },
      // Extra vars have the highest precedence: these would replace the inventory's connection.
      spec: { ansibleBecome: true, ansibleBecomeUser: 'nobody', ansibleBecomeMethod: 'su', ansibleBecomeExe: `touch ${marker}; su` },
    };
    for (const snakeCaseParameters of [true, false]) {
      const spec = snakeCaseParameters
        ? cr.spec
        : { ansible_become: true, ansible_become_user: 'nobody', ansible_become_method: 'su', ansible_become_exe: `touch ${marker}; su` };
      const events: RunnerEvent[] = [];
      const outcome = await runAnsible(request(dir, extraVarsFor({ ...cr, spec }, { snakeCaseParameters, markUnsafe: true, vars: {} }, gvk), (e) => events.push(e)));
      assert.equal(existsSync(marker), false, `a command from the spec ran in the operator (snakeCaseParameters: ${String(snakeCaseParameters)})`);
      assert.equal(outcome.result, 'successful', outcome.message);
      assert.deepEqual(debugMessages(events), ['done']);
    }
  });
});

describe("the run's environment", () => {
  it("holds none of the operator's credentials or settings, only the run's own", async () => {
    const dir = await role(
      'env',
      ['KUBERNETES_SERVICE_HOST', 'KUBERNETES_SERVICE_PORT', 'CHARTPILOT_SEAL_KEY', 'CHARTPILOT_HOSTILE_PROBE', 'HELM_KUBETOKEN', 'AWS_SECRET_ACCESS_KEY', 'RELATED_IMAGE_HOSTILE', 'K8S_AUTH_KUBECONFIG']
        .map((v) => `- debug: { msg: "${v}={{ lookup('env', '${v}') }}" }`)
        .join('\n') + '\n',
    );
    const planted: Record<string, string> = {
      KUBERNETES_SERVICE_HOST: '10.0.0.1',
      KUBERNETES_SERVICE_PORT: '443',
      CHARTPILOT_SEAL_KEY: 'seal-key-value',
      CHARTPILOT_HOSTILE_PROBE: 'probe',
      HELM_KUBETOKEN: 'helm-token',
      AWS_SECRET_ACCESS_KEY: 'aws-secret',
      RELATED_IMAGE_HOSTILE: 'registry.example/db:1',
    };
    const before = Object.fromEntries(Object.keys(planted).map((k) => [k, process.env[k]]));
    Object.assign(process.env, planted);
    const events: RunnerEvent[] = [];
    let outcome;
    try {
      outcome = await runAnsible(request(dir, { ansible_operator_meta: { name: 'v3', namespace: 'tenant' } }, (e) => events.push(e)));
    } finally {
      for (const [k, v] of Object.entries(before)) {
        if (v === undefined) Reflect.deleteProperty(process.env, k);
        else process.env[k] = v;
      }
    }
    assert.equal(outcome.result, 'successful', outcome.message);
    const seen = Object.fromEntries(debugMessages(events).map((m) => [m.slice(0, m.indexOf('=')), m.slice(m.indexOf('=') + 1)]));
    assert.deepEqual(
      { ...seen, K8S_AUTH_KUBECONFIG: seen['K8S_AUTH_KUBECONFIG']?.startsWith(join(work, 'runs')) === true ? 'the run kubeconfig' : seen['K8S_AUTH_KUBECONFIG'] },
      {
        KUBERNETES_SERVICE_HOST: '',
        KUBERNETES_SERVICE_PORT: '',
        CHARTPILOT_SEAL_KEY: '',
        CHARTPILOT_HOSTILE_PROBE: '',
        HELM_KUBETOKEN: '',
        AWS_SECRET_ACCESS_KEY: '',
        // The operator author's image references, which roles read as ansible-operator's do.
        RELATED_IMAGE_HOSTILE: 'registry.example/db:1',
        K8S_AUTH_KUBECONFIG: 'the run kubeconfig',
      },
    );
  });
});
