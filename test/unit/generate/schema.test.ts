/** values.schema.json → structural CRD schema: what the API server will check, and what it will not. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { structuralSpecSchema, toRe2, type Schema } from '../../../src/generate/schema.js';
import { REPO_ROOT } from './helpers.js';

const PRESERVE = 'x-kubernetes-preserve-unknown-fields';

function spec(source: unknown, defaults: unknown = {}): { schema: Schema; notes: readonly string[] } {
  return structuralSpecSchema(source, defaults);
}

function prop(s: Schema, ...path: string[]): Schema {
  let cur: unknown = s;
  for (const p of path) cur = (cur as { properties: Record<string, unknown> }).properties[p];
  return cur as Schema;
}

describe('structural schema from values.schema.json', () => {
  it('maps the sample chart: types, bounds, enums and descriptions kept, $schema dropped', () => {
    const source: unknown = JSON.parse(readFileSync(join(REPO_ROOT, 'charts/webapp/values.schema.json'), 'utf8'));
    const { schema } = spec(source);
    assert.equal(schema['$schema'], undefined);
    assert.equal(schema['type'], 'object');
    assert.deepEqual(prop(schema, 'replicaCount'), { description: 'Number of web server pods.', type: 'integer', minimum: 0, maximum: 50 });
    assert.deepEqual(prop(schema, 'image', 'pullPolicy'), { type: 'string', enum: ['Always', 'IfNotPresent', 'Never'] });
    // additionalProperties: false → pruning, not preserve-unknown-fields
    assert.equal(schema[PRESERVE], undefined);
    assert.equal(prop(schema, 'image')[PRESERVE], undefined);
    assert.equal(prop(schema, 'image')['additionalProperties'], undefined);
  });

  it('keeps unlisted keys where JSON Schema allows them (no additionalProperties = allowed)', () => {
    const { schema } = spec({ type: 'object', properties: { a: { type: 'string' } } });
    assert.equal(schema[PRESERVE], true);
    assert.deepEqual(prop(schema, 'a'), { type: 'string' });
  });

  it('turns additionalProperties into a map schema when there are no properties', () => {
    const { schema } = spec({ type: 'object', properties: { labels: { type: 'object', additionalProperties: { type: 'string' } } }, additionalProperties: false });
    assert.deepEqual(prop(schema, 'labels'), { type: 'object', additionalProperties: { type: 'string' } });
  });

  it('notes that properties plus an additionalProperties schema cannot both be checked', () => {
    const { schema, notes } = spec({ type: 'object', properties: { a: { type: 'string' } }, additionalProperties: { type: 'integer' } });
    assert.equal(schema[PRESERVE], true);
    assert.equal(schema['additionalProperties'], undefined);
    assert.match(notes.join('\n'), /spec: keys beyond the listed properties are kept but not checked/);
  });

  it('maps integer|string to int-or-string, and X|null to nullable X', () => {
    const { schema } = spec({
      type: 'object',
      additionalProperties: false,
      properties: {
        port: { type: ['integer', 'string'] },
        port2: { anyOf: [{ type: 'integer' }, { type: 'string' }] },
        name: { type: ['string', 'null'] },
        tag: { oneOf: [{ type: 'string', minLength: 1 }, { type: 'null' }] },
        both: { type: ['integer', 'number'] },
      },
    });
    assert.deepEqual(prop(schema, 'port'), { 'x-kubernetes-int-or-string': true });
    assert.deepEqual(prop(schema, 'port2'), { 'x-kubernetes-int-or-string': true });
    assert.deepEqual(prop(schema, 'name'), { type: 'string', nullable: true });
    assert.deepEqual(prop(schema, 'tag'), { type: 'string', minLength: 1, nullable: true });
    assert.deepEqual(prop(schema, 'both'), { type: 'number' });
  });

  it('accepts anything (and says so) for types a CRD cannot express', () => {
    const { schema, notes } = spec({ type: 'object', additionalProperties: false, properties: { q: { type: ['string', 'number'], description: 'a quantity' } } });
    assert.deepEqual(prop(schema, 'q'), { description: 'a quantity', [PRESERVE]: true });
    assert.match(notes.join('\n'), /spec\.q: a value of type string or number has no CRD equivalent/);
  });

  it('turns const into a one-value enum and draft-07 exclusive bounds into OpenAPI flags', () => {
    const { schema } = spec({
      type: 'object',
      additionalProperties: false,
      properties: { mode: { const: 'fast' }, ratio: { type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 1 } },
    });
    assert.deepEqual(prop(schema, 'mode'), { type: 'string', enum: ['fast'] });
    assert.deepEqual(prop(schema, 'ratio'), { type: 'number', minimum: 0, exclusiveMinimum: true, maximum: 1, exclusiveMaximum: true });
  });

  it('inlines local $refs and gives up on recursive or remote ones', () => {
    const { schema, notes } = spec({
      definitions: {
        port: { type: 'integer', minimum: 1 },
        node: { type: 'object', properties: { children: { type: 'array', items: { $ref: '#/definitions/node' } } } },
      },
      type: 'object',
      additionalProperties: false,
      properties: {
        http: { $ref: '#/definitions/port', description: 'HTTP port' },
        tree: { $ref: '#/definitions/node' },
        remote: { $ref: 'https://example.com/schema.json' },
      },
    });
    assert.deepEqual(prop(schema, 'http'), { description: 'HTTP port', type: 'integer', minimum: 1 });
    const children = prop(schema, 'tree', 'children');
    assert.deepEqual(children['items'], { [PRESERVE]: true });
    assert.deepEqual(prop(schema, 'remote'), { [PRESERVE]: true });
    assert.match(notes.join('\n'), /recursive/);
    assert.match(notes.join('\n'), /points outside values\.schema\.json/);
  });

  it('merges allOf into its parent', () => {
    const { schema } = spec({
      type: 'object',
      additionalProperties: false,
      properties: {
        size: { allOf: [{ type: 'integer', minimum: 1 }, { maximum: 10 }, { minimum: 2 }] },
        obj: { allOf: [{ type: 'object', properties: { a: { type: 'string' } } }, { properties: { a: { maxLength: 3 }, b: { type: 'boolean' } } }] },
      },
    });
    assert.deepEqual(prop(schema, 'size'), { type: 'integer', minimum: 2, maximum: 10 });
    assert.deepEqual(prop(schema, 'obj', 'a'), { type: 'string', maxLength: 3 });
    assert.deepEqual(prop(schema, 'obj', 'b'), { type: 'boolean' });
  });

  it('keeps anyOf/oneOf made of value checks on known fields, drops shape-changing ones', () => {
    const { schema, notes } = spec({
      type: 'object',
      additionalProperties: false,
      properties: {
        tls: {
          type: 'object',
          additionalProperties: false,
          properties: { secretName: { type: 'string' }, certificate: { type: 'string' } },
          oneOf: [{ required: ['secretName'] }, { required: ['certificate'], properties: { certificate: { type: 'string', minLength: 10 } } }],
        },
        mixed: { type: 'object', anyOf: [{ properties: { x: { type: 'string' } } }, { properties: { y: { type: 'integer' } } }] },
      },
    });
    assert.deepEqual(prop(schema, 'tls')['oneOf'], [{ required: ['secretName'] }, { required: ['certificate'], properties: { certificate: { minLength: 10 } } }]);
    assert.equal(prop(schema, 'mixed')['anyOf'], undefined);
    assert.equal(prop(schema, 'mixed')[PRESERVE], true);
    assert.match(notes.join('\n'), /spec\.mixed: anyOf alternatives that change the shape/);
  });

  it('drops required keys that values.yaml provides (Helm validates after merging defaults)', () => {
    const { schema } = spec(
      {
        type: 'object',
        required: ['image', 'host'],
        properties: { image: { type: 'object', required: ['repository', 'tag'], properties: { repository: { type: 'string' }, tag: { type: 'string' } } }, host: { type: 'string' } },
      },
      { image: { repository: 'nginx', tag: null } },
    );
    assert.deepEqual(schema['required'], ['host']);
    assert.deepEqual(prop(schema, 'image')['required'], ['tag']);
  });

  it('maps uniqueItems on scalars to a set list, and notes it elsewhere', () => {
    const { schema, notes } = spec({
      type: 'object',
      additionalProperties: false,
      properties: {
        hosts: { type: 'array', items: { type: 'string' }, uniqueItems: true, minItems: 1 },
        objs: { type: 'array', items: { type: 'object' }, uniqueItems: true },
        tuple: { type: 'array', items: [{ type: 'string' }, { type: 'integer' }] },
        untyped: { type: 'array' },
      },
    });
    assert.deepEqual(prop(schema, 'hosts'), { type: 'array', items: { type: 'string' }, minItems: 1, 'x-kubernetes-list-type': 'set' });
    assert.equal(prop(schema, 'objs')['uniqueItems'], undefined);
    assert.deepEqual(prop(schema, 'tuple')['items'], { [PRESERVE]: true });
    assert.deepEqual(prop(schema, 'untyped')['items'], { [PRESERVE]: true });
    assert.match(notes.join('\n'), /spec\.objs: uniqueItems on non-scalar items/);
    assert.match(notes.join('\n'), /spec\.tuple: per-position items/);
  });

  it('drops patterns RE2 cannot compile and formats the API server reads differently', () => {
    const { schema, notes } = spec({
      type: 'object',
      additionalProperties: false,
      properties: {
        a: { type: 'string', pattern: '^(?!admin).*$' },
        b: { type: 'string', pattern: '^[a-z]+$', format: 'hostname' },
        c: { type: 'string', format: 'duration' },
      },
    });
    assert.deepEqual(prop(schema, 'a'), { type: 'string' });
    assert.deepEqual(prop(schema, 'b'), { type: 'string', pattern: '^[a-z]+$', format: 'hostname' });
    assert.deepEqual(prop(schema, 'c'), { type: 'string' });
    assert.match(notes.join('\n'), /spec\.a: pattern .*(RE2)/);
    assert.match(notes.join('\n'), /spec\.c: format "duration"/);
  });

  it('leaves out defaults and examples (Helm applies values.yaml), and properties that must be absent', () => {
    const { schema } = spec({ type: 'object', additionalProperties: false, properties: { a: { type: 'integer', default: 3, examples: [1] }, gone: false } });
    assert.deepEqual(prop(schema, 'a'), { type: 'integer' });
    assert.equal((schema['properties'] as Record<string, unknown>)['gone'], undefined);
  });

  it('infers the type from the keywords when type is missing', () => {
    const { schema } = spec({
      properties: { list: { items: { enum: [1, 2] } }, color: { enum: ['red', 'green'] }, loose: { minLength: 2 } },
      additionalProperties: false,
    });
    assert.equal(schema['type'], 'object');
    assert.deepEqual(prop(schema, 'list'), { type: 'array', items: { type: 'integer', enum: [1, 2] } });
    assert.deepEqual(prop(schema, 'color'), { type: 'string', enum: ['red', 'green'] });
    assert.deepEqual(prop(schema, 'loose'), { [PRESERVE]: true });
  });

  it('accepts anything, with a note, for alternatives of different types', () => {
    const { schema, notes } = spec({
      type: 'object',
      additionalProperties: false,
      properties: { either: { anyOf: [{ type: 'object' }, { type: 'array', items: { type: 'string' } }] }, loose: { minLength: 2 } },
    });
    assert.deepEqual(prop(schema, 'either'), { [PRESERVE]: true });
    assert.match(notes.join('\n'), /spec\.either: alternatives \(anyOf\/oneOf\) of different types/);
    assert.match(notes.join('\n'), /spec\.loose: minLength without a type; any value accepted/);
  });

  it('always gives spec an object, whatever the root says', () => {
    assert.deepEqual(spec(true).schema, { type: 'object', [PRESERVE]: true });
    assert.deepEqual(spec({ type: 'string' }).schema, { type: 'object', [PRESERVE]: true });
    assert.match(spec({ type: 'string' }).notes.join('\n'), /root is not an object/);
    assert.deepEqual(spec({}).schema, { type: 'object', [PRESERVE]: true });
  });

  it('notes keywords CRDs do not have', () => {
    const { notes } = spec({ type: 'object', properties: { a: { type: 'object', if: { required: ['x'] }, then: { required: ['y'] } } } });
    assert.match(notes.join('\n'), /spec\.a: if, then not supported/);
  });
});

describe('toRe2', () => {
  it('keeps what RE2 compiles and rewrites \\u escapes', () => {
    assert.equal(toRe2('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'), '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$');
    assert.equal(toRe2('^\\u00e9+$'), '^\\x{00e9}+$');
    assert.equal(toRe2('^\\u{1F600}$'), '^\\x{1F600}$');
    assert.equal(toRe2('^\\\\u0041$'), '^\\\\u0041$', 'an escaped backslash followed by u is not an escape');
  });

  it('refuses lookaround, backreferences and invalid patterns', () => {
    assert.equal(toRe2('(?=a)'), undefined);
    assert.equal(toRe2('(?<!a)b'), undefined);
    assert.equal(toRe2('(a)\\1'), undefined);
    assert.equal(toRe2('(?<n>a)\\k<n>'), undefined);
    assert.equal(toRe2('(unclosed'), undefined);
    assert.equal(toRe2('(?<name>a)'), '(?<name>a)');
  });
});
