// One chart entry of watches.yaml with more keys appended, parsed as the operator parses it: for
// tests of one key's reader (driftDetection, valuesFrom, …).
import assert from 'node:assert/strict';
import { parseWatches, type LoadResult } from '../../../src/config/watches.js';
import type { WatchEntry } from '../../../src/config/types.js';

export function parse(text: string): Promise<LoadResult> {
  return parseWatches(text, '/opt/helm', {}, () => Promise.resolve(undefined));
}

/** Lines 1-4 of the file; what a test appends starts on line 5. */
export const HEAD = `- group: demo.example.com
  version: v1alpha1
  kind: Web
  chart: helm-charts/web
`;

/** The entry HEAD + `more` gives, asserting it loads. */
export async function entry(more: string): Promise<WatchEntry> {
  const r = await parse(HEAD + more);
  assert.ok(r.ok, r.ok ? '' : r.problems.join('\n'));
  const [e] = r.entries;
  assert.ok(e);
  return e;
}

/** The problems HEAD + `more` gives, asserting there are some. */
export async function problems(more: string): Promise<string[]> {
  const r = await parse(HEAD + more);
  if (r.ok) assert.fail('expected problems');
  return r.problems;
}
