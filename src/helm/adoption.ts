/**
 * `chartpilot adopt`'s decision for one release record chartpilot did not write: take it over for
 * the CR (its record MAC stamped on the Secret) only when it is plausibly this CR's release as another
 * tool made it — the watches entry's chart, this release's name and namespace — and every object
 * it lists is within the entry's confinement (so adopting never lets a later upgrade, rollback or
 * uninstall reach outside). Pure: scopes are looked up by the caller.
 */
import { isAllowedTarget, type Confinement, type ObjectScope } from '../core/confinement.js';
import type { DecodedRecord } from './record-origin.js';

/** One object of the record, with where the API server would put it. */
export interface ScopedObject {
  readonly object: Record<string, unknown>;
  readonly scope: ObjectScope;
}

export type AdoptionDecision = { readonly adopt: true } | { readonly adopt: false; readonly why: string };

export interface AdoptionInput {
  readonly record: DecodedRecord;
  /** The CR's name (its release's) and namespace. */
  readonly releaseName: string;
  readonly namespace: string;
  /** The chart the watches entry serves (Chart.yaml's name). */
  readonly chartName: string;
  readonly confinement: Confinement;
  /** The record's objects (manifest, then hooks), or why they cannot be read. */
  readonly objects: readonly ScopedObject[] | { readonly unreadable: string };
}

export function decideAdoption(input: AdoptionInput): AdoptionDecision {
  const { release } = input.record;
  if (release.name !== input.releaseName || release.namespace !== input.namespace) {
    return { adopt: false, why: `it holds release ${release.namespace}/${release.name}, not ${input.namespace}/${input.releaseName}` };
  }
  if (release.chartName !== input.chartName) {
    return { adopt: false, why: `it was made from chart "${release.chartName}", not "${input.chartName}" (the watches entry's)` };
  }
  if ('unreadable' in input.objects) return { adopt: false, why: `its manifest cannot be read: ${input.objects.unreadable}` };
  const outside = input.objects.filter((o) => !isAllowedTarget(input.confinement, { namespace: namespaceOf(o, input.namespace) }, o.scope));
  if (outside.length > 0) {
    const named = outside.slice(0, 3).map((o) => describe(o, input.namespace)).join(', ');
    return {
      adopt: false,
      why: `it lists ${named}${outside.length > 3 ? ` and ${outside.length - 3} more` : ''} outside what the watches entry allows (the resource's namespace; allowClusterScoped/allowCrossNamespace)`,
    };
  }
  return { adopt: true };
}

function metadataOf(o: ScopedObject): Record<string, unknown> {
  const m = o.object['metadata'];
  return typeof m === 'object' && m !== null && !Array.isArray(m) ? (m as Record<string, unknown>) : {};
}

/** Where a namespaced object lands: its own namespace, else the release's (as helm applies it). */
function namespaceOf(o: ScopedObject, releaseNamespace: string): string | undefined {
  if (o.scope === 'cluster') return undefined;
  const ns = metadataOf(o)['namespace'];
  return typeof ns === 'string' && ns !== '' ? ns : releaseNamespace;
}

function describe(o: ScopedObject, releaseNamespace: string): string {
  const kind = typeof o.object['kind'] === 'string' ? o.object['kind'] : '(no kind)';
  const name = metadataOf(o)['name'];
  const ns = namespaceOf(o, releaseNamespace);
  return `${kind} ${ns === undefined ? '' : `${ns}/`}${typeof name === 'string' ? name : '(no name)'}${o.scope === 'unknown' ? ' (a kind the cluster does not serve)' : ''}`;
}
