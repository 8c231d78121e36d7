// The start-up warning for a memory limit below chartpilot's measured need (operator-sdk's scaffold: 128Mi).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { memoryLimit, memoryNeed, memoryWarning, type ReadText } from '../../../src/cli/memory-limit.js';

const files = (map: Record<string, string>): ReadText => (p) => Promise.resolve(map[p]);
const MIB = 1024 * 1024;

describe('the memory limit', () => {
  it('is cgroup v2 memory.max, in the container (cgroup namespace) or at the host path', async () => {
    assert.equal(await memoryLimit(files({ '/proc/self/cgroup': '0::/\n', '/sys/fs/cgroup/memory.max': '134217728\n' })), 128 * MIB);
    assert.equal(await memoryLimit(files({ '/proc/self/cgroup': '0::/kubepods/pod1/c1\n', '/sys/fs/cgroup/kubepods/pod1/c1/memory.max': '268435456\n' })), 256 * MIB);
    assert.equal(await memoryLimit(files({ '/proc/self/cgroup': '0::/\n', '/sys/fs/cgroup/memory.max': 'max\n' })), undefined);
  });

  it("is cgroup v1 memory.limit_in_bytes, where /proc/self/cgroup names the host's path and the container mounts its own", async () => {
    const proc = '12:pids:/x\n4:memory:/libpod_parent/libpod-abc\n0::/\n';
    assert.equal(await memoryLimit(files({ '/proc/self/cgroup': proc, '/sys/fs/cgroup/memory/memory.limit_in_bytes': '134217728\n' })), 128 * MIB);
    assert.equal(await memoryLimit(files({ '/proc/self/cgroup': proc, '/sys/fs/cgroup/memory/libpod_parent/libpod-abc/memory.limit_in_bytes': '83886080' })), 80 * MIB);
    // No limit: v1 writes 2^63-1 rounded down to a page.
    assert.equal(await memoryLimit(files({ '/proc/self/cgroup': proc, '/sys/fs/cgroup/memory/memory.limit_in_bytes': '9223372036854771712\n' })), undefined);
  });

  it('is none where nothing can be read', async () => {
    assert.equal(await memoryLimit(files({})), undefined);
    assert.equal(await memoryLimit(files({ '/proc/self/cgroup': '0::/\n' })), undefined);
  });
});

describe('the warning', () => {
  it("names the limit, the need and the fix under operator-sdk's 128Mi with one or two helm processes", () => {
    assert.equal(
      memoryWarning(128 * MIB, memoryNeed(1)),
      "the container's memory limit (128 MiB) is below what chartpilot needs here, about 155 MiB (the operator ~100 MiB and one helm process ~55 MiB, their binaries' pages included): it may thrash or be OOM-killed under load; raise resources.limits.memory to at least 192Mi (operator-sdk's scaffold sets 128Mi), or lower --max-concurrent-reconciles/--helm-workers",
    );
    assert.match(memoryWarning(128 * MIB, memoryNeed(2)) ?? '', /about 210 MiB .*up to 2 helm processes .*at least 256Mi/u);
  });

  it('is not given with enough memory, or no limit', () => {
    assert.equal(memoryWarning(256 * MIB, memoryNeed(2)), undefined);
    assert.equal(memoryWarning(155 * MIB, memoryNeed(1)), undefined);
    assert.equal(memoryWarning(undefined, memoryNeed(8)), undefined);
  });
});
