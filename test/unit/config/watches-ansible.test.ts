import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseWatches, type LoadResult } from '../../../src/config/watches.js';
import { roleCandidates, type PathKind } from '../../../src/config/ansible-paths.js';
import type { WatchEntry } from '../../../src/config/types.js';

const BASE = '/opt/ansible';

/** A disk holding exactly `dirs` and `files`. */
function disk(dirs: string[], files: string[] = []): PathKind {
  return (p) => Promise.resolve(dirs.includes(p) ? 'directory' : files.includes(p) ? 'file' : undefined);
}

const ROLE_DISK = disk(['/opt/ansible/roles/memcached', '/opt/ansible/roles/memcached/tasks', '/opt/ansible/roles/cleanup', '/opt/ansible/roles/cleanup/tasks'], ['/opt/ansible/playbooks/site.yml']);

async function parse(text: string, kindOf: PathKind = ROLE_DISK, env: Record<string, string> = {}): Promise<LoadResult> {
  return parseWatches(text, BASE, env, () => Promise.resolve(undefined), { ansible: { cwd: BASE, kindOf } });
}

async function entries(text: string, kindOf?: PathKind): Promise<WatchEntry[]> {
  const r = await parse(text, kindOf);
  assert.ok(r.ok, r.ok ? '' : r.problems.join('\n'));
  return r.entries;
}

async function problems(text: string, kindOf?: PathKind): Promise<string[]> {
  const r = await parse(text, kindOf);
  if (r.ok) assert.fail('expected problems');
  return r.problems;
}

