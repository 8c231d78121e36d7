/**
 * `outputs` and `readyWhen`: what a watches entry computes from a release's objects into the CR's
 * status (kro's headline feature, for charts and roles). The types both engines use, and how a
 * readyWhen verdict joins the kstatus-style readiness. Compiling the expressions is
 * config/status-expressions.ts.
 */
/** Readiness as core/model.ts has it (restated, so model.ts can name StatusVerdict without a cycle). */
interface ReadinessVerdict {
  readonly ready: boolean;
  readonly failed: boolean;
  readonly reason: string;
  readonly message: string;
}

/** What an output may be; it is its type in the CRD's status schema, too. */
export type OutputType = 'string' | 'integer' | 'number' | 'boolean';
export const OUTPUT_TYPES: readonly OutputType[] = ['string', 'integer', 'number', 'boolean'];

/** One output as the watches entry declares it. */
export interface OutputDeclaration {
  readonly name: string;
  /** The CEL expression, as written. */
  readonly expression: string;
  readonly type: OutputType;
  /** Shown by `kubectl get` (a printer column in the CRD `generate crd` writes). */
  readonly column: boolean;
}

/** The entry's `outputs` and `readyWhen`, as written (checked at start). */
export interface StatusExpressions {
  readonly outputs: readonly OutputDeclaration[];
  readonly readyWhen?: string | undefined;
}

export type OutputValue = string | number | boolean;

/** One object of the release as an expression sees it. */
export interface ReleaseObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly namespace?: string | undefined;
  /** As rendered (the stored manifest). */
  readonly rendered: Readonly<Record<string, unknown>>;
  /** As the API server has it (the release's caches); undefined when not there (yet) or not watched. */
  readonly live?: Readonly<Record<string, unknown>> | undefined;
}

/** The CR as an expression sees it: `self`. */
export interface SelfView {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string | undefined;
    readonly uid?: string | undefined;
    readonly generation?: number | undefined;
    readonly labels?: Readonly<Record<string, string>> | undefined;
    readonly annotations?: Readonly<Record<string, string>> | undefined;
  };
}

/** `self` for a CR: its identity, labels and annotations (its spec is the values, not read here). */
export function selfView(cr: { readonly apiVersion?: string | undefined; readonly kind?: string | undefined; readonly metadata: SelfView['metadata'] }): SelfView {
  const m = cr.metadata;
  return {
    apiVersion: cr.apiVersion ?? '',
    kind: cr.kind ?? '',
    metadata: {
      name: m.name,
      ...(m.namespace === undefined ? {} : { namespace: m.namespace }),
      ...(m.uid === undefined ? {} : { uid: m.uid }),
      ...(m.generation === undefined ? {} : { generation: m.generation }),
      ...(m.labels === undefined ? {} : { labels: m.labels }),
      ...(m.annotations === undefined ? {} : { annotations: m.annotations }),
    },
  };
}

export interface StatusInput {
  readonly self: SelfView;
  readonly objects: readonly ReleaseObject[];
}

/** An output or readyWhen that gave no value this time, and why (never a value: only names and types). */
export interface Unresolved {
  readonly name: string;
  readonly problem: string;
}

export interface StatusVerdict {
  /** Resolved outputs by name; what did not resolve is left out (and listed in `unresolved`). */
  readonly outputs: Readonly<Record<string, OutputValue>>;
  readonly unresolved: readonly Unresolved[];
  /** readyWhen's verdict; undefined when the entry has none. */
  readonly readyWhen?: { readonly met: boolean; readonly message: string } | undefined;
}

/** A compiled `outputs`/`readyWhen`: pure, bounded in cost, never throws. */
export interface StatusProgram {
  readonly declarations: StatusExpressions;
  evaluate(input: StatusInput): StatusVerdict;
}

export const OutputReasons = {
  /** Ready False: every object is ready as kstatus judges it, but readyWhen does not hold. */
  readyWhenNotMet: 'ReadyWhenNotMet',
  allResolved: 'OutputsResolved',
  notResolved: 'OutputNotResolved',
} as const;

export const OUTPUTS_CONDITION = 'OutputsResolved';

/**
 * Ready as kstatus judges the objects, narrowed by readyWhen: a failure or a rollout in progress is
 * told first (it says more), then readyWhen. undefined readiness (not tracked) stays undefined.
 */
export function withReadyWhen<R extends ReadinessVerdict>(readiness: R | undefined, verdict: StatusVerdict | undefined): R | ReadinessVerdict | undefined {
  const rule = verdict?.readyWhen;
  if (readiness === undefined || rule === undefined || !readiness.ready || rule.met) return readiness;
  return { ready: false, failed: false, reason: OutputReasons.readyWhenNotMet, message: rule.message };
}

/** The OutputsResolved condition's status, reason and message for a verdict. */
export function outputsCondition(verdict: StatusVerdict): { status: 'True' | 'False'; reason: string; message: string } {
  const outputs = verdict.unresolved.filter((u) => u.name !== READY_WHEN);
  const n = Object.keys(verdict.outputs).length;
  if (outputs.length === 0) return { status: 'True', reason: OutputReasons.allResolved, message: `${String(n)} output${n === 1 ? '' : 's'} resolved` };
  const listed = outputs.slice(0, 3).map((u) => `${u.name}: ${u.problem}`);
  if (outputs.length > 3) listed.push(`and ${String(outputs.length - 3)} more`);
  return { status: 'False', reason: OutputReasons.notResolved, message: listed.join('; ') };
}

/** How an unresolved readyWhen is listed. */
export const READY_WHEN = 'readyWhen';
