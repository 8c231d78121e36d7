/**
 * Fixtures captured from a real control plane (Kubernetes 1.33, Helm 4.1.4, charts/webapp
 * installed as release web2 with quantities the API server rewrites). Found whether tests run from
 * dist/ (compiled) or from the sources.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KubeObject } from '../../../src/kube/types.js';

function find(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, 'test', 'unit', 'dependents', 'fixtures');
    if (existsSync(candidate)) return candidate;
    const parent = dirname(dir);
    if (parent === dir) throw new Error('test/unit/dependents/fixtures not found above ' + fileURLToPath(import.meta.url));
    dir = parent;
  }
}

export const FIXTURES = find();

// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- the caller names the shape the fixture has
export function fixtureJson<T = KubeObject>(name: string): T {
  return JSON.parse(readFileSync(join(FIXTURES, name), 'utf8')) as T;
}
