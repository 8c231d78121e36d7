/**
 * Test instrumentation for a warm helm (the harness's HELM_BIN wrapper, operator.ts): started in
 * the worker's place, it starts the real chartpilot-helm, passes the protocol through unchanged
 * and appends each call's argv to the call log, as the wrapper does for a helm process, so
 * `helmCalls()` counts helm calls in both modes. The pool starts workers in a process group of
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
    const msg = JSON.parse(line) as { argv?: unknown };
    if (Array.isArray(msg.argv)) appendFileSync(callLog, `${msg.argv.map(String).join(' ')}\n`);
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
