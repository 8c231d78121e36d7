// The operator's V8 flags are spelled out where no code can supply them (the image's ENTRYPOINT and
// the bin shebang); they must stay the same list as the one the demo, bench and harness pass.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { OPERATOR_NODE_FLAGS } from '../../../src/cli/node-flags.js';
import { repoRoot } from '../../cluster/paths.js';

void test('the Dockerfile ENTRYPOINT runs node with the operator flags', () => {
  const dockerfile = readFileSync(join(repoRoot(), 'Dockerfile'), 'utf8');
  const entrypoint = /^ENTRYPOINT (\[.*\])$/m.exec(dockerfile)?.[1];
  assert.ok(entrypoint !== undefined, 'Dockerfile has an exec-form ENTRYPOINT');
  assert.deepEqual(JSON.parse(entrypoint), ['node', ...OPERATOR_NODE_FLAGS, '/opt/chartpilot/bin/chartpilot.js']);
});

void test('the bin shebang runs node with the operator flags', () => {
  const first = readFileSync(join(repoRoot(), 'bin', 'chartpilot.js'), 'utf8').split('\n')[0];
  assert.equal(first, `#!/usr/bin/env -S node ${OPERATOR_NODE_FLAGS.join(' ')}`);
});

void test('every flag is one V8 option node accepts', () => {
  for (const flag of OPERATOR_NODE_FLAGS) {
    assert.match(flag, /^--[a-z-]+=\d+$/);
    assert.ok(process.allowedNodeEnvironmentFlags.has(flag.split('=')[0] ?? ''), `${flag} is a known node/V8 flag`);
  }
});
