/**
 * The per-CR annotations of Ansible kinds: ansible-operator's `reconcile-period` and `verbosity`,
 * and chartpilot's way out of a finalizer that keeps failing. Parsed and validated: a bad value is
 * a clear status message, never a silent default.
 */
import { parseGoDuration } from '../../lib/duration.js';
import { floorText, PERIOD_FLOORS } from '../../lib/period-floors.js';

const PREFIX = 'ansible.sdk.operatorframework.io/';

export const AnsibleAnnotations = {
  /** ansible-operator: how often this CR's role runs again (a Go duration); overrides the entry's `reconcilePeriod`. */
  reconcilePeriod: `${PREFIX}reconcile-period`,
  /** ansible-operator: the run's verbosity (0-7); overrides `--ansible-verbosity`. */
  verbosity: `${PREFIX}verbosity`,
  /**
   * chartpilot: "true" lets a CR being deleted go without running its finalizer (the documented way
   * out when the finalizer role keeps failing and what it cleans up is already gone).
   */
  skipFinalizer: 'ansible.chartpilot.io/skip-finalizer',
} as const;

export interface AnsibleCrOptions {
  /** undefined: not set on the CR. */
  readonly reconcilePeriodMs: number | undefined;
  readonly verbosity: number | undefined;
  readonly skipFinalizer: boolean;
}

export type ParsedAnsibleOptions = { readonly ok: true; readonly options: AnsibleCrOptions } | { readonly ok: false; readonly problems: readonly string[] };

export function parseAnsibleOptions(annotations: Readonly<Record<string, string>> | undefined): ParsedAnsibleOptions {
  const a = annotations ?? {};
  const problems: string[] = [];
  let reconcilePeriodMs: number | undefined;
  const rawPeriod = a[AnsibleAnnotations.reconcilePeriod];
  if (rawPeriod !== undefined) {
    const parsed = parseGoDuration(rawPeriod.trim());
    if (!parsed.ok) problems.push(`annotation ${AnsibleAnnotations.reconcilePeriod}: ${parsed.reason}`);
    else if (parsed.ms < 0) problems.push(`annotation ${AnsibleAnnotations.reconcilePeriod} is "${rawPeriod}"; it must not be negative (use "0" to run only on changes)`);
    // A tenant's setting: raised to the floor rather than a run loop.
    else reconcilePeriodMs = parsed.ms === 0 ? 0 : Math.max(parsed.ms, PERIOD_FLOORS.reconcilePeriodMs);
  }
  let verbosity: number | undefined;
  const rawVerbosity = a[AnsibleAnnotations.verbosity];
  if (rawVerbosity !== undefined) {
    const v = rawVerbosity.trim();
    if (/^[0-7]$/u.test(v)) verbosity = Number(v);
    else problems.push(`annotation ${AnsibleAnnotations.verbosity} is "${rawVerbosity}"; expected a whole number from 0 to 7`);
  }
  const rawSkip = a[AnsibleAnnotations.skipFinalizer];
  let skipFinalizer = false;
  if (rawSkip !== undefined) {
    const v = rawSkip.trim().toLowerCase();
    if (v === 'true') skipFinalizer = true;
    else if (v !== 'false') problems.push(`annotation ${AnsibleAnnotations.skipFinalizer} is "${rawSkip}"; expected "true" or "false"`);
  }
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, options: { reconcilePeriodMs, verbosity, skipFinalizer } };
}

/** For messages: the floor a reconcile-period annotation is raised to. */
export const PERIOD_FLOOR_TEXT = floorText(PERIOD_FLOORS.reconcilePeriodMs);
