import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { makeProcessDir, processTag, removeOrphanDirs } from '../../../src/lib/process-dirs.js';

async function temp(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'chartpilot-process-dirs-test-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

describe('process directories', () => {
  it("tags a process with its pid and start time, and a gone pid with nothing", () => {
    const tag = processTag(process.pid);
    assert.match(tag ?? '', new RegExp(`^${String(process.pid)}\\.\\d+$`, 'u'));
    assert.equal(processTag(process.pid), tag, 'the same process, the same tag');
    assert.notEqual(processTag(process.ppid), tag);
    const dead = Number(spawnSync(process.execPath, ['-e', 'console.log(process.pid)'], { encoding: 'utf8' }).stdout.trim());
    assert.equal(processTag(dead), undefined);
  });

  it('makes a private directory named after this process, after sweeping away those of processes gone', async (t) => {
    const parent = await temp(t);
    const dead = spawnSync(process.execPath, ['-e', 'console.log(process.pid)'], { encoding: 'utf8' }).stdout.trim();
    const gone = join(parent, `chartpilot-values-${dead}.777-aaaaaa`);
    await mkdir(join(gone, 'inside'), { recursive: true });
    const dir = await makeProcessDir(parent, 'chartpilot-values-');
    assert.ok(basename(dir).startsWith(`chartpilot-values-${processTag(process.pid) ?? ''}-`), basename(dir));
    assert.equal((await stat(dir)).mode & 0o777, 0o700);
    assert.equal(existsSync(gone), false, "a killed process's values directory is removed");
    await assert.rejects(makeProcessDir(parent, '../escape-'), /prefix/u);
  });

  it('removes only well-formed names of processes not running as tagged', async (t) => {
    const parent = await temp(t);
    const names = ['chartpilot-session-10.5-x1', 'chartpilot-session-11.5-x2', 'chartpilot-helm-plugins-10.6-x3', 'chartpilot-session-12-x4', 'other-10.5-x5', 'chartpilot-session-10.5'];
    for (const n of names) await mkdir(join(parent, n));
    const running = new Set(['10.5']);
    const removed = await removeOrphanDirs(parent, (pid, start) => running.has(`${String(pid)}.${start}`));
    assert.deepEqual(removed.sort(), ['chartpilot-helm-plugins-10.6-x3', 'chartpilot-session-11.5-x2']);
    assert.deepEqual(names.map((n) => existsSync(join(parent, n))), [true, false, false, true, true, true]);
    assert.deepEqual(await removeOrphanDirs(join(parent, 'missing')), []);
  });
});
