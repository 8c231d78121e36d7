import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';

import { VALUES_DIR_PREFIX, withValuesFile } from '../../../src/helm/values-file.js';

describe('withValuesFile', () => {
  it('values are written as JSON to a 0600 file in a 0700 directory, removed afterwards', async (t) => {
    const base = await mkdtemp(join(tmpdir(), 'chartpilot-values-test-'));
    t.after(() => rm(base, { recursive: true, force: true }));
    const values = { password: 'hunter2-secret', nested: { list: [1, 'two', null] }, quote: 'a "b" \'c\' \n' };
    let seen = '';
    const result = await withValuesFile(values, async (file) => {
      seen = file;
      assert.ok(dirname(file).startsWith(join(base, VALUES_DIR_PREFIX)));
      assert.equal((await stat(file)).mode & 0o777, 0o600);
      assert.equal((await stat(dirname(file))).mode & 0o777, 0o700);
      assert.deepEqual(JSON.parse(await readFile(file, 'utf8')), values);
      return 42;
    }, base);
    assert.equal(result, 42);
    assert.notEqual(seen, '');
    assert.deepEqual(await readdir(base), []);
  });

  it('the values directory is removed when the callback throws', async (t) => {
    const base = await mkdtemp(join(tmpdir(), 'chartpilot-values-test-'));
    t.after(() => rm(base, { recursive: true, force: true }));
    await assert.rejects(withValuesFile({ a: 1 }, () => Promise.reject(new Error('helm died')), base), /helm died/);
    assert.deepEqual(await readdir(base), []);
  });
});
