import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { parseFdLimits, raiseFdLimit } from '../../../src/cli/fd-limit.js';
import { capturingLogger } from '../fakes/reconcile-ports.js';

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            1024                 524288               files
Max locked memory         8388608              8388608              bytes
`;

describe('file descriptor limit', () => {
  it('reads soft and hard from /proc/<pid>/limits', () => {
    assert.deepEqual(parseFdLimits(LIMITS), { soft: 1024, hard: 524288 });
    assert.deepEqual(parseFdLimits(LIMITS.replace('524288 ', 'unlimited')), { soft: 1024, hard: 'unlimited' });
    assert.equal(parseFdLimits('Max cpu time unlimited unlimited seconds\n'), undefined);
  });

  it('raises the soft limit of a real process to its hard limit with prlimit, and logs both', async (t) => {
    // A process of our own started at soft 64, hard 128 (prlimit from util-linux, as the image has).
    const child = execFileSync('sh', ['-c', 'prlimit --nofile=64:128 sleep 30 >/dev/null 2>&1 & echo $!'], { encoding: 'utf8' }).trim();
    const pid = Number(child);
    t.after(() => {
      process.kill(pid, 'SIGKILL');
    });
    const { log, text } = capturingLogger();
    const { readFile } = await import('node:fs/promises');
    const read = (): Promise<string> => readFile(`/proc/${String(pid)}/limits`, 'utf8');
    // $! is prlimit's pid before it has set its own limit and exec'd sleep: on a busy machine the
    // first read can still see the shell's limits, so wait for the exec (comm becomes sleep).
    const deadline = Date.now() + 10_000;
    while ((await readFile(`/proc/${String(pid)}/comm`, 'utf8')).trim() !== 'sleep') {
      assert.ok(Date.now() < deadline, 'prlimit did not exec sleep within 10 s');
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.deepEqual(parseFdLimits(await read()), { soft: 64, hard: 128 });
    assert.deepEqual(await raiseFdLimit({ log, pid, read }), { soft: 128, hard: 128 });
    assert.deepEqual(parseFdLimits(await read()), { soft: 128, hard: 128 });
    assert.match(text(), /"soft":128,"hard":128,"softBefore":64,"msg":"file descriptor limit raised to the hard limit"/);
  });

  it('fails soft, with a log line, when prlimit is missing', async () => {
    const { log, text } = capturingLogger();
    const limits = await raiseFdLimit({ log, prlimit: '/nonexistent/prlimit', read: () => Promise.resolve(LIMITS) });
    assert.deepEqual(limits, { soft: 1024, hard: 524288 });
    assert.match(text(), /cannot raise the file descriptor soft limit/);
  });

  it('only logs when soft and hard are equal', async () => {
    const { log, text } = capturingLogger();
    await raiseFdLimit({ log, prlimit: '/nonexistent/prlimit', read: () => Promise.resolve(LIMITS.replace('1024 ', '524288')) });
    assert.match(text(), /"soft":524288,"hard":524288,"msg":"file descriptor limit"/);
  });
});