describe('watches.yaml: Ansible entries', () => {
  it('reads an ansible-operator entry with its defaults and finds the role under roles/', async () => {
    const [e] = await entries(`
- version: v1alpha1
  group: cache.example.com
  kind: Memcached
  role: memcached
`);
    assert.ok(e);
    assert.equal(e.chartPath, '');
    assert.deepEqual(e.ansible, {
      role: '/opt/ansible/roles/memcached',
      vars: {},
      finalizer: undefined,
      manageStatus: true,
      watchClusterScopedResources: false,
      snakeCaseParameters: true,
      watchAnnotationsChanges: false,
      markUnsafe: false,
      blacklist: [],
      maxRunnerArtifacts: 20,
    });
    assert.equal(e.watchDependentResources, true);
    assert.equal(e.allowClusterScoped, false);
  });

  it('reads every key, a playbook, a finalizer with a role, and chartpilot keys', async () => {
    const [e] = await entries(`
- version: v1
  group: ""
  kind: Secret
  playbook: playbooks/site.yml
  vars: {state: present, list: [1, yes]}
  finalizer: {name: cache.example.com/finalizer, role: cleanup, vars: {state: absent}}
  manageStatus: false
  watchDependentResources: false
  watchClusterScopedResources: true
  snakeCaseParameters: false
  watchAnnotationsChanges: true
  markUnsafe: true
  maxRunnerArtifacts: 3
  blacklist: [{group: apps, version: v1, kind: ReplicaSet}]
  reconcilePeriod: 1m
  serviceAccount: tenant
  allowCrossNamespace: true
`);
    assert.ok(e?.ansible);
    assert.equal(e.ansible.playbook, '/opt/ansible/playbooks/site.yml');
    assert.equal(e.ansible.role, undefined);
    assert.deepEqual(e.ansible.vars, { state: 'present', list: [1, true] });
    assert.deepEqual(e.ansible.finalizer, { name: 'cache.example.com/finalizer', role: '/opt/ansible/roles/cleanup', vars: { state: 'absent' } });
    assert.equal(e.ansible.manageStatus, false);
    assert.equal(e.ansible.watchClusterScopedResources, true);
    assert.equal(e.ansible.snakeCaseParameters, false);
    assert.equal(e.ansible.watchAnnotationsChanges, true);
    assert.equal(e.ansible.markUnsafe, true);
    assert.equal(e.ansible.maxRunnerArtifacts, 3);
    assert.deepEqual(e.ansible.blacklist, [{ group: 'apps', version: 'v1', kind: 'ReplicaSet' }]);
    assert.equal(e.watchDependentResources, false);
    assert.equal(e.reconcilePeriodMs, 60_000);
    assert.equal(e.serviceAccount, 'tenant');
    assert.equal(e.allowCrossNamespace, true);
  });

  it('a finalizer with only vars runs the main role', async () => {
    const [e] = await entries(`
- {version: v1alpha1, group: cache.example.com, kind: Memcached, role: memcached, finalizer: {name: cache.example.com/finalizer, vars: {state: absent}}}
`);
    assert.deepEqual(e?.ansible?.finalizer, { name: 'cache.example.com/finalizer', vars: { state: 'absent' } });
  });

  it('refuses an entry with both a chart and a role, or a role and a playbook', async () => {
    const both = await problems(`
- {version: v1alpha1, group: cache.example.com, kind: Memcached, role: memcached, chart: helm-charts/x}
`);
    assert.match(both.join('\n'), /has chart and role; an entry maps its kind to exactly one of chart, role and playbook — keep one/u);
    const two = await problems(`
- {version: v1alpha1, group: cache.example.com, kind: Memcached, role: memcached, playbook: playbooks/site.yml}
`);
    assert.match(two.join('\n'), /has role and playbook/u);
  });

  it('names the missing source when an entry has none', async () => {
    const p = await problems(`
- {version: v1alpha1, group: cache.example.com, kind: Memcached}
`);
    assert.match(p.join('\n'), /chart is missing; .*role:\/playbook:/u);
  });

  it('names every place a missing role was looked for, and the fix', async () => {
    const p = await problems(`
- {version: v1alpha1, group: cache.example.com, kind: Memcached, role: nosuchrole}
`);
    assert.match(p.join('\n'), /role "nosuchrole" was not found \(looked in \/opt\/ansible\/roles\/nosuchrole\); .*ANSIBLE_ROLES_PATH/u);
  });

  it('refuses a missing playbook and a finalizer role that is missing', async () => {
    const p = await problems(`
- {version: v1alpha1, group: cache.example.com, kind: Memcached, playbook: nope.yml, finalizer: {name: a.b/c, role: gone}}
`);
    assert.match(p.join('\n'), /playbook "nope.yml" was not found/u);
    assert.match(p.join('\n'), /finalizer: role "gone" was not found/u);
  });

  it('refuses chart keys on an Ansible entry and Ansible keys on a chart entry', async () => {
    const a = await problems(`
- {version: v1alpha1, group: cache.example.com, kind: Memcached, role: memcached, overrideValues: {a: b}}
`);
    assert.match(a.join('\n'), /overrideValues is a chart key; this entry runs an Ansible role — remove it/u);
    const h = await problems(`
- {version: v1alpha1, group: cache.example.com, kind: Memcached, chart: helm-charts/x, vars: {a: b}}
`);
    assert.match(h.join('\n'), /"vars" is an Ansible operator key; this entry maps its kind to a chart/u);
  });

  it('refuses bad finalizers, blacklists, vars and maxRunnerArtifacts with one line each', async () => {
    const p = await problems(`
- version: v1alpha1
  group: cache.example.com
  kind: Memcached
  role: memcached
  finalizer: {name: "not a name/x/y"}
  blacklist: [apps]
  vars: [1]
  maxRunnerArtifacts: -1
  manageStatus: "yes please"
`);
    const text = p.join('\n');
    assert.match(text, /finalizer name "not a name\/x\/y" is not a valid finalizer name/u);
    assert.match(text, /a blacklist item is a string/u);
    assert.match(text, /vars is a list; expected a map/u);
    assert.match(text, /maxRunnerArtifacts is a number \(-1\)/u);
    assert.match(text, /manageStatus is a string .*expected true or false/u);
  });

  it('refuses a finalizer that runs nothing', async () => {
    const p = await problems(`
- {version: v1alpha1, group: cache.example.com, kind: Memcached, role: memcached, finalizer: {name: a.b/c}}
`);
    assert.match(p.join('\n'), /finalizer a.b\/c runs nothing/u);
  });

  it('looks for roles as ansible-operator does: collections, ANSIBLE_ROLES_PATH, then roles/', () => {
    assert.deepEqual(roleCandidates('ns.coll.web', { baseDir: '/w', cwd: '/c', env: { ANSIBLE_COLLECTIONS_PATH: '/col', ANSIBLE_ROLES_PATH: '/r1:/r2' } }), [
      '/col/ansible_collections/ns/coll/roles/web',
      '/r1/ns.coll.web',
      '/r1/roles/ns.coll.web',
      '/r2/ns.coll.web',
      '/r2/roles/ns.coll.web',
      '/w/roles/ns.coll.web',
      '/c/roles/ns.coll.web',
    ]);
    assert.deepEqual(roleCandidates('/abs/role', { baseDir: '/w', cwd: '/w', env: {} }), ['/abs/role']);
  });
});
