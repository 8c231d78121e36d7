/**
 * How a kind's changed chart reaches its CRs, as pure state transitions: first one CR (the
 * canary), then, once helm deployed it there, all the others. Until then every other CR — a new
 * one included — is served the last good chart; if the canary's install or upgrade fails, the
 * change is held: the canary shows helm's error, the others a ChartChangeHeld condition naming
 * the chart and that error, and nothing more is tried until the canary succeeds (its retries, or a
 * fixed chart, tried on it first) or the chart goes back to the last good one.
 *
 * Why a real upgrade of one CR rather than `helm template`: the upgrade is exactly what each CR
 * would do, so it proves what the rollout needs — the chart loads and renders for a CR's values
 * with the cluster's lookups and capabilities, and its objects apply under the kind's confinement
 * and identity — where an offline render proves less and costs a helm process per change beside
 * the upgrades. A template error fails it before Helm records or applies anything, so the canary
 * loses nothing; a failure in applying is rolled back to the canary's last good revision, as any
 * failed upgrade is.
 *
 * Settings of the entry (overrides, period, confinement) apply to every CR at once as before:
 * only the chart's content is rolled out this way. With no good chart to fall back on (the first
 * target of a kind, or a chart from a registry that was unavailable) a chart goes to every CR.
 */
import { canonicalJson } from '../lib/json.js';
import type { ChartTrial, ReconcileTarget } from '../engines/helm/target.js';

export type { ChartTrial } from '../engines/helm/target.js';

export interface Candidate {
  readonly target: ReconcileTarget;
  /** What the chart is called in messages: its watches.yaml path, or its registry reference and version. */
  readonly chart: string;
  /** The CR (namespace/name) it is tried on; undefined until one is chosen or claims it. */
  readonly canary: string | undefined;
  /** CRs whose reconcile with it ended without trying it (paused, irreconcilable, …): not chosen again. */
  readonly passedOver: readonly string[];
  /** Set once it failed on the canary: the change is held. */
  readonly failure: { readonly canary: string; readonly message: string } | undefined;
  /** `stable` as the held CRs are served it, made once per failure (one target object, not one per reconcile). */
  readonly heldTarget: ReconcileTarget | undefined;
}

export interface RolloutState {
  /** The last good chart (or the first one known), with the entry's current settings. */
  readonly stable: ReconcileTarget;
  readonly candidate: Candidate | undefined;
}

/** What the edge does after a transition. */
export type RolloutEffect =
  /** Nothing to re-check. */
  | { readonly kind: 'none' }
  /** Every CR of the kind is re-checked: the target each is served changed (a canary first, if one is still to be chosen). */
  | { readonly kind: 'all' }
  /** The canary (chosen now if there is none) is re-checked; the others stay as they are. */
  | { readonly kind: 'canary' }
  /** Held: an Event on the canary, and every other CR re-checked to say so. */
  | { readonly kind: 'held'; readonly canary: string; readonly message: string };

export interface Transition {
  readonly state: RolloutState;
  readonly effect: RolloutEffect;
}

const NONE: RolloutEffect = { kind: 'none' };

export function initialRollout(target: ReconcileTarget): RolloutState {
  return { stable: target, candidate: undefined };
}

/** Whether two targets hold the same chart content. */
function sameChart(a: ReconcileTarget, b: ReconcileTarget): boolean {
  return a.chartUnavailable === undefined && b.chartUnavailable === undefined && a.chartDigest === b.chartDigest;
}

/** `settings`' settings with `chart`'s chart. */
function withChart(settings: ReconcileTarget, chart: ReconcileTarget): ReconcileTarget {
  return { ...settings, chartPath: chart.chartPath, chartDigest: chart.chartDigest };
}

/** Whether `a` and `b` differ in anything but the chart (the settings every CR gets at once). */
function settingsDiffer(a: ReconcileTarget, b: ReconcileTarget): boolean {
  const strip = ({ chartPath: _p, chartDigest: _d, chartUnavailable: _u, chartChangeHeld: _h, ...rest }: ReconcileTarget): string => canonicalJson(rest);
  return strip(a) !== strip(b);
}

/**
 * A new target for the kind (a reload, or a registry chart resolved again): the chart `next`
 * holds, called `chart` in messages. Same chart as the stable one: a settings change (every CR),
 * or the chart went back to the last good one (any candidate dropped). Same chart as the
 * candidate: its settings follow. Another chart: it becomes the candidate, tried on the canary of
 * the one it replaces when there was one.
 */
