/**
 * The fix for helm 4's field-manager conflict, said next to helm's words. Helm applies
 * server-side without forcing conflicts, so a field the chart renders that another manager has
 * taken (an HPA's `replicas`, an injected `caBundle`) fails every upgrade, and the entry's
 * `driftDetection.ignore` rules do not help: they govern drift repair, not helm's apply.
 */
import { Annotations } from './names.js';

// One conflict: `…: .spec.replicas`; several: `conflicts with "m" using v1:\n- .a\n- .b` (the first is named).
const FIELD_CONFLICT = /conflicts? with "([^"]+)"(?: with subresource "([^"]+)")?[^:\n]*:\s(?:- )?(\.[^\s;,]+)/;

/** The hint for helm's `Apply failed … conflict with "<manager>" …: <field>`, or undefined for other errors. */
export function fieldConflictHint(message: string): string | undefined {
  const m = FIELD_CONFLICT.exec(message);
  if (m === null) return undefined;
  const [, manager = '', subresource, field = ''] = m;
  const who = subresource === undefined ? manager : `${manager} (${subresource})`;
  return `"${who}" owns ${field}, which the chart still renders: stop rendering it (a driftDetection.ignore rule covers drift repair, not helm's apply), `
    + `or annotate the resource ${Annotations.upgradeForce}: "true" to take the field back at each upgrade`;
}
