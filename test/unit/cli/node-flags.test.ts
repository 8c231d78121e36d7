// The operator's V8 flags are spelled out where no code can supply them (the image's ENTRYPOINT and
// the bin shebang); they must stay the same list as the one the demo, bench and harness pass.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { OPERATOR_NODE_FLAGS } from '../../../src/cli/node-flags.js';
import { repoRoot } from '../../../devcluster/paths.js';

describe('operator V8 flags', () => {
  it('the Dockerfile ENTRYPOINT runs node with the operator flags', () => {
    const dockerfile = readFileSync(join(repoRoot(), 'Dockerfile'), 'utf8');
    const entrypoint = /^ENTRYPOINT (\[.*\])$/m.exec(dockerfile)?.[1];
    assert.ok(entrypoint !== undefined, 'Dockerfile has an exec-form ENTRYPOINT');
    assert.deepEqual(JSON.parse(entrypoint), ['node', ...OPERATOR_NODE_FLAGS, '/opt/chartpilot/bin/chartpilot.js', 'run']);
  });

  it('the bin shebang runs node with the operator flags', () => {
    const first = readFileSync(join(repoRoot(), 'bin', 'chartpilot.js'), 'utf8').split('\n')[0];
    assert.equal(first, `#!/usr/bin/env -S node ${OPERATOR_NODE_FLAGS.join(' ')}`);
  });

  it('node starts with the flags and really applies them', () => {
    // A misspelt V8 flag is only a warning on stderr, so check the effect of the semi-space one too.
    const r = spawnSync(process.execPath, [...OPERATOR_NODE_FLAGS, '-p', "require('node:v8').getHeapStatistics().heap_size_limit"], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stderr, '');
    for (const flag of OPERATOR_NODE_FLAGS) assert.match(flag, /^--[a-z-]+(=\d+)?$/);
    const semi = spawnSync(process.execPath, [...OPERATOR_NODE_FLAGS, '-e', `
    const v8 = require('node:v8'); const keep = []; let peak = 0;
    for (let i = 0; i < 400; i++) { keep.push(new Array(2000).fill(i)); if (keep.length > 50) keep.shift();
      peak = Math.max(peak, v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size); }
    console.log(peak);`], { encoding: 'utf8' });
    assert.equal(semi.status, 0, semi.stderr);
    assert.ok(Number(semi.stdout) <= 3 * 4 * 1024 * 1024, `new space stays within the 4 MiB semi-space setting (${semi.stdout.trim()} bytes)`);
  });
});
