/**
 * Which fields of an object the entry's `driftDetection.ignore` rules leave to others: the rules
 * whose target matches the object (kind, name, namespace, labels as the chart renders them; no
 * target = every object), their JSON pointers as segments.
 */
import { matchesLabels, parseLabelQuery } from '../config/label-query.js';
import { parsePointer } from '../lib/json-pointer.js';
import type { DriftIgnoreRule, DriftTarget } from '../core/model.js';
import type { DesiredObject } from './types.js';

export function leftAloneBy(rules: readonly DriftIgnoreRule[], object: DesiredObject): string[][] {
  const out: string[][] = [];
  for (const rule of rules) {
    if (rule.target !== undefined && !targets(rule.target, object)) continue;
    for (const p of rule.paths) {
      const parsed = parsePointer(p);
      // Validated when watches.yaml was loaded; a rule that does not parse here ignores nothing.
      if (parsed.ok) out.push([...parsed.segments]);
    }
  }
  return out;
}

export function targets(target: DriftTarget, object: DesiredObject): boolean {
  if (target.kind !== undefined && target.kind !== object.kind) return false;
  if (target.name !== undefined && target.name !== object.name) return false;
  if (target.namespace !== undefined && target.namespace !== object.namespace) return false;
  if (target.labelSelector !== undefined) {
    const query = parseLabelQuery(target.labelSelector);
    if (!query.ok || !matchesLabels(query.requirements, object.object.metadata.labels)) return false;
  }
  return true;
}
