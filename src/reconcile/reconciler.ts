/**
 * One reconcile of one custom resource: observe, plan (pure), act, repeat until the plan is done,
 * then write the status once. Side effects go through the ports, so this runs unchanged against
 * fakes in unit tests and against the real cluster and helm in integration tests.
 */
import type { Logger } from 'pino';
import { HelmError, type HelmClient, type HelmRelease, type PostRenderSpec } from '../helm/types.js';
import { parseCrOptions, type CrOptions } from './annotations.js';
import { canonicalJson, fingerprint } from './fingerprint.js';
import {
  FINALIZER,
  LEGACY_FINALIZER,
  OWNER_UID_LABEL,
  PRIMARY_RESOURCE_ANNOTATION,
  PRIMARY_RESOURCE_TYPE_ANNOTATION,
  Reasons,
  ReleaseLabels,
  releaseNameProblem,
} from './names.js';
import { latestRevision, plan, type Plan } from './plan.js';
import type { Clock, CrWriter, EventSink, KeepResult, ReleaseKeeperPort, ReleaseStore } from './ports.js';
import { clip, nextStatus, type Outcome, type ReleaseInfo } from './status.js';
import type { CustomResource } from './types.js';
import { mergeValues } from './values.js';
import { errorMessage } from '../lib/errors.js';

/** What a watches entry resolves to right now; replaced as a whole when the chart or entry changes. */
export interface ReconcileTarget {
  /** `Kind.group` of the watched kind. */
  readonly ownerKind: string;
  readonly chartPath: string;
  /** Digest of the chart's content (changes → every CR of the kind upgrades). */
  readonly chartDigest: string;
  /** watches.yaml overrideValues (`--set` paths → strings); keys are named in events, values never. */
  readonly overrides: Readonly<Record<string, string>>;
  /** Periodic requeue; 0 disables it. */
  readonly reconcilePeriodMs: number;
  /** Watch the release's objects: drift repair and readiness (operator-sdk's watchDependentResources). */
  readonly watchDependentResources: boolean;
  /** Confinement: cluster-scoped / other-namespace objects are refused unless allowed. */
  readonly allowClusterScoped: boolean;
  readonly allowCrossNamespace: boolean;
}

export interface ReconcilerOptions {
  readonly helm: HelmClient;
  readonly releases: ReleaseStore;
  readonly writer: CrWriter;
  readonly events: EventSink;
  readonly clock: Clock;
  readonly helmTimeoutMs: number;
  readonly processStartedAt: number;
  readonly historyMax: number;
  readonly target: () => ReconcileTarget;
  /** Drift, readiness and inventory; without it releases are only installed and upgraded. */
  readonly keeper?: ReleaseKeeperPort | undefined;
}

export interface ReconcileResult {
  readonly requeueAfterMs?: number;
}

