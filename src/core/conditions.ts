/**
 * metav1.Condition bookkeeping for both engines: one transition rule (lastTransitionTime moves
 * only when the status flips), observedGeneration on every condition, messages clipped alike.
 */
import type { Condition } from './model.js';

export interface ConditionInput {
  readonly type: string;
  readonly status: Condition['status'];
  readonly reason: string;
  readonly message: string;
}

/** metav1.Condition allows 32 KiB; a failure rarely needs more than a few lines. */
const MAX_MESSAGE = 8_000;

export function clip(message: string): string {
  return message.length <= MAX_MESSAGE ? message : `${message.slice(0, MAX_MESSAGE - 14)}… (truncated)`;
}

export function findCondition<C extends Condition>(conditions: readonly C[] | undefined, type: string): C | undefined {
  return conditions?.find((c) => c.type === type);
}

/**
 * `conditions` with `input` set, in place of the condition of its type or appended. `extra`: what
 * an engine adds to its conditions beyond metav1's (ansible-operator's ansibleResult); a condition
 * set without it has none.
 */
export function setCondition<C extends Condition>(
  conditions: readonly C[],
  input: ConditionInput,
  observedGeneration: number | undefined,
  now: string,
  extra?: Omit<Partial<C>, keyof Condition>,
): C[] {
  const existing = findCondition(conditions, input.type);
  const next = {
    type: input.type,
    status: input.status,
    reason: input.reason,
    message: clip(input.message),
    lastTransitionTime: existing !== undefined && existing.status === input.status ? existing.lastTransitionTime : now,
    ...(observedGeneration === undefined ? {} : { observedGeneration }),
    ...extra,
  } as C;
  if (existing === undefined) return [...conditions, next];
  return conditions.map((c) => (c.type === input.type ? next : c));
}

export function removeCondition<C extends Condition>(conditions: readonly C[], type: string): C[] {
  return conditions.filter((c) => c.type !== type);
}
