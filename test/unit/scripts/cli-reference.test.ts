/** docs/operations/cli.md is what `npm run docs:cli` (scripts/cli-reference.ts) writes from the commands themselves. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { CLI_REFERENCE_PATH, cliReference } from '../../../scripts/cli-reference.js';
import { RUN_FLAGS, RUN_HELP } from '../../../src/cli/args.js';
import { packageRoot } from '../../../src/lib/package-root.js';

describe('the CLI reference', () => {
  it('is committed as the flag table and the commands\' --help make it today (else: npm run docs:cli)', async () => {
    const committed = readFileSync(join(packageRoot(), CLI_REFERENCE_PATH), 'utf8');
    const generated = await cliReference();
    if (committed === generated) return;
    // Name the first line that differs rather than dumping two pages of Markdown.
    const a = committed.split('\n');
    const b = generated.split('\n');
    const at = a.findIndex((line, i) => line !== b[i]);
    const line = at === -1 ? Math.min(a.length, b.length) : at;
    assert.fail(
      `${CLI_REFERENCE_PATH} differs from what the commands say, from line ${String(line + 1)}:\n` +
        `  committed: ${a[line] ?? '(end of file)'}\n  generated: ${b[line] ?? '(end of file)'}\n` +
        'run `npm run docs:cli` and commit the page with the change that moved it',
    );
  });

  it('has a row for every flag `chartpilot run --help` advertises, and no other', async () => {
    const page = await cliReference();
    const inHelp = [...RUN_HELP.matchAll(/^ {2}(?:-\w, )?--([a-z0-9-]+)/gmu)].map((m) => m[1]);
    const inPage = [...page.matchAll(/^\| `(?:-\w, )?--([a-z0-9-]+)`/gmu)].map((m) => m[1]);
    assert.ok(inHelp.length > 10, `found only ${String(inHelp.length)} flags in run --help`);
    assert.deepEqual(inPage, inHelp);
    // Every advertised flag of the table is in both (a flag without help text is in neither).
    assert.deepEqual(inHelp, RUN_FLAGS.filter((d) => 'help' in d).map((d) => d.name));
  });

  it('carries each generator\'s own --help, so a new generator gets a section', async () => {
    const page = await cliReference();
    for (const g of ['crd', 'rbac', 'deploy', 'sample', 'all', 'bundle', 'catalog', 'monitoring']) {
      assert.match(page, new RegExp(`^### generate ${g}\\n\\n\`\`\`text\\nUsage: chartpilot generate ${g} `, 'mu'), g);
    }
  });
});
