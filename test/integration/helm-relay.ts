/**
 * Test instrumentation for a warm helm (the harness's HELM_BIN wrapper, operator.ts): started in
 * the worker's or the engine's place, it starts the real chartpilot-helm, passes the protocol
 * through unchanged and appends each call to the call log — a worker call's argv, as the wrapper
 * does for a helm process; an engine call as `<op> --namespace=<ns> -- <release> [<chart>]`, the shape of its command line — so `helmCalls()`
 * counts helm calls in every mode. The pool starts workers in a process group of
 * their own and kills the group, so a kill reaches the worker behind this relay as well.
 *
 *   node helm-relay.js <call log> <chartpilot-helm>
 */
import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const [callLog = '', helm = ''] = process.argv.slice(2);
const worker = spawn(helm, [], { stdio: ['pipe', 'inherit', 'inherit'] });
worker.stdin.on('error', () => undefined);
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => worker.kill(signal));

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on('line', (line) => {
  try {
    const msg = JSON.parse(line) as { argv?: unknown; op?: unknown; namespace?: unknown; release?: unknown; chart?: unknown };
    if (Array.isArray(msg.argv)) appendFileSync(callLog, `${msg.argv.map(String).join(' ')}\n`);
    else if (typeof msg.op === 'string') {
      const chart = typeof msg.chart === 'string' ? ` ${msg.chart}` : '';
      appendFileSync(callLog, `${msg.op} --namespace=${String(msg.namespace)} -- ${String(msg.release)}${chart}\n`);
    }
  } catch {
    // Not ours to judge: the worker answers what it gets.
  }
  worker.stdin.write(`${line}\n`);
});
lines.on('close', () => worker.stdin.end());
worker.on('exit', (code, signal) => {
  process.exitCode = code ?? (signal === null ? 1 : 128 + 9);
  process.exit();
});
