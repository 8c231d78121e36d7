/**
 * The shortest periods chartpilot accepts. A period is a promise of work per resource: 1 ms of
 * `reconcile-period` on 150 resources was ~1,800 API requests a second. Flags and watches.yaml
 * (the installer's) below a floor are start-up errors; a CR's annotation (a tenant's) is clamped
 * to it, with a Warning Event.
 */
export const PERIOD_FLOORS = {
  /** `--reconcile-period`, `reconcilePeriod`, the `reconcile-period` annotation (0 still turns it off). */
  reconcilePeriodMs: 5_000,
  /** `--chart-refresh-interval`, `chartRefreshInterval` (0 still means "resolve once"). */
  chartRefreshIntervalMs: 2_000,
} as const;

/** A floor as a Go duration (whole seconds): `5s`. */
export function floorText(floorMs: number): string {
  return `${String(floorMs / 1000)}s`;
}
