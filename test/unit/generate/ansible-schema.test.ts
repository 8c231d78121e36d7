/** A role's argument specs as a CR's structural spec schema and sample. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { argumentSpecSample, argumentSpecSchema } from '../../../src/generate/ansible-schema.js';

const MAIN = {
  short_description: 'Runs the app.',
  options: {
    name_prefix: { type: 'str', required: true, description: ['The prefix', 'of every name.'] },
    replica_count: { type: 'int', default: 1 },
    cpu_share: { type: 'float' },
    debug_mode: { type: 'bool', default: false },
    config_path: { type: 'path', default: '/etc/app' },
    anything: { type: 'raw' },
    memory_limit: { type: 'bytes' },
    log_level: { choices: ['debug', 'info'], default: 'info' },
    ports: { type: 'list', elements: 'int', default: [80] },
    zones: { type: 'list', elements: 'str', choices: ['a', 'b'] },
    tags: { type: 'list' },
    extra_labels: { type: 'dict', default: { team: 'x' } },
    database: {
      type: 'dict',
      options: {
        host_name: { type: 'str', required: true },
        port_number: { type: 'int', default: 5432 },
      },
    },
    sidecars: { type: 'list', elements: 'dict', options: { image_ref: { type: 'str', required: true } } },
    oldName: { type: 'str' },
    legacy: { type: 'str', aliases: ['old_legacy'] },
  },
  mutually_exclusive: [['debug_mode', 'log_level']],
};

describe('argumentSpecSchema', () => {
  const { schema, notes } = argumentSpecSchema(MAIN, true);
  const props = schema['properties'] as Record<string, Record<string, unknown>>;

  it('maps every Ansible type to its structural schema, under camelCase keys', () => {
    assert.equal(schema['type'], 'object');
    assert.deepEqual(Object.keys(props).sort(), [
      'anything', 'configPath', 'cpuShare', 'database', 'debugMode', 'extraLabels', 'legacy', 'logLevel', 'memoryLimit', 'namePrefix', 'ports', 'replicaCount', 'sidecars', 'tags', 'zones',
    ]);
    assert.equal(props['namePrefix']?.['type'], 'string');
    assert.equal(props['replicaCount']?.['type'], 'integer');
    assert.equal(props['cpuShare']?.['type'], 'number');
    assert.equal(props['debugMode']?.['type'], 'boolean');
    assert.equal(props['configPath']?.['type'], 'string');
    assert.deepEqual(props['anything'], { 'x-kubernetes-preserve-unknown-fields': true });
    assert.deepEqual(props['memoryLimit'], { 'x-kubernetes-int-or-string': true });
    assert.deepEqual(props['ports']?.['items'], { type: 'integer' });
    assert.deepEqual(props['tags'], { type: 'array', items: { 'x-kubernetes-preserve-unknown-fields': true } });
    assert.deepEqual(props['extraLabels']?.['x-kubernetes-preserve-unknown-fields'], true);
  });

  it('keeps required (by spec key), choices as enum (per element for lists), descriptions and the role\'s default as text', () => {
    assert.deepEqual(schema['required'], ['namePrefix']);
    assert.equal(props['namePrefix']?.['description'], 'The prefix of every name.');
    assert.equal(props['logLevel']?.['default'], undefined, 'defaults stay the role\'s: never stored into CRs by the API server');
    assert.deepEqual(props['logLevel'], { description: 'Default (the role\'s): "info".', type: 'string', enum: ['debug', 'info'] });
    assert.deepEqual((props['zones']?.['items'] as Record<string, unknown>)['enum'], ['a', 'b']);
  });

  it('nests options of dicts and of lists of dicts, with their own required keys', () => {
    assert.deepEqual(props['database'], {
      type: 'object',
      properties: { hostName: { type: 'string' }, portNumber: { description: 'Default (the role\'s): 5432.', type: 'integer' } },
      required: ['hostName'],
    });
    assert.deepEqual(props['sidecars'], { type: 'array', items: { type: 'object', properties: { imageRef: { type: 'string' } }, required: ['imageRef'] } });
  });

  it('notes what the CRD cannot say: unreachable names, aliases, cross-option rules, free-form map keys', () => {
    const text = notes.join('\n');
    assert.match(text, /spec\.oldName: left out: no spec key becomes the variable "oldName"/u);
    assert.match(text, /spec\.legacy: aliases old_legacy are not in the CRD/u);
    assert.match(text, /spec: mutually_exclusive not checked by the CRD/u);
    assert.match(text, /spec\.extraLabels: a free-form map: ansible-operator passes its keys snake_cased too/u);
  });

  it('uses the options\' own names without snake-casing, and is open without options', () => {
    const raw = argumentSpecSchema(MAIN, false);
    assert.ok((raw.schema['properties'] as Record<string, unknown>)['name_prefix']);
    assert.ok((raw.schema['properties'] as Record<string, unknown>)['oldName']);
    assert.deepEqual(argumentSpecSchema({}, true).schema, { type: 'object', 'x-kubernetes-preserve-unknown-fields': true });
  });

  it('leaves choices that do not fit the type to the role, with a note', () => {
    const r = argumentSpecSchema({ options: { size: { type: 'int', choices: [1, 'big'] } } }, true);
    assert.equal((r.schema['properties'] as Record<string, Record<string, unknown>>)['size']?.['enum'], undefined);
    assert.match(r.notes.join('\n'), /spec\.size: choices \[1,"big"\] not checked by the CRD/u);
  });
});

describe('argumentSpecSample', () => {
  it('holds every default under its spec key (nested defaults too) and names required options without one', () => {
    const { spec, missing } = argumentSpecSample(MAIN, true);
    assert.deepEqual(spec, {
      replicaCount: 1,
      debugMode: false,
      configPath: '/etc/app',
      logLevel: 'info',
      ports: [80],
      extraLabels: { team: 'x' },
      // database stays out: its hostName is required and has no default.
    });
    assert.deepEqual(missing, ['namePrefix']);
    assert.deepEqual(argumentSpecSample({ options: { db: { type: 'dict', required: true, options: { host: { type: 'str', required: true } } } } }, true).missing, ['db.host']);
    assert.deepEqual(argumentSpecSample({ options: { db: { type: 'dict', options: { port_number: { type: 'int', default: 1 } } } } }, true).spec, { db: { portNumber: 1 } });
  });
});
