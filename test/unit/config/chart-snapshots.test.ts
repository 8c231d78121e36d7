/** Private copies of local charts: what helm is given, one per content, the last good one kept while an edit is tried. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { chartDigest } from '../../../src/config/chart-digest.js';
import { ChartSnapshots } from '../../../src/config/chart-snapshots.js';
import { processTag } from '../../../src/lib/process-dirs.js';

async function temp(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'chartpilot-copies-test-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function chart(dir: string, values: string): Promise<string> {
  const path = join(dir, 'webapp');
  await mkdir(join(path, 'templates'), { recursive: true });
  await writeFile(join(path, 'Chart.yaml'), 'apiVersion: v2\nname: webapp\nversion: 0.1.0\n');
  await writeFile(join(path, 'values.yaml'), values);
  await writeFile(join(path, 'templates', 'cm.yaml'), 'kind: ConfigMap\n');
  return path;
}

describe('ChartSnapshots', () => {
  it('copies a chart under its own name; an edit of the original leaves the copy as its digest says', async (t) => {
    const dir = await temp(t);
    const live = await chart(dir, 'replicas: 1\n');
    const copies = new ChartSnapshots(await temp(t));
    t.after(() => copies.dispose());
    const first = await copies.take(live);
    assert.equal(first.digest, await chartDigest(live), 'the same digest as the original: fingerprints do not change');
    assert.match(first.path, new RegExp(`chartpilot-chart-copies-${String(process.pid)}\\.\\d+-[^/]+/[0-9a-f]{32}/webapp$`, 'u'));
    assert.equal((await stat(join(first.path, '..', '..'))).mode & 0o777, 0o700, 'private to the operator');
    await writeFile(join(live, 'values.yaml'), 'replicas: {{ broken\n');
    assert.equal(await readFile(join(first.path, 'values.yaml'), 'utf8'), 'replicas: 1\n');
    assert.equal(await chartDigest(first.path), first.digest);

    const second = await copies.take(live);
    assert.notEqual(second.path, first.path);
    await writeFile(join(live, 'values.yaml'), 'replicas: 1\n');
    assert.deepEqual(await copies.take(live), first, 'content seen before: the copy made then');
  });

  it('copies a packaged chart as a file', async (t) => {
    const dir = await temp(t);
    const tgz = join(dir, 'webapp-0.1.0.tgz');
    await writeFile(tgz, Buffer.from([0x1f, 0x8b, 1, 2, 3]));
    const copies = new ChartSnapshots(await temp(t));
    t.after(() => copies.dispose());
    const copy = await copies.take(tgz);
    assert.match(copy.path, /\/webapp-0\.1\.0\.tgz$/u);
    assert.deepEqual(await readFile(copy.path), await readFile(tgz));
  });

  it('removes copies no longer served beyond two spares per chart, never one in use, and all on dispose', async (t) => {
    const dir = await temp(t);
    const live = await chart(dir, 'v: 0\n');
    const parent = await temp(t);
    const copies = new ChartSnapshots(parent);
    const taken = [];
    for (let i = 0; i < 5; i++) {
      await writeFile(join(live, 'values.yaml'), `v: ${String(i)}\n`);
      taken.push((await copies.take(live)).path);
    }
    const [oldest, , middle] = taken;
    assert.ok(oldest !== undefined && middle !== undefined);
    await copies.prune(new Set([oldest]));
    assert.deepEqual(taken.map((p) => existsSync(p)), [true, false, false, true, true], 'in use, then the two newest spares');
    await copies.dispose();
    assert.deepEqual(taken.map((p) => existsSync(p)), [false, false, false, false, false]);
  });

  it('removes the copies of an operator that is gone (or whose pid another process has now), never those of a live one', async (t) => {
    const parent = await temp(t);
    // A pid that is not alive: a child that has exited.
    const dead = spawnSync(process.execPath, ['-e', 'console.log(process.pid)'], { encoding: 'utf8' }).stdout.trim();
    const orphan = join(parent, `chartpilot-chart-copies-${dead}.12345-abc123`);
    const reused = join(parent, `chartpilot-chart-copies-${String(process.ppid)}.1-ghi789`);
    const live = join(parent, `chartpilot-chart-copies-${processTag(process.ppid) ?? ''}-def456`);
    const other = join(parent, 'someone-elses');
    for (const d of [orphan, reused, live, other]) await mkdir(d);
    const copies = new ChartSnapshots(parent);
    t.after(() => copies.dispose());
    await copies.take(await chart(await temp(t), 'v: 1\n'));
    assert.deepEqual([existsSync(orphan), existsSync(reused), existsSync(live), existsSync(other)], [false, false, true, true]);
  });
});