export function offer(state: RolloutState, next: ReconcileTarget, chart: string): Transition {
  const { stable, candidate } = state;
  const settingsChanged = settingsDiffer(stable, next);
  // Nothing good to fall back on, or nothing to try: the target goes to every CR, as it is.
  if (next.chartUnavailable !== undefined || stable.chartUnavailable !== undefined) {
    const same = canonicalJson(stable) === canonicalJson(next) && candidate === undefined;
    return { state: initialRollout(next), effect: same ? NONE : { kind: 'all' } };
  }
  if (sameChart(stable, next)) {
    const effect: RolloutEffect = settingsChanged || candidate !== undefined || stable.chartPath !== next.chartPath ? { kind: 'all' } : NONE;
    return { state: initialRollout(next), effect };
  }
  const nextStable = withChart(next, stable);
  if (candidate !== undefined && sameChart(candidate.target, next)) {
    const held = candidate.failure === undefined ? undefined : heldTarget(nextStable, candidate, candidate.failure);
    return {
      state: { stable: nextStable, candidate: { ...candidate, target: next, heldTarget: held } },
      effect: settingsChanged ? { kind: 'all' } : NONE,
    };
  }
  const fresh: Candidate = { target: next, chart, canary: candidate?.canary, passedOver: [], failure: undefined, heldTarget: undefined };
  // A settings change re-checks everyone anyway; else only the canary needs to look.
  return { state: { stable: nextStable, candidate: fresh }, effect: settingsChanged ? { kind: 'all' } : { kind: 'canary' } };
}

/**
 * The target a reconcile of the CR `key` is served, and the state after: the canary gets the
 * candidate; with no canary yet, the first CR that asks becomes it (a CR created after the change,
 * when the kind had none); every other CR the last good chart, saying so once the change is held.
 */
export function serve(state: RolloutState, key: string): { readonly state: RolloutState; readonly target: ReconcileTarget } {
  const c = state.candidate;
  if (c === undefined) return { state, target: state.stable };
  if (c.canary === key) return { state, target: c.target };
  if (c.canary === undefined && !c.passedOver.includes(key)) return { state: { ...state, candidate: { ...c, canary: key } }, target: c.target };
  return { state, target: c.heldTarget ?? state.stable };
}

/** What a reconcile of `key` with `target` came to; only the canary's trial of the candidate counts. */
export function report(state: RolloutState, key: string, target: ReconcileTarget, trial: ChartTrial): Transition {
  const c = state.candidate;
  if (c === undefined || c.canary !== key || !sameChart(c.target, target)) return { state, effect: NONE };
  switch (trial.kind) {
    case 'deployed':
      // Proved on one CR: the rest follow, and nothing is held any more.
      return { state: initialRollout(c.target), effect: { kind: 'all' } };
    case 'failed': {
      if (c.failure?.canary === key && c.failure.message === trial.message) return { state, effect: NONE };
      const failure = { canary: key, message: trial.message };
      return {
        state: { ...state, candidate: { ...c, failure, heldTarget: heldTarget(state.stable, c, failure) } },
        effect: { kind: 'held', canary: key, message: trial.message },
      };
    }
    case 'untried':
      // This CR cannot try it now: another one will (a held change stays held meanwhile).
      return { state: { ...state, candidate: { ...c, canary: undefined, passedOver: [...c.passedOver, key] } }, effect: { kind: 'canary' } };
  }
}

/** The CR `key` is gone: if it was the canary, another one is chosen. */
export function gone(state: RolloutState, key: string): Transition {
  const c = state.candidate;
  if (c?.canary !== key) return { state, effect: NONE };
  return { state: { ...state, candidate: { ...c, canary: undefined } }, effect: { kind: 'canary' } };
}

/** A CR as the canary choice sees it: its key, and the state word of its summary (core/summary.ts). */
export interface CanaryOption {
  readonly key: string;
  readonly state: string;
  readonly deleting: boolean;
}

/** Healthy first (a failure there is the chart's), then any that will try it; never one that cannot. */
const RANK: Readonly<Record<string, number>> = { Ready: 0, Deployed: 0, Drifted: 0, Held: 0, Progressing: 1, Failed: 2, Unknown: 2 };

/**
 * Chooses the canary when there is a candidate without one: the best-ranked CR not passed over,
 * by key for the same rank (every replica and every run chooses alike). None when no CR can: the
 * first CR to reconcile claims it then (serve).
 */
export function chooseCanary(state: RolloutState, options: readonly CanaryOption[]): { readonly state: RolloutState; readonly canary: string | undefined } {
  const c = state.candidate;
  if (c === undefined) return { state, canary: undefined };
  if (c.canary !== undefined) return { state, canary: c.canary };
  const eligible = options
    .filter((o) => !o.deleting && RANK[o.state] !== undefined && !c.passedOver.includes(o.key))
    .sort((a, b) => (RANK[a.state] ?? 9) - (RANK[b.state] ?? 9) || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const pick = eligible[0]?.key;
  return { state: pick === undefined ? state : { ...state, candidate: { ...c, canary: pick } }, canary: pick };
}

/** The message a held CR's condition carries. */
export function heldMessage(chart: string, canary: string, error: string): string {
  return `chart ${chart} changed, and the change is held: it failed on ${canary}, the first resource it was tried on (${error}); this resource keeps the last good chart until the change succeeds there`;
}

/** The Event on the canary when the change is held. */
export function heldEventMessage(chart: string, error: string): string {
  return `chart ${chart} changed and failed here, the first resource it was tried on (${error}); the change is held from the other resources of this kind, which keep the last good chart until it succeeds here`;
}

function heldTarget(stable: ReconcileTarget, c: Candidate, failure: { readonly canary: string; readonly message: string }): ReconcileTarget {
  return { ...stable, chartChangeHeld: { message: heldMessage(c.chart, failure.canary, failure.message) } };
}
