/** metav1.Condition bookkeeping: lastTransitionTime moves only when the status flips. */
import type { Condition } from './model.js';

export interface ConditionInput {
  readonly type: string;
  readonly status: Condition['status'];
  readonly reason: string;
  readonly message: string;
}

export function findCondition(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

export function setCondition(
  conditions: readonly Condition[],
  input: ConditionInput,
  observedGeneration: number | undefined,
  now: string,
): Condition[] {
  const existing = findCondition(conditions, input.type);
  const next: Condition = {
    type: input.type,
    status: input.status,
    reason: input.reason,
    message: input.message,
    lastTransitionTime: existing !== undefined && existing.status === input.status ? existing.lastTransitionTime : now,
    ...(observedGeneration === undefined ? {} : { observedGeneration }),
  };
  if (existing === undefined) return [...conditions, next];
  return conditions.map((c) => (c.type === input.type ? next : c));
}

export function removeCondition(conditions: readonly Condition[], type: string): Condition[] {
  return conditions.filter((c) => c.type !== type);
}
