/**
 * The watches.yaml key `valuesFrom: {specField, allowCrossNamespace, references}`. Pure: each
 * problem is one line naming the part at fault, what was found and what would be right.
 */
import { isMap, isScalar, isSeq } from 'yaml';
import type { ValuesFromSettings, ValuesReference } from '../core/values-from.js';
import { MAX_REFERENCES, parseReference, REFERENCE_EXAMPLE } from './values-from.js';
import { closest } from './suggest.js';
import { bool, deref, describeNode, fieldsOf, lineOf, scalarText, type Field, type YamlContext } from './yaml-nodes.js';

const KEYS = ['specField', 'allowCrossNamespace', 'references'] as const;
/** A top-level key of the spec, as CRDs name fields. */
const SPEC_FIELD = /^[A-Za-z_][A-Za-z0-9_-]{0,62}$/u;
const EXAMPLE = `e.g. valuesFrom: {specField: valuesFrom, references: [${REFERENCE_EXAMPLE}]}`;

export interface ValuesFromEntryInput {
  readonly ctx: YamlContext;
  readonly field: Field;
  /** Prefix for a problem: entry label and the line given (else the key's). */
  readonly where: (line: number | undefined) => string;
}

/** The entry's valuesFrom; undefined when absent or when it has problems (they are added to `problems`). */
export function readValuesFrom(input: ValuesFromEntryInput, problems: string[]): ValuesFromSettings | undefined {
  const { ctx, field } = input;
  const before = problems.length;
  if (field.value === null) return undefined;
  if (!isMap(field.value)) {
    problems.push(`${input.where(field.line)}: valuesFrom is ${describeNode(field.value)}; expected a map with specField and/or references, ${EXAMPLE}`);
    return undefined;
  }
  let specField: string | undefined;
  let allowCrossNamespace = false;
  const references: ValuesReference[] = [];
  for (const f of fieldsOf(ctx, field.value)) {
    const at = (text: string, line?: number): void => {
      problems.push(`${input.where(line ?? f.line)}: ${text}`);
    };
    if (f.key === 'specField') {
      const text = f.value !== null && isScalar(f.value) && typeof f.value.value === 'string' ? scalarText(f.value) : undefined;
      if (text === undefined || !SPEC_FIELD.test(text)) at(`valuesFrom.specField is ${describeNode(f.value)}; expected the name of a top-level spec field (letters, digits, '_' and '-'), e.g. valuesFrom — CRs list their references there and it is not passed to the chart`);
      else specField = text;
    } else if (f.key === 'allowCrossNamespace') {
      allowCrossNamespace = bool(f, false, (_g, line) => input.where(line ?? f.line), problems);
    } else if (f.key === 'references') {
      if (f.value === null) continue;
      if (!isSeq(f.value)) {
        at(`valuesFrom.references is ${describeNode(f.value)}; expected a list of references such as [${REFERENCE_EXAMPLE}]`);
        continue;
      }
      if (f.value.items.length > MAX_REFERENCES) at(`valuesFrom.references lists ${String(f.value.items.length)} references; at most ${String(MAX_REFERENCES)} are read`);
      f.value.items.forEach((item, i) => {
        const node = deref(ctx, item);
        const parsed = parseReference(node === null ? null : node.toJS(ctx.doc, { maxAliasCount: 100 }), `valuesFrom.references[${String(i)}]`, false);
        if (parsed.ok) references.push(parsed.ref);
        else at(parsed.problem, lineOf(ctx, item));
      });
    } else {
      const guess = closest(f.key, KEYS);
      at(`valuesFrom has the unknown key "${f.key}"; ` + (guess === undefined ? `known keys are ${KEYS.join(', ')}` : `did you mean "${guess}"?`));
    }
  }
  if (problems.length > before) return undefined;
  if (specField === undefined && references.length === 0) {
    problems.push(`${input.where(field.line)}: valuesFrom has neither specField nor references, so it does nothing; ${EXAMPLE}`);
    return undefined;
  }
  return { specField, allowCrossNamespace, references };
}
