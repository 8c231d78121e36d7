/** Locates test/fixtures/ansible whether tests run from dist/ (compiled) or from the sources. */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function find(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, 'test', 'fixtures', 'ansible');
    if (existsSync(candidate)) return candidate;
    const parent = dirname(dir);
    if (parent === dir) throw new Error('test/fixtures/ansible not found above ' + fileURLToPath(import.meta.url));
    dir = parent;
  }
}

export const ANSIBLE_FIXTURES = find();
