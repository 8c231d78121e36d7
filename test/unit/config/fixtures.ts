/** Locates test/fixtures/watches whether tests run from dist/ (compiled) or from the sources. */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function find(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, 'test', 'fixtures', 'watches');
    if (existsSync(candidate)) return candidate;
    const parent = dirname(dir);
    if (parent === dir) throw new Error('test/fixtures/watches not found above ' + fileURLToPath(import.meta.url));
    dir = parent;
  }
}

export const WATCH_FIXTURES = find();
