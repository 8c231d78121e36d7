// A doc page's commands as a reader types them: its ```sh blocks, in order, turned into one bash
// script (getting-started.test.ts runs the getting-started pages with it). The page marks the
// two steps a script cannot type like a reader:
//
//   ```sh second-terminal   the reader runs it in a second terminal and leaves it running: the
//                           script starts it in the background, in its own process group (as a
//                           terminal's foreground job), with the cwd and environment the script
//                           has at that point, its output in $SECOND_TERMINAL_LOG
//   ```sh after-ctrl-c      the reader has pressed Ctrl-C in the second terminal first: the script
//                           sends that process group SIGINT, waits, and fails unless it exited 0
//
// Any other fence (```text, ```console, ```yaml …) is not run. Parsing is mdast-util-from-markdown's
// (the parser remark, and so the docs' link check, uses), so a block is what a Markdown reader
// renders as one.
import type { Code, Root, RootContent } from 'mdast';
import { fromMarkdown } from 'mdast-util-from-markdown';

export interface DocCommandBlock {
  /** The block's text, as the page shows it. */
  readonly text: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
  readonly secondTerminal: boolean;
  readonly afterCtrlC: boolean;
}

const MARKS = new Set(['second-terminal', 'after-ctrl-c']);

function codeNodes(node: Root | RootContent): Code[] {
  if (node.type === 'code') return [node];
  return 'children' in node ? node.children.flatMap((child) => codeNodes(child)) : [];
}

/** The page's ```sh blocks in page order; a mark the script does not know is an error, not ignored. */
export function docCommandBlocks(markdown: string): DocCommandBlock[] {
  return codeNodes(fromMarkdown(markdown))
    .filter((c) => c.lang === 'sh')
    .map((c) => {
      const marks = (c.meta ?? '').split(/\s+/u).filter((m) => m !== '');
      const unknown = marks.filter((m) => !MARKS.has(m));
      const line = c.position?.start.line ?? 0;
      if (unknown.length > 0) throw new Error(`line ${String(line)}: unknown mark ${unknown.join(' ')} on a sh block (known: ${[...MARKS].join(', ')})`);
      return { text: c.value, line, secondTerminal: marks.includes('second-terminal'), afterCtrlC: marks.includes('after-ctrl-c') };
    });
}

/**
 * One bash script running the blocks in order: it stops at the first command that fails (set -e,
 * pipefail), traces each command to stderr (set -x) after a `### <page>:<line>` marker per block,
 * and stops a second terminal's process that is still running when it ends.
 */
export function docCommandScript(page: string, blocks: readonly DocCommandBlock[]): string {
  if (blocks.length === 0) throw new Error(`${page} has no sh block`);
  const terminals = blocks.filter((b) => b.secondTerminal).length;
  const stops = blocks.filter((b) => b.afterCtrlC).length;
  if (terminals > 1 || stops > terminals) throw new Error(`${page}: at most one second-terminal block, and after-ctrl-c only after it`);
  const lines = [
    'set -euo pipefail',
    // Job control: a background job gets its own process group, as a terminal's job does, and
    // SIGINT is not ignored in it (bash ignores it in the background jobs of a plain script).
    'set -m',
    'second_terminal=',
    'stop_second_terminal() {',
    '  [[ -n $second_terminal ]] || return 0',
    '  kill -INT -- "-$second_terminal" 2>/dev/null || true',
    '  local rc=0',
    '  wait "$second_terminal" || rc=$?',
    '  second_terminal=',
    '  echo "### the second terminal\'s command exited $rc after Ctrl-C" >&2',
    '  return "$rc"',
    '}',
    'trap \'stop_second_terminal || true\' EXIT',
  ];
  for (const b of blocks) {
    const where = `${page}:${String(b.line)}`;
    if (b.afterCtrlC) lines.push(`echo '### Ctrl-C in the second terminal (before ${where})' >&2`, 'stop_second_terminal');
    lines.push(`echo '### ${where}${b.secondTerminal ? ' (second terminal, in the background)' : ''}' >&2`);
    if (b.secondTerminal) {
      lines.push('(', b.text, ') >"$SECOND_TERMINAL_LOG" 2>&1 &', 'second_terminal=$!');
    } else {
      lines.push('set -x', b.text, '{ set +x; } 2>/dev/null');
    }
  }
  lines.push("echo '### every block ran' >&2", '');
  return lines.join('\n');
}
