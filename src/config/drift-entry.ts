/**
 * The watches.yaml key `driftDetection: {mode, ignore: [{paths, target}]}` (Flux helm-controller's
 * shape; Flux's mode names `enabled`/`disabled` are accepted for `repair`/`off`). Pure: each problem
 * is one line naming the part at fault, what was found and what would be right.
 */
import { isMap, isScalar, isSeq, type Node } from 'yaml';
import { parsePointer } from '../lib/json-pointer.js';
import type { DriftDetection, DriftIgnoreRule, DriftMode, DriftTarget } from '../core/model.js';
import { parseLabelQuery } from './label-query.js';
import { closest } from './suggest.js';
import { deref, describeNode, fieldsOf, lineOf, scalarText, type Field, type YamlContext } from './yaml-nodes.js';

const MODES: Readonly<Record<string, DriftMode>> = { repair: 'repair', warn: 'warn', off: 'off', enabled: 'repair', disabled: 'off' };
const DRIFT_KEYS = ['mode', 'ignore'] as const;
const RULE_KEYS = ['paths', 'target'] as const;
const TARGET_KEYS = ['kind', 'name', 'namespace', 'labelSelector'] as const;
/** Flux's other target keys: named as unsupported rather than as typos. */
const FLUX_ONLY_TARGET_KEYS = new Set(['group', 'version', 'annotationSelector']);

const EXAMPLE = 'e.g. driftDetection: {mode: repair, ignore: [{paths: [/spec/replicas], target: {kind: Deployment}}]}';

export interface DriftEntryInput {
  readonly ctx: YamlContext;
  readonly field: Field;
  /** Prefix for a problem: entry label and the line given (else the key's). */
  readonly where: (line: number | undefined) => string;
}

/** The entry's drift settings; undefined when it has problems (they are added to `problems`). */
export function readDriftDetection(input: DriftEntryInput, problems: string[]): DriftDetection | undefined {
  const { ctx, field } = input;
  const before = problems.length;
  const say = (node: unknown, text: string): void => {
    problems.push(`${input.where(lineOf(ctx, node) ?? field.line)}: ${text}`);
  };
  if (field.value === null) return undefined;
  if (!isMap(field.value)) {
    say(field.value, `driftDetection is ${describeNode(field.value)}; expected a map with mode and/or ignore, ${EXAMPLE}`);
    return undefined;
  }
  let mode: DriftMode = 'repair';
  const ignore: DriftIgnoreRule[] = [];
  for (const f of fieldsOf(ctx, field.value)) {
    const at = (text: string): void => {
      problems.push(`${input.where(f.line)}: ${text}`);
    };
    if (f.key === 'mode') {
      const text = f.value !== null && isScalar(f.value) ? scalarText(f.value) : undefined;
      const found = text === undefined ? undefined : MODES[text];
      if (found === undefined) at(`driftDetection.mode is ${describeNode(f.value)}; expected repair (set drifted fields back, the default), warn (an Event and the Drifted condition, no write) or off (readiness only)`);
      else mode = found;
    } else if (f.key === 'ignore') {
      if (f.value === null) continue;
      if (!isSeq(f.value)) {
        at(`driftDetection.ignore is ${describeNode(f.value)}; expected a list of rules {paths: [<JSON pointer>…], target: {kind, name, labelSelector}}`);
        continue;
      }
      f.value.items.forEach((item, i) => {
        const rule = readRule(ctx, deref(ctx, item), `driftDetection.ignore[${i}]`, (line, text) => {
          problems.push(`${input.where(line ?? lineOf(ctx, item) ?? f.line)}: ${text}`);
        });
        if (rule !== undefined) ignore.push(rule);
      });
    } else {
      const guess = closest(f.key, DRIFT_KEYS);
      at(`driftDetection has unknown key "${f.key}"; ${guess === undefined ? `its keys are ${DRIFT_KEYS.join(' and ')}` : `did you mean "${guess}"?`}`);
    }
  }
  return problems.length > before ? undefined : { mode, ignore };
}

