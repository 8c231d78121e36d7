/**
 * Start-up for tenancy: which ServiceAccount each kind runs as, the permissions impersonating it
 * needs (checked with the others, before anything runs), and a Warning per chart that hands a CR
 * author the operator's read access because no ServiceAccount is set for it.
 */
import type { Logger } from 'pino';
import { templateFunctions } from '../config/template-functions.js';
import { isAnsibleEntry, type WatchEntry } from '../config/types.js';
import { errorMessage } from '../lib/errors.js';
import type { Check } from './preflight.js';

/** The ServiceAccount an entry's CRs run as: its own, else the default; undefined = the operator. */
export function serviceAccountOf(entry: WatchEntry, defaultServiceAccount: string | undefined): string | undefined {
  return entry.serviceAccount ?? defaultServiceAccount;
}

/**
 * What impersonating needs: `impersonate` on exactly the named ServiceAccounts, and list/watch of
 * ServiceAccounts (to know whether they exist), in every watched namespace.
 */
export function impersonationChecks(entries: readonly WatchEntry[], defaultServiceAccount: string | undefined, namespaces: readonly string[]): Check[] {
  const names = [...new Set(entries.map((e) => serviceAccountOf(e, defaultServiceAccount)).filter((n) => n !== undefined))].sort();
  if (names.length === 0) return [];
  const scopes: (string | undefined)[] = namespaces.length === 0 ? [undefined] : [...namespaces];
  return scopes.flatMap((namespace) => [
    ...names.map((name) => ({ verb: 'impersonate', group: '', resource: 'serviceaccounts', name, namespace })),
    { verb: 'list', group: '', resource: 'serviceaccounts', namespace },
    { verb: 'watch', group: '', resource: 'serviceaccounts', namespace },
  ]);
}

/** Whether every entry runs as a tenant, so the operator itself never writes Helm's records. */
export function allImpersonate(entries: readonly WatchEntry[], defaultServiceAccount: string | undefined): boolean {
  return entries.every((e) => serviceAccountOf(e, defaultServiceAccount) !== undefined);
}

export const UNCONFINED_WARNING = 'a CR author can read what the operator can read; set serviceAccount';

/**
 * One Warning per chart that calls `lookup` or `tpl` while its CRs run as the operator: with either,
 * a CR author can make helm read (and render into their objects) whatever the operator may read.
 */
export async function warnUnconfinedCharts(entries: readonly WatchEntry[], defaultServiceAccount: string | undefined, log: Logger): Promise<void> {
  const seen = new Set<string>();
  for (const entry of entries) {
    // Ansible entries have no chart (chartPath ''): their confinement is the run's proxy's.
    if (isAnsibleEntry(entry) || serviceAccountOf(entry, defaultServiceAccount) !== undefined || seen.has(entry.chartPath)) continue;
    seen.add(entry.chartPath);
    try {
      const found = await templateFunctions(entry.chartPath);
      if (found.lookup.length === 0 && found.tpl.length === 0) continue;
      log.warn(
        {
          chart: entry.chartPath,
          kind: entry.kind,
          lookup: found.lookup,
          tpl: found.tpl,
          why: 'the chart calls lookup or tpl (which renders values, i.e. the spec, as a template) and helm runs as the operator',
          fix: "serviceAccount in the watches entry, or --default-service-account: helm then runs as that ServiceAccount of each resource's namespace",
        },
        UNCONFINED_WARNING,
      );
    } catch (err) {
      // The chart was loadable moments ago; a read error here only costs the warning.
      log.debug({ chart: entry.chartPath, err: errorMessage(err) }, 'could not scan the chart for lookup and tpl');
    }
  }
}
