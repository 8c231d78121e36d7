/** Stopping a process tree, with real processes: a child in a session of its own, one that ignores SIGTERM. */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { stopProcessTree } from '../../../../src/engines/ansible/process-tree.js';

async function processesWith(marker: string): Promise<number[]> {
  const out: number[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const cmd = await readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '');
    if (cmd.includes(marker)) out.push(Number(name));
  }
  return out;
}

async function started(marker: string, count: number): Promise<void> {
  for (let i = 0; i < 100 && (await processesWith(marker)).length < count; i++) await sleep(50);
}

describe('stopProcessTree', () => {
  it('stops children in a session of their own, and those that ignore SIGTERM', async () => {
    const marker = `31.${String(process.pid)}${String(Date.now() % 10000)}`;
    // sh ignores TERM and so do its children; one child moves to a new session, as pexpect's does.
    const root = spawn('sh', ['-c', `trap "" TERM; sleep ${marker}1 & setsid sleep ${marker}2 & wait`], { stdio: 'ignore' });
    const exited = new Promise((resolve) => root.once('exit', resolve));
    const sleeps = `sleep\u0000${marker}`;
    await started(sleeps, 2);
    assert.equal((await processesWith(sleeps)).length, 2);
    const t0 = Date.now();
    await stopProcessTree(root.pid ?? -1, 300);
    await exited;
    assert.deepEqual(await processesWith(marker), []);
    assert.ok(Date.now() - t0 < 10_000, `took ${String(Date.now() - t0)} ms`);
  });

  it('returns at once for a process that is gone', async () => {
    const root = spawn('true', [], { stdio: 'ignore' });
    await new Promise((resolve) => root.once('exit', resolve));
    const t0 = Date.now();
    await stopProcessTree(root.pid ?? -1, 5000);
    assert.ok(Date.now() - t0 < 1000);
  });
});
