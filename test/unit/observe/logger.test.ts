import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';

const LOGGER = new URL('../../../src/observe/logger.js', import.meta.url).href;

describe('the JSON log', () => {
  it('keeps every line logged before a SIGKILL (no line waits in a buffer)', () => {
    // A child that logs, then dies the way an OOM kill ends it: no exit handler runs.
    const script = `
      const { createLogger, logDestination } = await import(${JSON.stringify(LOGGER)});
      const log = createLogger('info', await logDestination('json'));
      for (let i = 0; i < 200; i++) log.info({ i }, 'line');
      process.kill(process.pid, 'SIGKILL');
    `;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    assert.equal(child.signal, 'SIGKILL', child.stderr);
    const lines = child.stdout.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as { i: number; msg: string });
    assert.equal(lines.length, 200);
    assert.deepEqual(lines.map((l) => l.i), Array.from({ length: 200 }, (_, i) => i));
  });
});
