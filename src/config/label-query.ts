/**
 * Label selectors in the API's query form (`app=web,tier in (a,b),!legacy`), as Flux's drift
 * ignore rules write `target.labelSelector`: parsed once (at load, with a one-line reason when
 * wrong) and matched against an object's labels with apimachinery's meaning of each operator.
 */
import { labelKeyProblem, labelValueProblem } from './labels.js';

export type LabelRequirement =
  | { readonly key: string; readonly op: 'in' | 'notin'; readonly values: readonly string[] }
  | { readonly key: string; readonly op: 'exists' | 'doesnotexist' };

export type LabelQueryResult = { readonly ok: true; readonly requirements: readonly LabelRequirement[] } | { readonly ok: false; readonly reason: string };

const SET = /^(!?)\s*([^\s!=(),]+)\s+(in|notin)\s+\(([^()]*)\)$/u;
const EQUALITY = /^([^\s!=(),]+)\s*(==|=|!=)\s*([^\s!=(),]*)$/u;
const EXISTS = /^(!?)\s*([^\s!=(),]+)$/u;

/** Parses `text`; the empty selector selects everything. */
export function parseLabelQuery(text: string): LabelQueryResult {
  const requirements: LabelRequirement[] = [];
  for (const part of splitTop(text.trim())) {
    const req = parseRequirement(part.trim());
    if (typeof req === 'string') return { ok: false, reason: req };
    requirements.push(req);
  }
  return { ok: true, requirements };
}

export function matchesLabels(requirements: readonly LabelRequirement[], labels: Readonly<Record<string, string>> | undefined): boolean {
  return requirements.every((r) => {
    const has = labels !== undefined && Object.hasOwn(labels, r.key);
    const value = has ? labels[r.key] : undefined;
    switch (r.op) {
      case 'exists':
        return has;
      case 'doesnotexist':
        return !has;
      case 'in':
        return value !== undefined && r.values.includes(value);
      case 'notin':
        return value === undefined || !r.values.includes(value);
    }
  });
}

/** Splits on commas outside parentheses. */
function splitTop(text: string): string[] {
  if (text === '') return [];
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts;
}

const EXAMPLE = 'e.g. app.kubernetes.io/name=web, tier in (a,b) or !legacy';

function parseRequirement(part: string): LabelRequirement | string {
  if (part === '') return `an empty requirement (a stray ","); write requirements separated by single commas, ${EXAMPLE}`;
  const set = SET.exec(part);
  if (set !== null) {
    const [, bang = '', key = '', op = '', list = ''] = set;
    if (bang !== '') return `"${part}": "!" goes only before a bare key (!key); write ${key} notin (…) instead`;
    const values = list.trim() === '' ? [] : list.split(',').map((v) => v.trim());
    if (values.some((v) => v === '')) return `"${part}" has an empty value in its list; remove the extra ","`;
    return checked({ key, op: op === 'in' ? 'in' : 'notin', values }, part);
  }
  const eq = EQUALITY.exec(part);
  if (eq !== null) {
    const [, key = '', op = '', value = ''] = eq;
    return checked({ key, op: op === '!=' ? 'notin' : 'in', values: [value] }, part);
  }
  const exists = EXISTS.exec(part);
  if (exists !== null) {
    const [, bang = '', key = ''] = exists;
    return checked({ key, op: bang === '' ? 'exists' : 'doesnotexist' }, part);
  }
  return `"${part}" is not a label requirement; ${EXAMPLE}`;
}

function checked(req: LabelRequirement, part: string): LabelRequirement | string {
  const keyProblem = labelKeyProblem(req.key);
  if (keyProblem !== undefined) return `"${part}": ${keyProblem}`;
  if (req.op === 'in' || req.op === 'notin') {
    if (req.values.length === 0) return `"${part}" lists no values; write at least one, e.g. ${req.key} in (a)`;
    for (const v of req.values) {
      const p = labelValueProblem(v);
      if (p !== undefined) return `"${part}": ${p}`;
    }
  }
  return req;
}