/** A reconcile that failed after recording why on the CR; the queue retries it with backoff. */
export class ReconcileFailure extends Error {
  override readonly name = 'ReconcileFailure';
  constructor(
    readonly reason: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** How often uninstall-wait looks again for objects still being deleted. */
const UNINSTALL_WAIT_POLL_MS = 2_000;

/** Plans are re-made after each step; a healthy sequence needs at most four (e.g. unlock, clear, install). */
const MAX_STEPS = 6;

function releaseInfo(r: HelmRelease): ReleaseInfo {
  return {
    name: r.name,
    namespace: r.namespace,
    revision: r.revision,
    chartName: r.chartName,
    chartVersion: r.chartVersion,
    appVersion: r.appVersion,
    notes: r.notes,
  };
}

export class Reconciler {
  constructor(private readonly opts: ReconcilerOptions) {}

  async reconcile(initial: CustomResource, log: Logger): Promise<ReconcileResult> {
    const { opts } = this;
    let cr = initial;
    const name = cr.metadata.name;
    const namespace = cr.metadata.namespace ?? 'default';
    const target = opts.target();

    const parsed = parseCrOptions(cr.metadata.annotations);
    const crOptions: CrOptions | undefined = parsed.ok ? parsed.options : undefined;
    const values = mergeValues(cr.spec, target.overrides);
    const problem =
      releaseNameProblem(name) ??
      (parsed.ok ? undefined : parsed.problems.join('; ')) ??
      (values.ok ? undefined : values.problem);
    const desiredFingerprint = fingerprint({
      chartDigest: target.chartDigest,
      values: values.ok ? values.values : null,
      options: {
        ownerUid: cr.metadata.uid ?? '',
        ownerKind: target.ownerKind,
        allowClusterScoped: target.allowClusterScoped,
        allowCrossNamespace: target.allowCrossNamespace,
      },
    });
    const period = crOptions?.reconcilePeriodMs ?? target.reconcilePeriodMs;
    const requeue: ReconcileResult = period > 0 ? { requeueAfterMs: period } : {};

    for (let step = 0; step < MAX_STEPS; step++) {
      const revisions = await opts.releases.revisions(namespace, name);
      const finalizers = cr.metadata.finalizers ?? [];
      const next: Plan = plan({
        deleting: cr.metadata.deletionTimestamp !== undefined,
        hasFinalizer: finalizers.includes(FINALIZER) || finalizers.includes(LEGACY_FINALIZER),
        paused: crOptions?.paused ?? false,
        problem,
        desiredFingerprint,
        ownerKind: target.ownerKind,
        revisions,
        now: opts.clock.now(),
        processStartedAt: opts.processStartedAt,
        helmTimeoutMs: opts.helmTimeoutMs,
        statusRevision: cr.status?.deployedRelease?.revision,
      });
      log.debug({ plan: next.kind, step }, 'planned');

      switch (next.kind) {
        case 'none': {
          if (cr.metadata.deletionTimestamp !== undefined) return {};
          let release: ReleaseInfo | undefined;
          if (next.refreshStatus) {
            const status = await opts.helm.status(name, namespace, opts.helmTimeoutMs);
            release = status === undefined ? undefined : releaseInfo(status);
          }
          const revision = latestRevision(revisions)?.revision;
          const kept = revision === undefined ? undefined : await this.keep(cr, target, { revision, repair: true });
          await this.writeStatus(cr, { kind: 'current', release, kept });
          return requeue;
        }
        case 'paused':
          await this.writeStatus(cr, { kind: 'paused' });
          return {};
        case 'irreconcilable':
        case 'conflict':
          opts.events.emit(cr, 'Warning', Reasons.reconcileError, next.message);
          await this.writeStatus(cr, { kind: 'irreconcilable', message: next.message });
          // Retrying cannot help; a change to the resource (or the chart) triggers the next attempt.
          return {};
        case 'add-finalizer':
          cr = await opts.writer.setFinalizers(cr, [...finalizers, FINALIZER]);
          continue;
        case 'unlock':
          await opts.releases.deleteRevision(namespace, next.revision);
          opts.events.emit(
            cr,
            'Warning',
            'ReleaseUnlocked',
            `revision ${next.revision.revision} was left ${next.revision.status} by an interrupted operation; its lock was removed so the release can proceed`,
          );
          log.warn({ revision: next.revision.revision, status: next.revision.status }, 'removed stale pending revision');
          continue;
        case 'wait-pending':
          log.info({ revision: next.revision.revision, retryAfterMs: next.retryAfterMs }, 'release has an operation in progress');
          return { requeueAfterMs: next.retryAfterMs };
        case 'clear-failed-release':
          await this.uninstall(cr, name, namespace, crOptions, 'failed release cleared before installing again');
          continue;
        case 'install':
        case 'upgrade':
          if (!values.ok || crOptions === undefined) throw new Error('unreachable: plan installs an irreconcilable resource');
          await this.deploy(cr, next.kind, values.values, desiredFingerprint, crOptions, target, log);
          return requeue;
        case 'uninstall':
          await this.uninstall(cr, name, namespace, crOptions, 'resource deleted');
          continue;
        case 'remove-finalizer': {
          // uninstall-wait: the resource stays until every object of its release is really gone
          // (finalizers, terminating pods), so whoever waits on its deletion waits for all of it.
          const inventory = cr.status?.deployedRelease?.inventory ?? [];
          if (crOptions?.uninstallWait === true && opts.keeper !== undefined && inventory.length > 0) {
            const left = await opts.keeper.remaining(inventory);
            if (left.length > 0) {
              const named = left.slice(0, 3).map((i) => `${i.kind} ${i.name}`).join(', ');
              const more = left.length > 3 ? ` and ${left.length - 3} more` : '';
              await this.writeStatus(cr, { kind: 'uninstalling', message: `release uninstalled; waiting for ${named}${more} to be deleted (uninstall-wait)` });
              return { requeueAfterMs: UNINSTALL_WAIT_POLL_MS };
            }
          }
          opts.keeper?.forget(namespace, name);
          await opts.writer.setFinalizers(
            cr,
            finalizers.filter((f) => f !== FINALIZER && f !== LEGACY_FINALIZER),
          );
          return {};
        }
      }
    }
    throw new ReconcileFailure(Reasons.reconcileError, `no stable plan after ${MAX_STEPS} steps`);
  }

  private async deploy(
    cr: CustomResource,
    action: 'install' | 'upgrade',
    values: Record<string, unknown>,
    desiredFingerprint: string,
    crOptions: CrOptions,
    target: ReconcileTarget,
    log: Logger,
  ): Promise<void> {
    const { opts } = this;
    const name = cr.metadata.name;
    const namespace = cr.metadata.namespace ?? 'default';
    const install = action === 'install';
    const started = opts.clock.now();
    let release: HelmRelease;
    try {
      release = await opts.helm.upgradeInstall({
        release: name,
        namespace,
        chart: target.chartPath,
        values,
        timeoutMs: opts.helmTimeoutMs,
        force: !install && crOptions.upgradeForce,
        disableHooks: install ? crOptions.installDisableHooks : crOptions.upgradeDisableHooks,
        description: install ? crOptions.installDescription : crOptions.upgradeDescription,
        historyMax: opts.historyMax,
        releaseLabels: { [ReleaseLabels.fingerprint]: desiredFingerprint, [ReleaseLabels.ownerKind]: target.ownerKind },
        postRender: await this.postRender(cr, target),
      });
    } catch (err) {
      return this.recoverFailedDeploy(cr, action, crOptions, err, log);
    }
    log.info({ action, revision: release.revision, durationMs: opts.clock.now() - started }, 'release deployed');
    opts.events.emit(
      cr,
      'Normal',
      install ? Reasons.installSuccessful : Reasons.upgradeSuccessful,
      `${install ? 'installed' : 'upgraded'} release ${name} to revision ${release.revision} (chart ${release.chartName}-${release.chartVersion})`,
    );
    for (const key of Object.keys(target.overrides)) {
      opts.events.emit(
        cr,
        'Warning',
        'OverrideValuesInUse',
        `chart value "${key}" is set by the operator's watches.yaml overrideValues and wins over the resource's spec`,
      );
    }
    // Caches still show the previous objects right after an upgrade: inventory and readiness
    // now, drift repair on the next quiet pass.
    const kept = await this.keep(cr, target, { revision: release.revision, manifest: release.manifest, repair: false }).catch((err: unknown) => {
      log.warn({ err: errorMessage(err) }, 'deployed, but could not inspect the release objects');
      return undefined;
    });
    await this.writeStatus(cr, { kind: 'deployed', action, release: releaseInfo(release), kept });
  }

  /** Labels every object with its owner; owns what it may, annotates or refuses the rest. */
  private async postRender(cr: CustomResource, target: ReconcileTarget): Promise<PostRenderSpec> {
    const uid = cr.metadata.uid;
    const namespace = cr.metadata.namespace ?? 'default';
    const nonOwned = {
      [PRIMARY_RESOURCE_ANNOTATION]: `${namespace}/${cr.metadata.name}`,
      [PRIMARY_RESOURCE_TYPE_ANNOTATION]: target.ownerKind,
    };
    // Without knowing which kinds are cluster-scoped an ownerReference could land on one (and the
    // garbage collector would delete it), so ownership needs the keeper's discovery.
    if (uid === undefined || cr.apiVersion === undefined || cr.kind === undefined || this.opts.keeper === undefined) {
      return { labels: uid === undefined ? {} : { [OWNER_UID_LABEL]: uid }, annotations: nonOwned };
    }
    return {
      labels: { [OWNER_UID_LABEL]: uid },
      annotations: {},
      owner: {
        reference: { apiVersion: cr.apiVersion, kind: cr.kind, name: cr.metadata.name, uid },
        namespace,
        clusterScopedKinds: await this.opts.keeper.clusterScopedKinds(),
        nonOwnedAnnotations: nonOwned,
        allowClusterScoped: target.allowClusterScoped,
        allowCrossNamespace: target.allowCrossNamespace,
      },
    };
  }

  /** Inventory, readiness and (on quiet passes) drift repair; repairs are announced as events. */
  private async keep(
    cr: CustomResource,
    target: ReconcileTarget,
    at: { revision: number; manifest?: string; repair: boolean },
  ): Promise<KeepResult | undefined> {
    const keeper = this.opts.keeper;
    if (keeper === undefined) return undefined;
    const kept = await keeper.keep({
      namespace: cr.metadata.namespace ?? 'default',
      release: cr.metadata.name,
      revision: at.revision,
      manifest: at.manifest,
      watch: target.watchDependentResources,
      repair: at.repair,
    });
    for (const r of kept.repaired) {
      const what = r.action === 'created' ? 'was missing; recreated it' : `had drifted (${r.fields.slice(0, 5).join(', ')}); set it back`;
      this.opts.events.emit(cr, 'Warning', 'DriftRepaired', `${r.object} ${what} as the chart says (revision ${at.revision} unchanged)`);
    }
    return kept;
  }

  /** After a failed install or upgrade: undo what Helm left behind, record why, and fail the reconcile. */
  private async recoverFailedDeploy(
    cr: CustomResource,
    action: 'install' | 'upgrade',
    crOptions: CrOptions,
    err: unknown,
    log: Logger,
  ): Promise<never> {
    const { opts } = this;
    const name = cr.metadata.name;
    const namespace = cr.metadata.namespace ?? 'default';
    const reason = action === 'install' ? Reasons.installError : Reasons.upgradeError;
    let message = `helm ${action} failed: ${errorMessage(err)}`;
    log.warn({ action, errorKind: err instanceof HelmError ? err.kind : 'unknown' }, 'helm failed');

    try {
      const revisions = await opts.releases.revisions(namespace, name);
      const latest = latestRevision(revisions);
      if (action === 'install' && latest !== undefined && !revisions.some((r) => r.status === 'deployed' || r.status === 'superseded')) {
        // A failed first install leaves half a release; remove it so the next attempt starts clean.
        await opts.helm.uninstall({ release: name, namespace, timeoutMs: opts.helmTimeoutMs });
        message += '; the partial release was uninstalled';
      } else if (action === 'upgrade' && latest?.status === 'failed') {
        const good = revisions
          .filter((r) => r.revision < latest.revision && (r.status === 'deployed' || r.status === 'superseded'))
          .reduce<number | undefined>((max, r) => (max === undefined || r.revision > max ? r.revision : max), undefined);
        if (good !== undefined) {
          await opts.helm.rollback({
            release: name,
            namespace,
            revision: good,
            force: crOptions.rollbackForce,
            timeoutMs: opts.helmTimeoutMs,
          });
          message += `; rolled back to revision ${good}`;
          opts.events.emit(cr, 'Normal', 'RollbackSuccessful', `rolled back release ${name} to revision ${good} after a failed upgrade`);
        }
      }
    } catch (cleanupErr) {
      message += `; cleaning up after it also failed: ${errorMessage(cleanupErr)}`;
    }

    opts.events.emit(cr, 'Warning', reason, clip(message));
    await this.writeStatus(cr, { kind: 'failed', reason, message });
    throw new ReconcileFailure(reason, message, { cause: err });
  }

  private async uninstall(
    cr: CustomResource,
    name: string,
    namespace: string,
    crOptions: CrOptions | undefined,
    why: string,
  ): Promise<void> {
    const { opts } = this;
    try {
      const result = await opts.helm.uninstall({
        release: name,
        namespace,
        timeoutMs: opts.helmTimeoutMs,
        disableHooks: crOptions?.uninstallDisableHooks ?? false,
        description: crOptions?.uninstallDescription,
      });
      if (result === 'uninstalled') {
        opts.events.emit(cr, 'Normal', Reasons.uninstallSuccessful, `uninstalled release ${name} (${why})`);
      }
    } catch (err) {
      const message = `helm uninstall failed: ${errorMessage(err)}`;
      opts.events.emit(cr, 'Warning', Reasons.uninstallError, clip(message));
      await this.writeStatus(cr, { kind: 'failed', reason: Reasons.uninstallError, message });
      throw new ReconcileFailure(Reasons.uninstallError, message, { cause: err });
    }
  }

  /** Writes the status only when it changed, so an idle operator makes no API writes. */
  private async writeStatus(cr: CustomResource, outcome: Outcome): Promise<void> {
    const now = new Date(this.opts.clock.now()).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const status = nextStatus(cr.status, outcome, cr.metadata.generation, now);
    if (canonicalJson(status) === canonicalJson(cr.status ?? {})) return;
    await this.opts.writer.patchStatus(cr, status);
  }
}
