/** operator-sdk's per-CR annotations, parsed and validated (a bad value is a clear status message). */
import { parseGoDuration } from '../../lib/duration.js';
import { floorText, PERIOD_FLOORS } from '../../lib/period-floors.js';
import { Annotations } from './names.js';

export interface CrOptions {
  readonly upgradeForce: boolean;
  readonly rollbackForce: boolean;
  readonly uninstallWait: boolean;
  readonly reconcilePeriodMs: number | undefined;
  /** Set when the reconcile-period annotation was below the floor and raised to it: says so. */
  readonly reconcilePeriodClamped: string | undefined;
  readonly installDisableHooks: boolean;
  readonly upgradeDisableHooks: boolean;
  readonly uninstallDisableHooks: boolean;
  readonly paused: boolean;
  readonly installDescription: string | undefined;
  readonly upgradeDescription: string | undefined;
  readonly uninstallDescription: string | undefined;
}

export type ParsedOptions = { readonly ok: true; readonly options: CrOptions } | { readonly ok: false; readonly problems: string[] };

export function parseCrOptions(annotations: Readonly<Record<string, string>> | undefined): ParsedOptions {
  const a = annotations ?? {};
  const problems: string[] = [];

  const bool = (key: string, fallback: boolean): boolean => {
    const raw = a[key];
    if (raw === undefined) return fallback;
    const v = raw.trim().toLowerCase();
    if (v === 'true') return true;
    if (v === 'false') return false;
    problems.push(`annotation ${key} is "${raw}", expected "true" or "false"`);
    return fallback;
  };

  let reconcilePeriodMs: number | undefined;
  let reconcilePeriodClamped: string | undefined;
  const rawPeriod = a[Annotations.reconcilePeriod];
  if (rawPeriod !== undefined) {
    const parsedPeriod = parseGoDuration(rawPeriod);
    if (!parsedPeriod.ok) problems.push(`annotation ${Annotations.reconcilePeriod}: ${parsedPeriod.reason}`);
    else if (parsedPeriod.ms < 0) problems.push(`annotation ${Annotations.reconcilePeriod} is "${rawPeriod}"; it must not be negative (use "0" to turn periodic reconciles off)`);
    else if (parsedPeriod.ms > 0 && parsedPeriod.ms < PERIOD_FLOORS.reconcilePeriodMs) {
      // A tenant's setting: not an error that stops their CR, but not a hot loop either.
      reconcilePeriodMs = PERIOD_FLOORS.reconcilePeriodMs;
      reconcilePeriodClamped =
        `annotation ${Annotations.reconcilePeriod} is "${rawPeriod}", below the minimum of ${floorText(PERIOD_FLOORS.reconcilePeriodMs)}; ` +
        `reconciling every ${floorText(PERIOD_FLOORS.reconcilePeriodMs)} instead (set ${floorText(PERIOD_FLOORS.reconcilePeriodMs)} or more, or 0 to turn periodic reconciles off)`;
    } else reconcilePeriodMs = parsedPeriod.ms;
  }

  const options: CrOptions = {
    upgradeForce: bool(Annotations.upgradeForce, false),
    // operator-sdk forces rollbacks by default, which breaks on immutable fields; we roll back
    // without replacement unless the annotation asks for it.
    rollbackForce: bool(Annotations.rollbackForce, false),
    uninstallWait: bool(Annotations.uninstallWait, false),
    reconcilePeriodMs,
    reconcilePeriodClamped,
    installDisableHooks: bool(Annotations.installDisableHooks, false),
    upgradeDisableHooks: bool(Annotations.upgradeDisableHooks, false),
    uninstallDisableHooks: bool(Annotations.uninstallDisableHooks, false),
    paused: bool(Annotations.pauseReconcile, false),
    installDescription: a[Annotations.installDescription],
    upgradeDescription: a[Annotations.upgradeDescription],
    uninstallDescription: a[Annotations.uninstallDescription],
  };
  return problems.length === 0 ? { ok: true, options } : { ok: false, problems };
}
