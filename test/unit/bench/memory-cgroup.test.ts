import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { createMemoryCgroup, figuresOf, keyedCounts, memoryHierarchyOf } from '../../../bench/memory-cgroup.js';
import { parseBenchArgs, UsageError } from '../../../bench/args.js';
import { cgroupSection } from '../../../bench/report.js';
import type { ContenderResult } from '../../../bench/results.js';

const MiB = 2 ** 20;

describe('bench memory cgroup: reading the kernel files', () => {
  it('finds the memory hierarchy in cgroup v1 (the memory controller line) and v2 (the 0:: line)', () => {
    const v1 = '9:name=systemd:/\n4:memory:/process_api/abc\n1:cpu:/\n0::/\n';
    assert.deepEqual(memoryHierarchyOf(v1, { v1Memory: '/sys/fs/cgroup/memory', v2: '/sys/fs/cgroup/unified' }), { version: 1, own: '/sys/fs/cgroup/memory/process_api/abc' });
    assert.deepEqual(memoryHierarchyOf('0::/user.slice/session-1.scope\n', { v1Memory: undefined, v2: '/sys/fs/cgroup' }), { version: 2, own: '/sys/fs/cgroup/user.slice/session-1.scope' });
    // A hybrid host whose memory controller is on v2 only: the unified line is the one.
    assert.deepEqual(memoryHierarchyOf('4:cpu,cpuacct:/x\n0::/y\n', { v1Memory: undefined, v2: '/sys/fs/cgroup/unified' }), { version: 2, own: '/sys/fs/cgroup/unified/y' });
    assert.equal(memoryHierarchyOf('4:cpu:/x\n', { v1Memory: undefined, v2: undefined }), undefined);
  });

  it('reads v1 figures: peak, working set less inactive page cache, OOM kills', () => {
    const files: Record<string, string> = {
      'memory.usage_in_bytes': `${String(100 * MiB)}\n`,
      'memory.max_usage_in_bytes': `${String(127 * MiB)}\n`,
      'memory.stat': `cache 1\ninactive_file 5\ntotal_inactive_file ${String(30 * MiB)}\n`,
      'memory.oom_control': 'oom_kill_disable 0\nunder_oom 0\noom_kill 2\n',
    };
    assert.deepEqual(figuresOf(1, 128 * MiB, (f) => files[f]), { limitMiB: 128, peakMiB: 127, workingSetMiB: 70, oomKills: 2 });
  });

  it('reads v2 figures, and leaves out what a file does not say', () => {
    const files: Record<string, string> = {
      'memory.current': String(64 * MiB),
      'memory.stat': `anon 1\ninactive_file ${String(4 * MiB)}\n`,
      'memory.events': 'low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n',
    };
    assert.deepEqual(figuresOf(2, 128 * MiB, (f) => files[f]), { limitMiB: 128, peakMiB: undefined, workingSetMiB: 60, oomKills: 1 });
    assert.deepEqual([...keyedCounts('a 1\n\nb x\n c  2 \n')], [['a', 1], ['c', 2]]);
  });
});

describe('bench memory cgroup: the kernel enforces the limit', () => {
  // The bench makes its cgroups below its own; where it cannot (no write access), --memory-limit-mib fails with that message.
  const probe = (() => {
    try {
      const g = createMemoryCgroup(`unit-probe-${String(process.pid)}`, 32);
      g.remove();
      return undefined;
    } catch (err) {
      return (err as Error).message;
    }
  })();

  it('OOM-kills a process that outgrows the limit and counts it; one that fits runs to its end', { skip: probe }, async () => {
    const grows = createMemoryCgroup(`unit-grows-${String(process.pid)}`, 48);
    try {
      const run = grows.wrap(process.execPath, ['-e', 'const kept = []; for (;;) kept.push(Buffer.alloc(1 << 20, 1));']);
      const child = spawn(run.command, run.args, { stdio: 'ignore' });
      const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
      assert.equal(signal, 'SIGKILL', `expected the kernel's OOM kill, got exit ${String(code)}`);
      const g = grows.figures();
      assert.ok(g.oomKills >= 1, `oom kills: ${String(g.oomKills)}`);
      assert.ok(g.peakMiB === undefined || g.peakMiB > 40, `peak ${String(g.peakMiB)} MiB`);
    } finally {
      grows.remove();
    }
    const fits = createMemoryCgroup(`unit-fits-${String(process.pid)}`, 96);
    try {
      const run = fits.wrap(process.execPath, ['-e', 'Buffer.alloc(8 << 20, 1); process.exit(7)']);
      const child = spawn(run.command, run.args, { stdio: 'ignore' });
      const [code] = (await once(child, 'exit')) as [number | null];
      assert.equal(code, 7);
      assert.equal(fits.figures().oomKills, 0);
    } finally {
      fits.remove();
    }
  });
});

describe('bench memory cgroup: flags and report', () => {
  it('takes --memory-limit-mib, refuses one below 16 MiB and one with --replicas', () => {
    assert.equal(parseBenchArgs(['--memory-limit-mib', '128'])?.memoryLimitMiB, 128);
    assert.equal(parseBenchArgs([])?.memoryLimitMiB, undefined);
    assert.throws(() => parseBenchArgs(['--memory-limit-mib', '8']), UsageError);
    assert.throws(() => parseBenchArgs(['--memory-limit-mib', '128', '--replicas', '3']), /cannot be combined with --replicas/);
  });

  it('says a contender stayed inside only when nothing was killed and every scenario converged', () => {
    const figures = { limitMiB: 128, peakMiB: 120.4, workingSetMiB: 88.2, oomKills: 0 };
    const scenario = { converged: true } as ContenderResult['scenarios'][number];
    const inside: ContenderResult = { name: 'chartpilot', status: 'ok', scenarios: [scenario], cgroup: figures };
    const killed: ContenderResult = { name: 'operator-sdk', status: 'failed', scenarios: [], cgroup: { ...figures, oomKills: 1 } };
    const text = cgroupSection([inside, killed, { name: 'floor', status: 'ok', scenarios: [] }], 20).join('\n');
    assert.match(text, /\| chartpilot \| 128 \| 120\.4 \| 88\.2 \| 0 \| yes \|/);
    assert.match(text, /\| operator-sdk \| 128 \| 120\.4 \| 88\.2 \| 1 \| NO \|/);
    assert.doesNotMatch(text, /\| floor \|/);
    assert.deepEqual(cgroupSection([{ name: 'floor', status: 'ok', scenarios: [] }], 20), []);
  });
});
