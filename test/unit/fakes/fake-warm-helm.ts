/**
 * A stand-in for chartpilot-helm in the pool's unit tests (test/unit/helm/warm-pool.test.ts),
 * speaking the warm-helm protocol (docs/architecture/helm-engine.md "Helm kept warm"): each call runs the fake helm
 * (test/fixtures/helm/fake-helm.sh, FAKE_WORKER_HELM) as a process with exactly the call's argv,
 * environment and directory, so the client's own fake-helm tests hold for the pool too. A cancel
 * is SIGTERM to that process. Run through test/fixtures/helm/fake-warm-helm.sh.
 *
 * Its own environment says how it misbehaves:
 *   FAKE_WORKER_START=usage|crash|silent  answer like a plain helm, exit at once, or never say ready
 *   FAKE_WORKER_IGNORE_CANCEL=1           cancels do nothing (so only SIGKILL ends a hung call)
 *   FAKE_WORKER_CANCEL_EXITS=1            a cancel is answered 143 and the worker exits
 * A call's environment: FAKE_WORKER_DIE=1 exits the worker mid-call; FAKE_HELM_DIR gets a record
 * `worker-<pid>-<id>.json` of what the call saw ({argv, env, dir, pid}).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

const fakeHelm = process.env['FAKE_WORKER_HELM'] ?? '';
const argv = process.argv.slice(2);

if (argv.length > 0 || process.env['CHARTPILOT_HELM_WORKER'] !== '1') {
  // Plain helm.
  const r = spawnSync(fakeHelm, argv, { stdio: 'inherit' });
  process.exit(r.status ?? 1);
}

switch (process.env['FAKE_WORKER_START']) {
  case 'usage':
    process.stdout.write('The Kubernetes package manager\n\nUsage:\n  helm [command]\n');
    process.exit(0);
    break;
  case 'crash':
    process.stderr.write('panic: something broke at start-up\n');
    process.exit(2);
    break;
  case 'silent':
    setInterval(() => undefined, 60_000);
    break;
  default:
    process.stdout.write(`${JSON.stringify({ ready: true, helmVersion: 'v4.1.4', pid: process.pid })}\n`);
}

let running: { id: number; child: ChildProcess } | undefined;

function reply(message: unknown): void {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on('line', (line) => {
  const msg = JSON.parse(line) as { id?: number; argv?: string[]; env?: Record<string, string>; dir?: string; cancel?: number };
  if (msg.cancel !== undefined) {
    if (running?.id !== msg.cancel || process.env['FAKE_WORKER_IGNORE_CANCEL'] === '1') return;
    if (process.env['FAKE_WORKER_CANCEL_EXITS'] === '1') {
      // As chartpilot-helm for a call it cannot stop in-process: answer 143, then exit.
      const { id } = running;
      running.child.kill('SIGKILL');
      reply({ id, exitCode: 143, stdout: '', stderr: '' });
      setTimeout(() => process.exit(0), 100);
      running = undefined;
      return;
    }
    running.child.kill('SIGTERM');
    return;
  }
  const { id = 0, argv: args = [], env = {}, dir } = msg;
  if (running !== undefined) {
    // The protocol says one call at a time: a second one is a bug of the pool's.
    process.stderr.write(`call ${String(id)} while ${String(running.id)} runs\n`);
    process.exit(9);
  }
  if (env['FAKE_HELM_DIR'] !== undefined) {
    writeFileSync(join(env['FAKE_HELM_DIR'], `worker-${String(process.pid)}-${String(id)}.json`), JSON.stringify({ argv: args, env, dir, pid: process.pid }));
  }
  if (env['FAKE_WORKER_DIE'] === '1') setTimeout(() => process.exit(3), 50);
  const child = spawn(fakeHelm, args, { env, cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  running = { id, child };
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  child.on('close', (code, signal) => {
    if (running?.id !== id) return; // answered already (a cancel that exits)
    running = undefined;
    // Helm 4 in the worker turns a cancel into "context canceled" and exit code 1.
    if (signal !== null) stderr += 'Error: context canceled\n';
    reply({ id, exitCode: code ?? 1, stdout, stderr });
  });
});
lines.on('close', () => {
  if (running === undefined) process.exit(0);
  running.child.on('close', () => process.exit(0));
});
