/** `helm upgrade --install`: the CR's values, our fingerprint on the record, ownership via post-render. */
import { errorMessage } from '../../../lib/errors.js';
import { fieldConflictHint } from '../conflict-hint.js';
import { forbiddenExplanation } from '../../../core/tenant.js';
import type { Release } from '../../../core/model.js';
import { ownerLabels, PRIMARY_RESOURCE_ANNOTATION, PRIMARY_RESOURCE_TYPE_ANNOTATION, Reasons, ReleaseLabels } from '../names.js';
import { HelmCallsStopped, type PostRenderSpec } from '../ports.js';
import { foreignRecordsMessage } from '../plan.js';
import { CONTINUE, end, type ActionContext, type StepResult } from './context.js';
import { foreignRecords } from './report.js';

/**
 * Installs or upgrades. Success ends the reconcile with the status written; a failure is recorded
 * in the context for the plan's remediation and the reconcile goes on.
 */
export async function deploy(ctx: ActionContext, action: 'install' | 'upgrade'): Promise<StepResult> {
  const { deps, derived } = ctx;
  const { crOptions, values } = derived;
  if (values === undefined || crOptions === undefined) throw new Error('unreachable: plan deploys an irreconcilable resource');
  const install = action === 'install';
  const started = deps.clock.now();
  let release: Release;
  const upgradeInstall = async (): Promise<Release> => await deps.helm.upgradeInstall({
      ...ctx.call,
      chart: ctx.target.chartPath,
      values,
      force: !install && crOptions.upgradeForce,
      disableHooks: install ? crOptions.installDisableHooks : crOptions.upgradeDisableHooks,
      description: install ? crOptions.installDescription : crOptions.upgradeDescription,
      historyMax: deps.historyMax,
      releaseLabels: { [ReleaseLabels.fingerprint]: derived.desiredFingerprint, [ReleaseLabels.ownerKind]: ctx.target.ownerKind },
      postRender: await postRenderSpec(ctx),
    });
  try {
    release = await ctx.announced(action, async () => {
      try {
        return await upgradeInstall();
      } catch (err) {
        // A kind discovery did not know (a CRD installed a moment ago): read discovery again at
        // once and try once more; a kind still unknown stays refused.
        const unknown = unknownKindsOf(err);
        if (unknown.length === 0 || deps.keeper === undefined || !(await deps.keeper.learnKinds(unknown))) throw err;
        ctx.log.info({ action, kinds: unknown }, 'discovery learned the kinds the chart renders; deploying again');
        return upgradeInstall();
      }
    });
  } catch (err) {
    if (err instanceof HelmCallsStopped) throw err; // never started: nothing to record
    const errorKind = err instanceof Error && 'kind' in err && typeof err.kind === 'string' ? err.kind : 'unknown';
    ctx.log.warn({ action, errorKind }, 'helm failed');
    const why = forbiddenExplanation(err, derived.tenant) ?? withConflictHint(errorMessage(err));
    ctx.failure = { action, cause: err, error: `helm ${action} failed: ${why}`, remediation: [] };
    ctx.progress = { ...ctx.progress, failedDeploy: action };
    return CONTINUE;
  }
  ctx.log.info({ action, revision: release.revision, durationMs: deps.clock.now() - started }, 'release deployed');
  ctx.deployedTarget = true;
  // A record written by someone else while helm ran (helm read the history without us) is told
  // at once; nothing more is done to the release until it is gone or adopted.
  const foreign = await ctx.foreignRevisions(await deps.releases.revisions(ctx.namespace, ctx.name));
  if (foreign.length > 0) return foreignRecords(ctx, foreignRecordsMessage(foreign, false));
  deps.events.emit(
    ctx.cr,
    'Normal',
    install ? Reasons.installSuccessful : Reasons.upgradeSuccessful,
    `${install ? 'installed' : 'upgraded'} release ${ctx.name} to revision ${release.revision} (chart ${release.chartName}-${release.chartVersion})`,
  );
  if (deps.suppressOverrideValues !== true) {
    for (const key of Object.keys(ctx.target.overrides)) {
      deps.events.emit(
        ctx.cr,
        'Warning',
        Reasons.overrideValuesInUse,
        `chart value "${key}" is set by the operator's watches.yaml overrideValues and wins over the resource's spec`,
      );
    }
  }
  // Caches may still show the previous objects right after an upgrade: readiness once they
  // caught up (briefly), drift repair on the next quiet pass.
  const kept = await ctx
    .keep({ revision: release.revision, manifest: release.manifest, fingerprint: derived.desiredFingerprint, repair: false, awaitCaches: true }).catch((err: unknown) => {
    ctx.log.warn({ err: errorMessage(err) }, 'deployed, but could not inspect the release objects');
    return undefined;
  });
  return end(derived.requeue, { kind: 'deployed', action, release, kept });
}

/** Helm's message, and after it what to do when another field manager's field made the apply fail. */
function withConflictHint(message: string): string {
  const hint = fieldConflictHint(message);
  return hint === undefined ? message : `${message} (${hint})`;
}

/** The kinds a post-render refusal found unknown to discovery (HelmError.unknownKinds), if any. */
function unknownKindsOf(err: unknown): readonly string[] {
  if (!(err instanceof Error) || !('unknownKinds' in err) || !Array.isArray(err.unknownKinds)) return [];
  return err.unknownKinds.filter((k): k is string => typeof k === 'string');
}

/** Labels every object with its owner (uid and uid bucket); owns what it may, annotates or refuses the rest. */
async function postRenderSpec(ctx: ActionContext): Promise<PostRenderSpec> {
  const { cr, target } = ctx;
  const uid = cr.metadata.uid;
  const nonOwned = {
    [PRIMARY_RESOURCE_ANNOTATION]: `${ctx.namespace}/${cr.metadata.name}`,
    [PRIMARY_RESOURCE_TYPE_ANNOTATION]: target.ownerKind,
  };
  const keeper = ctx.deps.keeper;
  // Without knowing which kinds are cluster-scoped an ownerReference could land on one (and the
  // garbage collector would delete it), so ownership needs the keeper's discovery.
  if (uid === undefined || cr.apiVersion === undefined || cr.kind === undefined || keeper === undefined) {
    return { labels: uid === undefined ? {} : ownerLabels(uid), annotations: nonOwned };
  }
  const scopes = await keeper.kindScopes();
  return {
    // Not in the fingerprint: derived from the uid, which is; a release deployed before the bucket
    // label existed keeps its fingerprint and is not upgraded for it.
    labels: ownerLabels(uid),
    annotations: {},
    owner: {
      reference: { apiVersion: cr.apiVersion, kind: cr.kind, name: cr.metadata.name, uid },
      namespace: ctx.namespace,
      clusterScopedKinds: scopes.clusterScoped,
      namespacedKinds: scopes.namespaced,
      nonOwnedAnnotations: nonOwned,
      allowClusterScoped: target.allowClusterScoped,
      allowCrossNamespace: target.allowCrossNamespace,
    },
  };
}
