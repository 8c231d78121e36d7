/**
 * How drift left in place is told: the Drifted condition (from what one pass of keeping the
 * release found) and the one Warning per field given up to another manager, with the exact
 * watches.yaml rule that makes the choice explicit. Pure text from the keeper's findings.
 */
import type { ConditionInput } from '../../core/conditions.js';
import type { Contest, KeepResult, UnrepairedDrift } from '../../core/model.js';
import { ConditionTypes, Reasons } from './names.js';

/** Objects and fields named in one message, at most; the rest are counted. */
const MAX_NAMED = 5;

/**
 * The Drifted condition after a pass: set when something differs and is left so, 'remove' when
 * nothing does, undefined when drift was not judged (keep what the status says).
 */
export function driftCondition(kept: KeepResult | undefined): ConditionInput | 'remove' | undefined {
  if (kept?.unrepaired === undefined && kept?.contests === undefined) return undefined;
  const unrepaired = kept.unrepaired ?? [];
  const contests = kept.contests ?? [];
  if (unrepaired.length === 0 && contests.length === 0) return 'remove';
  const parts: string[] = [];
  if (contests.length > 0) {
    parts.push(
      `left to another field manager after repeated set-backs: ${named(contests.map((c) => `${c.object} ${c.field} (${managersText(c)})`))}; ` +
        `make it explicit with ${ruleSnippet(contests)}`,
    );
  }
  if (unrepaired.length > 0) parts.push(warnText(unrepaired));
  return {
    type: ConditionTypes.drifted,
    status: 'True',
    reason: contests.length > 0 ? Reasons.driftContested : Reasons.driftDetected,
    message: parts.join('; '),
  };
}

/** What warn mode tells about drift it leaves in place (the event's message, and part of the condition's). */
export function warnText(unrepaired: readonly UnrepairedDrift[]): string {
  const items = unrepaired.map((u) => (u.fields.length === 0 ? `${u.object} is missing` : `${u.object} (${u.fields.slice(0, MAX_NAMED).join(', ')})`));
  return `differs from the chart and is not set back (driftDetection mode warn): ${named(items)}`;
}

/** The Warning for a field given up to another manager: who, how often, and the rule to add. */
export function contestMessage(c: Contest): string {
  const seconds = Math.max(1, Math.round(c.withinMs / 1000));
  return (
    `${c.object}: ${c.field} was set back ${c.repairs} times in ${seconds}s and changed again each time by ${managersText(c)}; ` +
    `chartpilot leaves it to them now. To say so in watches.yaml (and keep it so after a restart or upgrade), add to this kind's entry: ${ruleSnippet([c])}`
  );
}

/** `driftDetection: {ignore: [{paths: ["/spec/replicas"], target: {kind: Deployment}}]}`: valid YAML, one line. */
export function ruleSnippet(contests: readonly Pick<Contest, 'kind' | 'pointer'>[]): string {
  const byKind = new Map<string, string[]>();
  for (const c of contests) {
    const paths = byKind.get(c.kind) ?? [];
    if (!paths.includes(c.pointer)) paths.push(c.pointer);
    byKind.set(c.kind, paths);
  }
  const rules = [...byKind].map(([kind, paths]) => `{paths: [${paths.map((p) => JSON.stringify(p)).join(', ')}], target: {kind: ${kind}}}`);
  return `driftDetection: {ignore: [${rules.join(', ')}]}`;
}

function managersText(c: Pick<Contest, 'managers'>): string {
  return c.managers.length === 0 ? 'another field manager (metadata.managedFields names none)' : c.managers.map((m) => `"${m}"`).join(', ');
}

function named(items: readonly string[]): string {
  const shown = items.slice(0, MAX_NAMED).join(', ');
  return items.length > MAX_NAMED ? `${shown} and ${items.length - MAX_NAMED} more` : shown;
}
