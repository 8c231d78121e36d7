/**
 * A watches.yaml `selector` (a metav1.LabelSelector) turned into the query form the list/watch
 * API takes (`app=web,tier in (a,b),!legacy`), with the same rules and ordering as apimachinery's
 * LabelSelectorAsSelector so the API server sees what operator-sdk would have sent.
 */
import { isMap, isScalar, isSeq, type Node } from 'yaml';
import { labelKeyProblem, labelValueProblem } from './labels.js';
import { deref, describeNode, fieldsOf, lineOf, scalarText, type YamlContext } from './yaml-nodes.js';

export interface SelectorProblem {
  /** 1-based line of the part at fault, when known. */
  readonly line: number | undefined;
  /** Names the part of the selector at fault, e.g. `selector.matchLabels "app": …`. */
  readonly text: string;
}

export interface SelectorResult {
  /** undefined when the selector selects everything (absent or empty). */
  readonly query: string | undefined;
  readonly problems: SelectorProblem[];
}

/** Collects problems, each tagged with the line of the node it is about. */
class Problems {
  readonly list: SelectorProblem[] = [];
  constructor(private readonly ctx: YamlContext) {}
  add(node: unknown, text: string): void {
    this.list.push({ line: lineOf(this.ctx, node), text });
  }
  at(line: number | undefined, text: string): void {
    this.list.push({ line, text });
  }
}

const OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'] as const;
type Operator = (typeof OPERATORS)[number];

interface Requirement {
  readonly key: string;
  readonly text: string;
}

export function selectorToQuery(ctx: YamlContext, node: Node | null): SelectorResult {
  const problems = new Problems(ctx);
  if (node === null) return { query: undefined, problems: [] };
  if (!isMap(node)) {
    problems.add(node, `selector is ${describeNode(node)}; expected a map with matchLabels and/or matchExpressions`);
    return { query: undefined, problems: problems.list };
  }
  const reqs: Requirement[] = [];
  for (const field of fieldsOf(ctx, node)) {
    if (field.key === 'matchLabels') readMatchLabels(ctx, field.value, reqs, problems);
    else if (field.key === 'matchExpressions') readMatchExpressions(ctx, field.value, reqs, problems);
    else {
      problems.at(
        field.line,
        `selector has unknown key "${field.key}"; a label selector has only matchLabels and matchExpressions`,
      );
    }
  }
  if (problems.list.length > 0) return { query: undefined, problems: problems.list };
  // apimachinery sorts requirements by key (stable), so the query string is canonical.
  const sorted = reqs
    .map((r, i) => ({ r, i }))
    .sort((a, b) => (a.r.key < b.r.key ? -1 : a.r.key > b.r.key ? 1 : a.i - b.i))
    .map((x) => x.r.text);
  return { query: sorted.length === 0 ? undefined : sorted.join(','), problems: [] };
}

function readMatchLabels(ctx: YamlContext, node: Node | null, reqs: Requirement[], problems: Problems): void {
  if (node === null) return;
  if (!isMap(node)) {
    problems.add(node, `selector.matchLabels is ${describeNode(node)}; expected a map of label keys to values, e.g. {app: web}`);
    return;
  }
  for (const f of fieldsOf(ctx, node)) {
    const where = `selector.matchLabels "${f.key}"`;
    const keyProblem = labelKeyProblem(f.key);
    if (keyProblem !== undefined) problems.at(f.line, `${where}: ${keyProblem}`);
    if (f.value !== null && !isScalar(f.value)) {
      problems.at(f.line, `${where} is ${describeNode(f.value)}; expected a label value (a string)`);
      continue;
    }
    const value = f.value === null ? '' : scalarText(f.value);
    const valueProblem = labelValueProblem(value);
    if (valueProblem !== undefined) problems.at(f.line, `${where}: ${valueProblem}`);
    reqs.push({ key: f.key, text: `${f.key}=${value}` });
  }
}

