/**
 * Builds an ActionContext for one action module's tests: a WebApp CR `ns1/demo`, its target, the
 * derived options and values, and recording fakes of every port (test/unit/fakes/reconcile-ports).
 */
import { applyOverrides } from '../../../../../src/config/overrides.js';
import { ActionContext, type FailedDeploy, type ReconcilerDeps, type StepResult } from '../../../../../src/engines/helm/actions/context.js';
import { type ReconcileOutcome } from '../../../../../src/core/outcome.js';
import { parseCrOptions, type CrOptions } from '../../../../../src/engines/helm/annotations.js';
import type { Condition, CrStatus, CustomResource, StoredRevision } from '../../../../../src/core/model.js';
import { FINALIZER } from '../../../../../src/engines/helm/names.js';
import { NO_PROGRESS, type Progress } from '../../../../../src/engines/helm/plan.js';
import { tenantOf } from '../../../../../src/core/tenant.js';
import type { ReconcileTarget } from '../../../../../src/engines/helm/target.js';
import { capturingLogger, FakeKeeper, RecordingEvents, RecordingHelm, RecordingStore, RecordingWriter } from '../../../fakes/reconcile-ports.js';

export const NOW = Date.parse('2026-01-01T10:00:00Z');
export const HELM_TIMEOUT_MS = 300_000;
export const HISTORY_MAX = 10;
export const DESIRED_FINGERPRINT = 'fp-desired';
export const PERIOD_MS = 60_000;

export const TARGET: ReconcileTarget = {
  ownerKind: 'WebApp.apps.example.com',
  chartPath: '/charts/webapp',
  chartDigest: 'digest-1',
  overrides: {},
  reconcilePeriodMs: PERIOD_MS,
  watchDependentResources: true,
  allowClusterScoped: false,
  allowCrossNamespace: false,
  serviceAccount: undefined,
};

export const DEFAULT_OPTIONS: CrOptions = (() => {
  const parsed = parseCrOptions({});
  if (!parsed.ok) throw new Error('no annotations must parse');
  return parsed.options;
})();

export function webApp(metadata: Partial<CustomResource['metadata']> = {}, status?: CrStatus): CustomResource {
  return {
    apiVersion: 'apps.example.com/v1',
    kind: 'WebApp',
    metadata: { name: 'demo', namespace: 'ns1', uid: 'uid-1', generation: 3, resourceVersion: '7', finalizers: [FINALIZER], ...metadata },
    spec: { replicas: 2 },
    ...(status === undefined ? {} : { status }),
  };
}

export function storedRevision(revision: number, status: string, extra: Partial<StoredRevision> = {}): StoredRevision {
  return {
    revision,
    status,
    fingerprint: DESIRED_FINGERPRINT,
    ownerKind: TARGET.ownerKind,
    createdAt: new Date(NOW - 60_000).toISOString(),
    secretName: `sh.helm.release.v1.demo.v${revision}`,
    ...extra,
  };
}

export interface FixtureOptions {
  readonly cr?: CustomResource;
  readonly target?: Partial<ReconcileTarget>;
  /** Annotation-derived options over the defaults; `null` → the annotations were invalid. */
  readonly options?: Partial<CrOptions> | null;
  readonly values?: Record<string, unknown>;
  /** How a successful reconcile requeues; the target's period by default. */
  readonly requeue?: ReconcileOutcome;
  /** false → no keeper (dependents not kept). */
  readonly keeper?: boolean;
  readonly suppressOverrideValues?: boolean;
  readonly onDriftRepaired?: ReconcilerDeps['onDriftRepaired'];
  readonly progress?: Partial<Progress>;
  readonly failure?: FailedDeploy;
}

export interface Fixture {
  readonly ctx: ActionContext;
  readonly helm: RecordingHelm;
  readonly releases: RecordingStore;
  readonly writer: RecordingWriter;
  readonly events: RecordingEvents;
  readonly keeper: FakeKeeper;
  /** Everything logged, as one string. */
  readonly logged: () => string;
}

export function actionContext(o: FixtureOptions = {}): Fixture {
  const helm = new RecordingHelm();
  const releases = new RecordingStore();
  const writer = new RecordingWriter();
  const events = new RecordingEvents();
  const keeper = new FakeKeeper();
  const { log, text } = capturingLogger();
  const deps: ReconcilerDeps = {
    helm,
    releases,
    writer,
    events,
    clock: { now: () => NOW },
    helmTimeoutMs: HELM_TIMEOUT_MS,
    server: { clock: { now: () => NOW }, startedAtRevision: '100' },
    historyMax: HISTORY_MAX,
    keeper: o.keeper === false ? undefined : keeper,
    suppressOverrideValues: o.suppressOverrideValues,
    onDriftRepaired: o.onDriftRepaired,
    applyOverrides,
  };
  const target = { ...TARGET, ...o.target };
  const cr = o.cr ?? webApp();
  const ctx = new ActionContext(
    deps,
    target,
    cr,
    {
      crOptions: o.options === null ? undefined : { ...DEFAULT_OPTIONS, ...o.options },
      values: o.values ?? { replicas: 2 },
      problem: undefined,
      desiredFingerprint: DESIRED_FINGERPRINT,
      requeue: o.requeue ?? { requeueAfterMs: PERIOD_MS },
      tenant: tenantOf(target, cr.metadata.namespace ?? 'default'),
    },
    log,
    { ...NO_PROGRESS, ...o.progress },
  );
  ctx.failure = o.failure;
  return { ctx, helm, releases, writer, events, keeper, logged: text };
}

/**
 * An action's result taken through the reconcile's exit, as the reconciler does: a step that ends
 * the reconcile has its status written and its failure thrown here, never inside the action.
 */
export async function settle(ctx: ActionContext, step: StepResult | Promise<StepResult>): Promise<StepResult> {
  const result = await step;
  return result.done ? { done: true, outcome: await ctx.finish(result) } : result;
}

/** The condition of `type` in the last status written, failing the test when there is none. */
export function writtenCondition(writer: RecordingWriter, type: string): Condition {
  const condition = writer.last?.conditions?.find((c) => c.type === type);
  if (condition === undefined) throw new Error(`no ${type} condition was written (statuses: ${JSON.stringify(writer.statuses)})`);
  return condition;
}

/** The Reconciling condition each written status held ('-' where it had none), as status/reason/message. */
export function reconcilingWrites(writer: RecordingWriter): string[] {
  return writer.statuses.map((st) => {
    const c = st.conditions?.find((x) => x.type === 'Reconciling');
    return c === undefined ? '-' : `${c.status}/${c.reason}/${c.message}`;
  });
}

/** A condition as the status shows it, without the bookkeeping fields. */
export function conditionSummary(c: Condition): { status: string; reason: string; message: string } {
  return { status: c.status, reason: c.reason, message: c.message };
}
