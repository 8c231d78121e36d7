/**
 * Extra vars as ansible-operator builds them. The snake_case table is paramconv_test.go's own cases
 * plus more, every expected value printed by the Go original (paramconv.ToSnake built from
 * ansible-operator-plugins v1.42.3), not by this code.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { extraVarsFor, markUnsafe, objectVarName, redactionStringsFor } from '../../../../src/engines/ansible/extra-vars.js';
import { toSnake } from '../../../../src/config/paramconv.js';

const GO_TO_SNAKE: readonly (readonly [string, string])[] = [
  ["var", "var"],
  ["888", "888"],
  ["k8s_var", "k8s_var"],
  ["_k8s_var", "_k8s_var"],
  ["k8s var", "k8s_var"],
  ["ThisShouldHaveUnderscores", "_this_should_have_underscores"],
  ["sizeK8sBuckets", "size_k8s_buckets"],
  ["_CanYou_Handle_mixedVars", "_can_you_handle_mixed_vars"],
  ["this_should_be_a_noop", "this_should_be_a_noop"],
  ["egressIPs", "egress_ips"],
  ["egressIPsEgress", "egress_ips_egress"],
  ["egressIPsegress", "egress_ips_egress"],
  ["IPsegress", "_ips_egress"],
  ["egressIP", "egress_ip"],
  ["egressIPEgress", "egress_ip_egress"],
  ["egressIPegress", "egress_ip_egress"],
  ["URLegressIPEgressHTTP", "url_egress_ip_egress_http"],
  ["URLsegressIPsEgressHTTPs", "_urls_egress_ips_egress_https"],
  ["replicaCount", "replica_count"],
  ["JSONData", "_json_data"],
  ["imagePullSecrets", "image_pull_secrets"],
  ["serviceAccountName", "service_account_name"],
  ["a", "a"],
  ["  spaced Key ", "spaced_key"],
  ["über_Größe", "über_größe"],
  ["x-y.z", "x_y.z"],
  ["ZIPCode", "_z_ip_code"],
  ["HTTPServerURL", "http_server_url"],
  ["podIP", "pod_ip"],
  ["httpPort", "http_port"],
  ["ABC", "_abc"],
  ["aB", "ab"],
  ["Ab", "_ab"],
  ["A", "_a"],
  ["k8sV2Api", "k8s_v2_api"],
  ["v1beta1Thing", "v1beta1_thing"],
  ["a1b2c3", "a_1_b2c3"],
  ["my--key", "my__key"],
  ["_", "_"],
  ["IPAddress", "ip_address"],
  ["ipAddress", "ip_address"],
  ["httpsProxy", "https_proxy"],
  ["HTTPSProxy", "http_s_proxy"],
  ["size 2Gi", "size_2_gi"],
  ["storageClassName", "storage_class_name"],
  ["TLSEnabled", "_tls_enabled"],
  ["useTLS", "use_tls"],
  ["x509Cert", "x509_cert"],
  ["URLs", "__urls"],
  ["IPs", "__ips"],
  ["webhookURL", "webhook_url"],
  ["nodeIPs", "node_ips"],
  ["ipv6Enabled", "ipv6_enabled"],
  ["keyWith.Dot", "key_with._dot"],
  ["PascalCaseKey", "_pascal_case_key"],
  ["already_snake_Case", "already_snake_case"],
  ["camelCase_with_Under", "camel_case_with_under"],
  ["ALLCAPS", "_allcaps"],
  ["numbers123abc", "numbers123abc"],
  ["abc123Def456", "abc123_def456"],
  ["URLHTTPIP", "url__http__ip"],
];

const gvk = { group: 'cache.example-org.com', version: 'v1alpha1', kind: 'MemCached' };
const source = { snakeCaseParameters: true, markUnsafe: false, vars: {} };

describe('toSnake (paramconv.ToSnake)', () => {
  for (const [input, want] of GO_TO_SNAKE) {
    it(`${JSON.stringify(input)} → ${JSON.stringify(want)}`, () => {
      assert.equal(toSnake(input), want);
    });
  }
  it('leaves an empty key empty', () => {
    assert.equal(toSnake(''), '');
  });
});

describe('extraVarsFor', () => {
  const cr = {
    apiVersion: 'cache.example-org.com/v1alpha1',
    kind: 'MemCached',
    metadata: { name: 'm1', namespace: 'ns1', uid: 'u' },
    spec: { replicaCount: 2, podTemplate: { imagePullSecrets: [{ secretName: 'x' }] }, egressIPs: ['1.2.3.4'] },
  };

  it('snake-cases spec keys at every depth, adds the meta and object vars', () => {
    const vars = extraVarsFor(cr, source, gvk);
    assert.deepEqual(vars, {
      replica_count: 2,
      pod_template: { image_pull_secrets: [{ secret_name: { __ansible_unsafe: 'x' } }] },
      egress_ips: [{ __ansible_unsafe: '1.2.3.4' }],
      ansible_operator_meta: { name: 'm1', namespace: 'ns1' },
      _cache_example_org_com_memcached: markUnsafe(cr),
      _cache_example_org_com_memcached_spec: markUnsafe(cr.spec),
    });
  });

  it('keeps spec keys as written with snakeCaseParameters: false', () => {
    const vars = extraVarsFor(cr, { ...source, snakeCaseParameters: false }, gvk);
    assert.equal(vars['replicaCount'], 2);
    assert.deepEqual(vars['podTemplate'], markUnsafe(cr.spec.podTemplate));
    assert.equal(vars['replica_count'], undefined);
  });

  it('lets the entry vars win over the spec, and the finalizer vars over both', () => {
    const vars = extraVarsFor(cr, { ...source, vars: { replica_count: 9, state: 'present' } }, gvk, { state: 'absent' });
    assert.equal(vars['replica_count'], 9);
    assert.equal(vars['state'], 'absent');
  });

  for (const unsafe of [true, false]) {
    it(`marks every string from the CR unsafe with markUnsafe: ${String(unsafe)}, but not the meta or the entry vars`, () => {
      const evil = { ...cr, spec: { command: '{{ lookup("pipe", "id") }}', list: ['a', 1, true], deep: { x: ['{{ 7 * 7 }}'] } } };
      const vars = extraVarsFor(evil, { ...source, markUnsafe: unsafe, vars: { fixed: 'v' } }, gvk);
      assert.deepEqual(vars['command'], { __ansible_unsafe: '{{ lookup("pipe", "id") }}' });
      assert.deepEqual(vars['list'], [{ __ansible_unsafe: 'a' }, 1, true]);
      assert.deepEqual(vars['deep'], { x: [{ __ansible_unsafe: '{{ 7 * 7 }}' }] });
      assert.deepEqual(vars['ansible_operator_meta'], { name: 'm1', namespace: 'ns1' });
      assert.deepEqual(vars['_cache_example_org_com_memcached_spec'], markUnsafe(evil.spec));
      const object = vars['_cache_example_org_com_memcached'] as { metadata: { name: unknown } };
      assert.deepEqual(object.metadata.name, { __ansible_unsafe: 'm1' });
      assert.equal(vars['fixed'], 'v');
    });
  }

  it('never takes an Ansible setting (ansible_*) from the spec, which the object var still holds', () => {
    const evil = { ...cr, spec: { ansibleBecomeExe: 'touch /x; su', ansible_connection: 'ssh', ansibleOperatorMeta: { name: 'other' }, ansiblex: 1 } };
    const vars = extraVarsFor(evil, source, gvk);
    assert.deepEqual(Object.keys(vars).filter((k) => k.startsWith('ansible')).sort(), ['ansible_operator_meta', 'ansiblex']);
    assert.deepEqual(vars['ansible_operator_meta'], { name: 'm1', namespace: 'ns1' });
    const raw = extraVarsFor({ ...cr, spec: { ansible_become_exe: 'x', ansible_python_interpreter: '/bin/sh' } }, { ...source, snakeCaseParameters: false }, gvk);
    assert.equal(raw['ansible_become_exe'], undefined);
    assert.equal(raw['ansible_python_interpreter'], undefined);
    assert.deepEqual(raw['_cache_example_org_com_memcached_spec'], markUnsafe({ ansible_become_exe: 'x', ansible_python_interpreter: '/bin/sh' }));
  });

  it("never takes Ansible's special variables (omit, the inventory's names) from the spec; other reserved words like name stay", () => {
    const vars = extraVarsFor({ ...cr, spec: { omit: 'https://elsewhere', inventoryHostname: 'h', hostvars: {}, rolePath: '/etc', name: 'n' } }, source, gvk);
    assert.deepEqual(Object.keys(vars).filter((k) => !k.startsWith('_') && k !== 'ansible_operator_meta'), ['name']);
  });

  it('refuses a CR nested deeper than Ansible can read, with the path, without overflowing the stack', () => {
    let deep: unknown = 'x';
    for (let i = 0; i < 20_000; i++) deep = { a: deep };
    assert.throws(() => extraVarsFor({ ...cr, spec: { deepKey: deep } }, source, gvk), (err: Error) => {
      assert.ok(err instanceof RangeError);
      assert.match(err.message, /^the custom resource nests deeper than 100 levels \(at spec\.deepKey\.a\.a\.a.*…\): Ansible cannot read such variables; flatten that field$/);
      return true;
    });
    let list: unknown = 'x';
    for (let i = 0; i < 98; i++) list = [list];
    assert.doesNotThrow(() => extraVarsFor({ ...cr, spec: { l: list } }, source, gvk));
    assert.throws(() => extraVarsFor({ ...cr, spec: { l: [list] } }, source, gvk), /at spec\.l\[0\]\[0\]/);
  });

  it('gives an object without a spec (a core Secret) its meta and object vars', () => {
    const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', namespace: 'n' }, data: { k: 'c2VjcmV0LXZhbHVl' } };
    const sgvk = { group: '', version: 'v1', kind: 'Secret' };
    const vars = extraVarsFor(secret, source, sgvk);
    assert.deepEqual(Object.keys(vars).sort(), ['__secret', '__secret_spec', 'ansible_operator_meta']);
    assert.deepEqual(vars['__secret_spec'], {});
    assert.deepEqual(redactionStringsFor(secret, sgvk).sort(), ['c2VjcmV0LXZhbHVl', 'secret-value']);
  });

  it('names the object var after group and kind with . and - as _', () => {
    assert.equal(objectVarName({ group: 'cert-manager.k8s.io', version: 'v1', kind: 'Certificate' }), '_cert_manager_k8s_io_certificate');
  });

  it('redacts spec strings but not metadata or status', () => {
    assert.deepEqual(redactionStringsFor({ ...cr, spec: { password: 'hunter2', n: { deep: 'x' } }, status: { s: 'ok' } }, gvk), ['hunter2', 'x']);
  });
});
