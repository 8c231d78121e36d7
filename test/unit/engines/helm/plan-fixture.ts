// The plan's input for unit tests: a converged release unless told otherwise.
import { NO_PROGRESS, type PlanInput } from '../../../../src/engines/helm/plan.js';
import type { StoredRevision } from '../../../../src/core/model.js';

export const START = Date.parse('2026-01-01T10:00:00Z');
/** The Secrets' resourceVersion when this process started. */
export const STARTED_AT_REVISION = '1000';
/** What the CR asks for; a revision carries it unless told otherwise. */
export const DESIRED = 'fp-current';

export function rev(revision: number, status: string, extra: Partial<StoredRevision> = {}): StoredRevision {
  return {
    revision,
    status,
    fingerprint: DESIRED,
    ownerKind: 'WebApp.apps.example.com',
    createdAt: new Date(START - 60_000).toISOString(),
    secretName: `sh.helm.release.v1.demo.v${String(revision)}`,
    ...extra,
  };
}

export function input(overrides: Partial<PlanInput> = {}): PlanInput {
  return {
    deleting: false,
    hasFinalizer: true,
    paused: false,
    uninstallWait: false,
    problem: undefined,
    serviceAccountMissing: false,
    desiredFingerprint: DESIRED,
    ownerKind: 'WebApp.apps.example.com',
    revisions: [],
    foreignRevisions: [],
    inventory: [],
    canCheckObjects: true,
    serverNow: START + 10_000,
    startedAtRevision: STARTED_AT_REVISION,
    helmTimeoutMs: 300_000,
    stoppedCalls: new Set<string>(),
    statusRevision: undefined,
    progress: NO_PROGRESS,
    ...overrides,
  };
}
