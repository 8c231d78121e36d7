/** `chartpilot new --ansible` as a user meets it: help, refusals, and a project whose files fit together. */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { loadWatches } from '../../../src/config/watches.js';
import { isAnsibleEntry } from '../../../src/config/types.js';
import { newCommand } from '../../../src/generate/cli.js';
import { captureIo } from './helpers.js';

const NO_HELM = { HELM_BIN: '/nonexistent/helm' };

describe('chartpilot new --ansible', () => {
  it('prints its own help', async () => {
    const io = captureIo();
    assert.equal(await newCommand(['--ansible', '--help'], io), 0);
    assert.match(io.out(), /^Usage: chartpilot new --ansible <dir> --group <group> --kind <Kind>/u);
  });

  it('refuses missing flags and a bad group, all problems at once, with exit 2', async () => {
    const io = captureIo(NO_HELM);
    assert.equal(await newCommand(['--ansible'], io), 2);
    assert.match(io.err(), /error: name the directory to create: chartpilot new --ansible <dir>/u);
    assert.match(io.err(), /error: --group is required/u);
    assert.match(io.err(), /error: --kind is required/u);
    const bad = captureIo(NO_HELM);
    assert.equal(await newCommand(['--ansible', join(await mkdtemp(join(tmpdir(), 'chartpilot-na-')), 'x'), '--group', 'nodot', '--kind', 'Greeting'], bad), 2);
    assert.match(bad.err(), /group "nodot" cannot hold a CustomResourceDefinition/u);
  });

  it('writes a role, watches.yaml that loads as an Ansible entry, and a CRD, sample and RBAC made from that role, without helm', async () => {
    const dir = join(await mkdtemp(join(tmpdir(), 'chartpilot-na-')), 'shop');
    const io = captureIo(NO_HELM);
    assert.equal(await newCommand(['--ansible', dir, '--group', 'shop.example.com', '--kind', 'Shop', '--version', 'v1beta1'], io), 0, io.err());
    const loaded = await loadWatches(join(dir, 'watches.yaml'), {});
    assert.ok(loaded.ok, loaded.ok ? '' : loaded.problems.join('\n'));
    const entry = loaded.entries[0];
    assert.ok(entry !== undefined && isAnsibleEntry(entry));
    assert.equal(entry.version, 'v1beta1');
    assert.equal(entry.ansible.role, join(dir, 'roles/shop'));
    assert.equal(entry.ansible.finalizer, undefined, 'the finalizer is offered as a comment');
    const crd = parse(await readFile(join(dir, 'deploy/crds/shop.example.com_shops.yaml'), 'utf8')) as { spec: { versions: { name: string; schema: { openAPIV3Schema: { properties: { spec: { properties: Record<string, { enum?: string[] }> } } } } }[] } };
    const version = crd.spec.versions[0];
    assert.ok(version !== undefined);
    assert.equal(version.name, 'v1beta1');
    assert.deepEqual(Object.keys(version.schema.openAPIV3Schema.properties.spec.properties), ['message', 'logLevel']);
    assert.deepEqual(version.schema.openAPIV3Schema.properties.spec.properties['logLevel']?.enum, ['debug', 'info', 'warning', 'error']);
    const sample = parse(await readFile(join(dir, 'deploy/samples/shop.yaml'), 'utf8')) as { apiVersion: string; spec: unknown };
    assert.deepEqual(sample, { apiVersion: 'shop.example.com/v1beta1', kind: 'Shop', metadata: { name: 'shop-sample' }, spec: { message: 'Hello from Shop', logLevel: 'info' } });
    const defaults = parse(await readFile(join(dir, 'roles/shop/defaults/main.yml'), 'utf8')) as unknown;
    assert.deepEqual(defaults, { message: 'Hello from Shop', log_level: 'info' }, 'defaults/main.yml agrees with the argument specs');
    assert.match(await readFile(join(dir, 'deploy/rbac.yaml'), 'utf8'), /- configmaps/u);
    assert.match(await readFile(join(dir, 'deploy/operator.yaml'), 'utf8'), /image: shop-operator:0\.1\.0/u);
    assert.match(io.err(), /created .*shop: watches\.yaml, roles\/shop\/tasks\/main\.yml/u);
    assert.doesNotMatch(io.err(), /warning|helm/u);
  });
});
