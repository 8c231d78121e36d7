/** The few flags that differ between helm majors (helm 4 is the target; helm 3 gets its own spelling). */
import { HelmError } from './types.js';

export interface Dialect {
  readonly major: 3 | 4;
  /**
   * Helm 4 applies server-side by default and refuses `--force-replace` together with it
   * ("cannot use server-side apply and force replace together", recorded as a failed revision),
   * and refuses `--force-conflicts` on a release that used client-side apply. Forcing
   * server-side apply and taking over conflicting fields works for both kinds of release and is
   * the closest to helm 3's `--force` (overwrite whatever others changed).
   */
  readonly force: readonly string[];
  /**
   * Flags for install/upgrade that skip helm's client-side OpenAPI validation. Helm 4 fetches and
   * parses the API server's whole OpenAPI document in every process for it: 0.13 of the 0.20 CPU
   * seconds of an install of the sample chart, plus the API server's work serving it. It adds no
   * check there: with server-side apply the API server rejects unknown fields and wrong types
   * either way, and with client-side apply helm 4.1 let an unknown field through either way.
   * Helm 3 does reject unknown fields client-side, so it keeps its validation.
   */
  readonly install: readonly string[];
}

/** The dialect of `helm version`'s output, e.g. "v4.1.4". */
export function dialectFor(version: string): Dialect {
  const m = /^v?(\d+)\./.exec(version.trim());
  const major = Number(m?.[1] ?? NaN);
  if (major === 3) return { major: 3, force: ['--force'], install: [] };
  if (major >= 4) return { major: 4, force: ['--server-side=true', '--force-conflicts'], install: ['--disable-openapi-validation'] };
  throw new HelmError('failed', `unsupported helm version ${JSON.stringify(version.trim())}: chartpilot needs helm 3 or 4`, 'version');
}
