// `ansible-runner run` by hand for integration tests: the project's Ansible runtime (built by
// devcluster/ansible-runtime.sh when missing, found as the operator finds it), a private data
// directory per run, and the run's JSON events read back from its artifacts.
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { repoRoot } from '../../devcluster/paths.js';
import { findAnsibleRuntime, runtimeEnv, type AnsibleRuntime } from '../../src/engines/ansible/runtime.js';

let runtime: Promise<AnsibleRuntime> | undefined;

/** The runtime, provisioned through its script first (a no-op of ~0.1 s when cached). */
export function ansibleRuntime(): Promise<AnsibleRuntime> {
  runtime ??= (async () => {
    const script = join(repoRoot(), 'devcluster', 'ansible-runtime.sh');
    const r = await execa('bash', [script], { reject: false, stdin: 'ignore', all: true });
    if (r.exitCode !== 0) throw new Error(`bash ${script} failed (exit ${String(r.exitCode)}):\n${r.all}`);
    return findAnsibleRuntime(process.env);
  })();
  return runtime;
}

/** One runner event (artifacts/<ident>/job_events/*.json), the fields tests read. */
export interface RunnerEvent {
  readonly event: string;
  readonly counter: number;
  readonly event_data?: {
    readonly task?: string;
    readonly task_action?: string;
    readonly res?: Record<string, unknown>;
  };
}

export interface RunnerResult {
  readonly exitCode: number;
  readonly output: string;
  /** In the order the run emitted them. */
  readonly events: readonly RunnerEvent[];
}

export interface RunnerRun {
  /** The private data directory (created). */
  readonly dir: string;
  /** project/<name> → content. */
  readonly project: Readonly<Record<string, string>>;
  readonly playbook: string;
  readonly extravars?: Readonly<Record<string, unknown>>;
  /** K8S_AUTH_KUBECONFIG of the run. */
  readonly kubeconfig?: string;
  readonly ident: string;
}

/** Runs ansible-runner on a private data directory as the operator will: localhost, the venv's Python. */
export async function runAnsible(run: RunnerRun): Promise<RunnerResult> {
  const rt = await ansibleRuntime();
  mkdirSync(join(run.dir, 'project'), { recursive: true });
  mkdirSync(join(run.dir, 'inventory'), { recursive: true });
  mkdirSync(join(run.dir, 'env'), { recursive: true });
  for (const [name, content] of Object.entries(run.project)) writeFileSync(join(run.dir, 'project', name), content);
  writeFileSync(join(run.dir, 'inventory', 'hosts'), `localhost ansible_connection=local ansible_python_interpreter=${rt.python}\n`);
  writeFileSync(join(run.dir, 'env', 'extravars'), JSON.stringify(run.extravars ?? {}));
  const env: Record<string, string> = {
    ...runtimeEnv(rt, process.env),
    ANSIBLE_COLLECTIONS_SCAN_SYS_PATH: 'false',
    ...(run.kubeconfig === undefined ? {} : { K8S_AUTH_KUBECONFIG: run.kubeconfig }),
  };
  const r = await execa(rt.ansibleRunner, ['run', run.dir, '-p', run.playbook, '--ident', run.ident], {
    env, reject: false, all: true, stdin: 'ignore', timeout: 120_000,
  });
  const eventsDir = join(run.dir, 'artifacts', run.ident, 'job_events');
  const events = readdirSync(eventsDir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => JSON.parse(readFileSync(join(eventsDir, f), 'utf8')) as RunnerEvent)
    .sort((a, b) => a.counter - b.counter);
  return { exitCode: r.exitCode ?? -1, output: r.all, events };
}

/** The result of the task named `task` (its runner_on_ok or runner_on_failed event). */
export function taskResult(result: RunnerResult, task: string): { event: string; res: Record<string, unknown> } {
  const e = result.events.find((ev) => ev.event_data?.task === task && /^runner_on_(ok|failed)$/.test(ev.event));
  if (e === undefined) throw new Error(`no result event for task "${task}"; output:\n${result.output}`);
  return { event: e.event, res: e.event_data?.res ?? {} };
}