function readMatchExpressions(ctx: YamlContext, node: Node | null, reqs: Requirement[], problems: Problems): void {
  if (node === null) return;
  if (!isSeq(node)) {
    problems.add(node, `selector.matchExpressions is ${describeNode(node)}; expected a list of {key, operator, values}`);
    return;
  }
  node.items.forEach((item, i) => {
    const where = `selector.matchExpressions[${i}]`;
    const expr = deref(ctx, item);
    if (!isMap(expr)) {
      problems.add(item, `${where} is ${describeNode(expr)}; expected a map {key, operator, values}`);
      return;
    }
    const before = problems.list.length;
    let key: string | undefined;
    let operator: Operator | undefined;
    let values: string[] = [];
    for (const f of fieldsOf(ctx, expr)) {
      if (f.key === 'key') {
        if (f.value === null || !isScalar(f.value)) {
          problems.at(f.line, `${where}.key is ${describeNode(f.value)}; expected a label key`);
          continue;
        }
        key = scalarText(f.value);
        const p = labelKeyProblem(key);
        if (p !== undefined) problems.at(f.line, `${where}.key: ${p}`);
      } else if (f.key === 'operator') {
        const text = f.value !== null && isScalar(f.value) ? scalarText(f.value) : undefined;
        operator = OPERATORS.find((o) => o === text);
        if (operator === undefined) {
          const fix = OPERATORS.find((o) => o.toLowerCase() === text?.toLowerCase());
          problems.at(
            f.line,
            `${where}.operator is ${describeNode(f.value)}; expected one of ${OPERATORS.join(', ')}` +
              (fix === undefined ? '' : ` (did you mean ${fix}?)`),
          );
        }
      } else if (f.key === 'values') {
        values = readValues(ctx, f.value, f.line, `${where}.values`, problems);
      } else {
        problems.at(f.line, `${where} has unknown key "${f.key}"; expected key, operator and values`);
      }
    }
    if (problems.list.length > before) return;
    const line = lineOf(ctx, expr);
    if (key === undefined) {
      problems.at(line, `${where} has no key; set key to the label key to test`);
      return;
    }
    if (operator === undefined) {
      problems.at(line, `${where} has no operator; expected one of ${OPERATORS.join(', ')}`);
      return;
    }
    if ((operator === 'In' || operator === 'NotIn') && values.length === 0) {
      problems.at(line, `${where}: operator ${operator} needs a non-empty values list`);
      return;
    }
    if ((operator === 'Exists' || operator === 'DoesNotExist') && values.length > 0) {
      problems.at(line, `${where}: operator ${operator} takes no values; remove values`);
      return;
    }
    reqs.push({ key, text: requirementText(key, operator, values) });
  });
}

function readValues(
  ctx: YamlContext,
  node: Node | null,
  line: number | undefined,
  where: string,
  problems: Problems,
): string[] {
  if (node === null) return [];
  if (!isSeq(node)) {
    problems.at(line, `${where} is ${describeNode(node)}; expected a list of label values, e.g. [a, b]`);
    return [];
  }
  const values: string[] = [];
  for (const v of node.items) {
    const vn = deref(ctx, v);
    if (vn !== null && !isScalar(vn)) {
      problems.add(v, `${where} holds ${describeNode(vn)}; expected label values (strings)`);
      continue;
    }
    const text = vn === null ? '' : scalarText(vn);
    const p = labelValueProblem(text);
    if (p !== undefined) problems.add(v, `${where}: ${p}`);
    values.push(text);
  }
  return values;
}

function requirementText(key: string, operator: Operator, values: string[]): string {
  // apimachinery prints set values sorted and de-duplicated.
  const set = [...new Set(values)].sort();
  switch (operator) {
    case 'In':
      return `${key} in (${set.join(',')})`;
    case 'NotIn':
      return `${key} notin (${set.join(',')})`;
    case 'Exists':
      return key;
    case 'DoesNotExist':
      return `!${key}`;
  }
}
