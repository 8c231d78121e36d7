import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { execa } from 'execa';
import { docCommandBlocks, docCommandScript } from '../../integration/doc-commands.js';

const fence = '```';
const page = (...parts: string[]): string => parts.join('\n\n');
const block = (info: string, text: string): string => `${fence}${info}\n${text}\n${fence}`;

const dirs: string[] = [];
after(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

/** Runs a page's script in a fresh directory, as getting-started.test.ts does. */
async function runPage(markdown: string): Promise<{ exitCode: number; stderr: string; secondTerminal: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'doc-commands-'));
  dirs.push(dir);
  const log = join(dir, 'second-terminal.log');
  const r = await execa('bash', ['-c', docCommandScript('page.md', docCommandBlocks(markdown))], {
    cwd: dir,
    env: { SECOND_TERMINAL_LOG: log },
    reject: false,
    timeout: 20_000,
  });
  let secondTerminal = '';
  try { secondTerminal = readFileSync(log, 'utf8'); } catch { /* no second terminal */ }
  return { exitCode: r.exitCode ?? -1, stderr: r.stderr, secondTerminal };
}

describe('a doc page\'s commands', () => {
  it('are its sh blocks in page order, with their marks; text, console and yaml blocks are not run', () => {
    const blocks = docCommandBlocks(page(
      '# A page',
      block('sh', 'echo one'),
      block('text', 'NAME  READY'),
      block('console', 'npm run cluster:up'),
      block('sh second-terminal', 'chartpilot run'),
      '- a list\n\n  ' + block('sh', 'echo in a list').replace(/\n/gu, '\n  '),
      block('sh after-ctrl-c', 'echo last'),
    ));
    assert.deepEqual(blocks.map((b) => [b.text, b.secondTerminal, b.afterCtrlC]), [
      ['echo one', false, false],
      ['chartpilot run', true, false],
      ['echo in a list', false, false],
      ['echo last', false, true],
    ]);
    assert.equal(blocks[0]?.line, 3);
  });

  it('refuse a mark they do not know, rather than run the block the wrong way', () => {
    assert.throws(() => docCommandBlocks(block('sh second-termnal', 'x')), /unknown mark second-termnal/u);
  });

  it('run in one shell: a cd or an export carries on to the next block, the second terminal included', async () => {
    const r = await runPage(page(
      block('sh', 'mkdir work && cd work\nexport GREETING=hello'),
      block('sh second-terminal', 'trap \'echo "stopped in $PWD"; exit 0\' INT\necho "$GREETING from $(basename "$PWD")"\nwhile true; do sleep 0.05; done'),
      block('sh', 'sleep 0.3; test "$(basename "$PWD")" = work'),
      block('sh after-ctrl-c', 'echo cleaned up'),
    ));
    assert.equal(r.exitCode, 0, r.stderr);
    assert.match(r.secondTerminal, /^hello from work\nstopped in .*\/work\n$/u);
    assert.match(r.stderr, /### the second terminal's command exited 0 after Ctrl-C[\s\S]*### page\.md:\d+\n[\s\S]*cleaned up[\s\S]*### every block ran/u);
  });

  it('stop at the first command that fails, naming its block', async () => {
    const r = await runPage(page(block('sh', 'echo first'), block('sh', 'true\nfalse\necho not reached'), block('sh', 'echo nor this')));
    assert.notEqual(r.exitCode, 0);
    assert.match(r.stderr, /### page\.md:5\n/u);
    assert.doesNotMatch(r.stderr, /not reached|nor this|every block ran/u);
  });

  it('fail when the second terminal\'s command does not exit 0 on Ctrl-C', async () => {
    const r = await runPage(page(
      block('sh second-terminal', 'trap \'exit 3\' INT\nwhile true; do sleep 0.05; done'),
      block('sh', 'sleep 0.3'),
      block('sh after-ctrl-c', 'echo cleaned up'),
    ));
    assert.notEqual(r.exitCode, 0);
    assert.match(r.stderr, /exited 3 after Ctrl-C/u);
    assert.doesNotMatch(r.stderr, /cleaned up/u);
  });

  it('stop the second terminal\'s process when a later block fails', async () => {
    const r = await runPage(page(
      block('sh second-terminal', 'trap \'echo stopped; exit 0\' INT\nwhile true; do sleep 0.05; done'),
      block('sh', 'sleep 0.3; false'),
    ));
    assert.notEqual(r.exitCode, 0);
    assert.equal(r.secondTerminal, 'stopped\n');
  });
});
