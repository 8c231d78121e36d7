/**
 * The CEL conformance suite (cel-spec's own cases, as @bufbuild/cel-spec ships them) run against the
 * library outputs and readyWhen use, set up as they use it: the sections of the language an output
 * or a readyWhen is written in. Every case passes except the known deviations, listed with the
 * reason in cel-deviations.ts; a library upgrade that changes either set fails here.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { tests } from '@bufbuild/cel-spec/testdata/conformance.js';
import { Environment, Optional, evaluate } from '@marcbachmann/cel-js';
import { CEL_OPTIONS } from '../../../src/config/status-expressions.js';
import { KNOWN_DEVIATIONS } from './cel-deviations.js';

/** The sections outputs and readyWhen are written in (no protobuf messages, timestamps or extensions). */
const SECTIONS = ['basic', 'comparisons', 'conversions', 'fields', 'fp_math', 'integer_math', 'lists', 'logic', 'macros', 'optionals', 'plumbing', 'string'];
/** Cases that need protobuf messages, types as values or enums: no Kubernetes object has those. */
const UNSUPPORTED_VALUES = new Set(['objectValue', 'typeValue', 'enumValue']);
const PROTO_NAMES = /TestAllTypes|google\.protobuf/u;

// The library does not export its uint class; a uint literal gives it.
const UnsignedInt = (evaluate('0u') as object).constructor as new (v: bigint) => { readonly value: bigint };

interface Case {
  readonly id: string;
  readonly expr: string;
  readonly disableCheck: boolean;
  readonly bindings: Record<string, unknown>;
  readonly expected: { readonly error: true } | { readonly value: unknown };
}

type Json = Record<string, unknown>;
type SerializedIncrementalTestSuite = typeof tests;
type SerializedIncrementalTest = NonNullable<SerializedIncrementalTestSuite['tests']>[number];

function valueOf(v: Json): unknown {
  if ('int64Value' in v) return BigInt(v['int64Value'] as string);
  if ('uint64Value' in v) return new UnsignedInt(BigInt(v['uint64Value'] as string));
  if ('doubleValue' in v) return Number(v['doubleValue']);
  if ('stringValue' in v) return v['stringValue'];
  if ('boolValue' in v) return v['boolValue'];
  if ('nullValue' in v) return null;
  if ('bytesValue' in v) return new Uint8Array(Buffer.from(v['bytesValue'] as string, 'base64'));
  if ('listValue' in v) return ((v['listValue'] as { values?: Json[] }).values ?? []).map(valueOf);
  if ('mapValue' in v) return new Map(((v['mapValue'] as { entries?: { key: Json; value: Json }[] }).entries ?? []).map((e) => [valueOf(e.key), valueOf(e.value)]));
  throw new Error(`a value of a kind this harness does not read: ${Object.keys(v).join(', ')}`);
}

/** A canonical text of a CEL value, to compare what the library gives with what the suite expects. */
function canonical(v: unknown): string {
  if (typeof v === 'bigint') return `int:${v.toString()}`;
  if (v instanceof UnsignedInt) return `uint:${v.value.toString()}`;
  if (typeof v === 'number') return `double:${Object.is(v, -0) ? '-0' : String(v)}`;
  if (typeof v === 'string') return `string:${JSON.stringify(v)}`;
  if (typeof v === 'boolean') return `bool:${String(v)}`;
  if (v === null) return 'null';
  if (v instanceof Uint8Array) return `bytes:${Buffer.from(v).toString('base64')}`;
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v instanceof Optional) return `optional(${v.hasValue() ? canonical(v.value()) : ''})`;
  if (v instanceof Map) return `{${[...v].map(([k, x]) => `${canonical(k)}:${canonical(x)}`).sort().join(',')}}`;
  if (typeof v === 'object') return `{${Object.entries(v).map(([k, x]) => `${canonical(k)}:${canonical(x)}`).sort().join(',')}}`;
  return `unknown:${typeof v}`;
}

function usesUnsupported(v: unknown): boolean {
  return v !== null && typeof v === 'object' && Object.entries(v).some(([k, x]) => UNSUPPORTED_VALUES.has(k) || usesUnsupported(x));
}

/** The cases of the sections, named file/section/name (#n when a name repeats), and how many were left out. */
function casesOf(): { cases: Case[]; skipped: number } {
  const cases: Case[] = [];
  let skipped = 0;
  const seen = new Map<string, number>();
  const add = (path: string, t: SerializedIncrementalTest): void => {
    const o = t.original;
    const base = `${path}/${o.name ?? o.expr}`;
    const n = (seen.get(base) ?? 0) + 1;
    seen.set(base, n);
    const id = n === 1 ? base : `${base}#${String(n)}`;
    if (o['container'] !== undefined || usesUnsupported(o['value']) || usesUnsupported(o['bindings']) || PROTO_NAMES.test(o.expr)) {
      skipped++;
      return;
    }
    const bindings: Record<string, unknown> = {};
    for (const [name, b] of Object.entries((o['bindings'] ?? {}) as Record<string, { value: Json }>)) bindings[name] = valueOf(b.value);
    const expected = o['evalError'] === undefined ? { value: valueOf((o['value'] ?? { boolValue: true }) as Json) } : ({ error: true } as const);
    cases.push({ id, expr: o.expr, disableCheck: o['disableCheck'] === true, bindings, expected });
  };
  const walk = (suite: SerializedIncrementalTestSuite, path: string): void => {
    for (const t of suite.tests ?? []) add(path, t);
    for (const s of suite.suites ?? []) walk(s, `${path}/${s.name}`);
  };
  for (const file of tests.suites ?? []) if (SECTIONS.includes(file.name)) walk(file, file.name);
  return { cases, skipped };
}

/** Whether the library gives what the suite expects: the value, or an error (at parse, check or run). */
function passes(c: Case): boolean {
  const env = new Environment({ ...CEL_OPTIONS, unlistedVariablesAreDyn: true });
  let got: unknown;
  try {
    const program = env.parse(c.expr);
    if (!c.disableCheck) {
      const checked = env.check(c.expr);
      if (!checked.valid) return 'error' in c.expected;
    }
    got = program(c.bindings);
  } catch {
    return 'error' in c.expected;
  }
  return 'value' in c.expected && canonical(got) === canonical(c.expected.value);
}

describe('CEL conformance (cel-spec) of the library outputs and readyWhen use', () => {
  const { cases, skipped } = casesOf();

  it('passes every case of the sections it is used in, except the known deviations', () => {
    const failing = cases.filter((c) => !passes(c)).map((c) => c.id);
    const known = Object.values(KNOWN_DEVIATIONS).flat();
    assert.deepEqual(
      { newlyFailing: failing.filter((id) => !known.includes(id)), nowPassing: known.filter((id) => !failing.includes(id)) },
      { newlyFailing: [], nowPassing: [] },
      'a change of the CEL library: update cel-deviations.ts and docs/guides/outputs.md',
    );
    // The figures docs/guides/outputs.md reports.
    assert.deepEqual({ cases: cases.length, passing: cases.length - failing.length, skipped }, { cases: 846, passing: 740, skipped: 105 });
  });

  it('reads the suite: a deliberately wrong expectation fails', () => {
    assert.equal(passes({ id: 'x', expr: '1 + 1', disableCheck: false, bindings: {}, expected: { value: 3n } }), false);
    assert.equal(passes({ id: 'x', expr: '1 + 1', disableCheck: false, bindings: {}, expected: { value: 2n } }), true);
    assert.equal(passes({ id: 'x', expr: '1 / 0', disableCheck: false, bindings: {}, expected: { error: true } }), true);
  });
});
