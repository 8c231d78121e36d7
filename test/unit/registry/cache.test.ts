import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ChartCache } from '../../../src/registry/cache.js';

async function cacheDir(t: { after: (fn: () => Promise<void>) => void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'chart-cache-test-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

describe('chart cache', () => {
  it('stores an archive once under its own digest, privately', async (t) => {
    const cache = new ChartCache(await cacheDir(t));
    const bytes = Buffer.from('a chart archive');
    const digest = await cache.put(bytes);
    assert.equal(digest, `sha256:${createHash('sha256').update(bytes).digest('hex')}`);
    assert.equal(await cache.put(bytes), digest, 'the same content has the same name');
    assert.deepEqual(await readFile(cache.blobPath(digest)), bytes);
    assert.equal((await stat(cache.blobPath(digest))).mode & 0o777, 0o600);
    assert.equal(await cache.has(digest), true);
    assert.equal(await cache.has(`sha256:${'0'.repeat(64)}`), false);
  });

  it('forgets an archive whose content no longer matches its name', async (t) => {
    const cache = new ChartCache(await cacheDir(t));
    const digest = await cache.put(Buffer.from('good'));
    await writeFile(cache.blobPath(digest), 'damaged');
    assert.equal(await cache.has(digest), false);
    await assert.rejects(stat(cache.blobPath(digest)));
  });

  it('remembers which version of which reference is which archive, per reference', async (t) => {
    const dir = await cacheDir(t);
    const cache = new ChartCache(dir);
    await cache.remember('oci://r/c/web', { version: '1.0.0', announced: 'sha256:m1', blob: 'sha256:b1' });
    await cache.remember('oci://r/c/web', { version: '1.1.0', announced: 'sha256:m2', blob: 'sha256:b2' });
    await cache.remember('oci://r/c/web', { version: '1.1.0', announced: 'sha256:m2', blob: 'sha256:b2' });
    await cache.remember('https://charts.example.com/ web', { version: '1.0.0', announced: undefined, blob: 'sha256:b3' });
    // A new process on the same directory sees the same records.
    const again = new ChartCache(dir);
    assert.deepEqual((await again.recall('oci://r/c/web')).map((v) => v.version), ['1.0.0', '1.1.0']);
    assert.deepEqual(await again.recall('https://charts.example.com/ web'), [{ version: '1.0.0', blob: 'sha256:b3' }]);
    assert.deepEqual(await again.recall('oci://r/c/other'), []);
  });
});