type Say = (line: number | undefined, text: string) => void;

function readRule(ctx: YamlContext, node: Node | null, name: string, say: Say): DriftIgnoreRule | undefined {
  if (!isMap(node)) {
    say(lineOf(ctx, node), `${name} is ${describeNode(node)}; expected a map {paths: [<JSON pointer>…], target: {…}}`);
    return undefined;
  }
  const state = { failed: false };
  const fail: Say = (line, text) => {
    state.failed = true;
    say(line, text);
  };
  let paths: string[] | undefined;
  let target: DriftTarget | undefined;
  for (const f of fieldsOf(ctx, node)) {
    if (f.key === 'paths') paths = readPaths(ctx, f, `${name}.paths`, fail);
    else if (f.key === 'target') target = readTarget(ctx, f, `${name}.target`, fail);
    else {
      const guess = closest(f.key, RULE_KEYS);
      fail(f.line, `${name} has unknown key "${f.key}"; ${guess === undefined ? 'a rule has paths and target' : `did you mean "${guess}"?`}`);
    }
  }
  if (paths === undefined && !state.failed) fail(lineOf(ctx, node), `${name} has no paths; list the JSON pointers of the fields to leave alone, e.g. paths: [/spec/replicas]`);
  if (state.failed || paths === undefined) return undefined;
  return target === undefined ? { paths } : { paths, target };
}

function readPaths(ctx: YamlContext, f: Field, name: string, fail: Say): string[] | undefined {
  if (!isSeq(f.value) || f.value.items.length === 0) {
    fail(f.line, `${name} is ${describeNode(f.value)}; expected a non-empty list of JSON pointers, e.g. [/spec/replicas]`);
    return undefined;
  }
  const out: string[] = [];
  f.value.items.forEach((item, i) => {
    const v = deref(ctx, item);
    const line = lineOf(ctx, item) ?? f.line;
    if (!isScalar(v) || typeof v.value !== 'string') {
      fail(line, `${name}[${i}] is ${describeNode(v)}; expected a JSON pointer such as /spec/replicas`);
      return;
    }
    const parsed = parsePointer(v.value);
    if (!parsed.ok) fail(line, `${name}[${i}] ${parsed.reason}`);
    else out.push(v.value);
  });
  return out;
}

function readTarget(ctx: YamlContext, f: Field, name: string, fail: Say): DriftTarget | undefined {
  if (f.value === null) return undefined;
  if (!isMap(f.value)) {
    fail(f.line, `${name} is ${describeNode(f.value)}; expected a map with kind, name, namespace and/or labelSelector (omit target for every object)`);
    return undefined;
  }
  const target: Record<string, string> = {};
  for (const t of fieldsOf(ctx, f.value)) {
    const key = TARGET_KEYS.find((k) => k === t.key);
    if (key === undefined) {
      const guess = closest(t.key, TARGET_KEYS);
      fail(
        t.line,
        FLUX_ONLY_TARGET_KEYS.has(t.key)
          ? `${name}.${t.key} is not supported by chartpilot; select objects with ${TARGET_KEYS.join(', ')}`
          : `${name} has unknown key "${t.key}"; ${guess === undefined ? `a target has ${TARGET_KEYS.join(', ')}` : `did you mean "${guess}"?`}`,
      );
      continue;
    }
    if (t.value === null || !isScalar(t.value) || typeof t.value.value !== 'string' || t.value.value === '') {
      fail(t.line, `${name}.${key} is ${describeNode(t.value)}; expected a non-empty string${key === 'labelSelector' ? ', e.g. app.kubernetes.io/component=web' : key === 'kind' ? ', e.g. Deployment' : ''}`);
      continue;
    }
    const value = t.value.value;
    if (key === 'labelSelector') {
      const parsed = parseLabelQuery(value);
      if (!parsed.ok) {
        fail(t.line, `${name}.labelSelector ${parsed.reason}`);
        continue;
      }
    }
    target[key] = value;
  }
  return target;
}
