/**
 * Every file in test/fixtures/watches/bad is a broken watches.yaml. Each declares, in comments,
 * the message fragments a user must see (`# expect: …`) and optionally how many problems in all
 * (`# problems: N`), so adding a case is adding a file.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadWatches } from '../../../src/config/watches.js';
import { WATCH_FIXTURES } from './fixtures.js';

const BAD = join(WATCH_FIXTURES, 'bad');
const files = readdirSync(BAD).filter((f) => f.endsWith('.yaml')).sort();

describe('broken watches.yaml corpus', () => {
  it('bad watches.yaml corpus', async (t) => {
    assert.ok(files.length >= 30, `only ${files.length} cases in ${BAD}`);

    for (const file of files) {
      await t.test(file, async () => {
        const path = join(BAD, file);
        const text = readFileSync(path, 'utf8');
        const expects = [...text.matchAll(/^# expect: (.*)$/gmu)].map((m) => m[1] ?? '');
        const count = /^# problems: (\d+)$/mu.exec(text)?.[1];
        assert.ok(expects.length > 0, `${file} declares no "# expect:" line, so it would test nothing`);

        const result = await loadWatches(path, { TAG: 'v1' });
        assert.equal(result.ok, false, `${file} loaded without problems`);
        for (const fragment of expects) {
          assert.ok(
            result.problems.some((p) => p.includes(fragment)),
            `${file}: no problem contains\n  ${fragment}\nproblems were:\n  ${result.problems.join('\n  ')}`,
          );
        }
        if (count !== undefined) assert.equal(result.problems.length, Number(count), result.problems.join('\n'));
        for (const p of result.problems) assert.ok(!p.includes('\n'), `a problem spans lines: ${p}`);
      });
    }
  });
});
