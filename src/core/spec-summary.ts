/**
 * A spec's digest and size: the CR cache keeps these instead of the spec (memory stays bounded by
 * the number of CRs, not by what tenants put in them), and the reconciler reads a spec in full only
 * when a release must be installed or upgraded from it.
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from '../lib/json.js';
import type { SpecSummary } from './model.js';

export function summarizeSpec(spec: unknown): SpecSummary {
  let json: string;
  try {
    json = canonicalJson(spec ?? null);
  } catch {
    // e.g. nested too deeply to serialize: the reconcile reads the spec and says what is wrong.
    return { digest: '', bytes: 0 };
  }
  return { digest: createHash('sha256').update(json).digest('hex'), bytes: Buffer.byteLength(json) };
}
