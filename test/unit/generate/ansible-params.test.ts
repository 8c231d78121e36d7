/**
 * ansible-operator's spec key conversion (paramconv), ported: the table's expected values are what
 * the Go code itself printed for these names (go run of internal/ansible/paramconv at v1.42.x), and
 * the inverse the CRD uses must round-trip through it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { specKeyFor, toCamel, toSnake } from '../../../src/config/paramconv.js';

// name → [ToSnake, ToCamel], as printed by the Go code.
const GO: Record<string, [string, string]> = {
  logLevel: ['log_level', 'logLevel'],
  log_level: ['log_level', 'logLevel'],
  imageURL: ['image_url', 'imageURL'],
  image_url: ['image_url', 'imageURL'],
  httpProxy: ['http_proxy', 'httpProxy'],
  http_proxy: ['http_proxy', 'HTTPProxy'],
  serverIPs: ['server_ips', 'serverIPs'],
  IPAddress: ['ip_address', 'IPAddress'],
  FooBar: ['_foo_bar', 'FooBar'],
  _private: ['_private', 'Private'],
  a12b3: ['a_12_b3', 'a12B3'],
  v1beta2: ['v1beta2', 'v1beta2'],
  foo2bar: ['foo2bar', 'foo2bar'],
  nodeIP: ['node_ip', 'nodeIP'],
  tlsCACert: ['tls_ca_cert', 'tlsCACert'],
  port_http: ['port_http', 'portHTTP'],
  key_1: ['key_1', 'key1'],
  foo__bar: ['foo__bar', 'fooBar'],
  fooBar_baz: ['foo_bar_baz', 'fooBarBaz'],
  hasHTTPSEndpoint: ['has_http_s_endpoint', 'hasHTTPSEndpoint'],
};

describe('paramconv, as ansible-operator converts spec keys', () => {
  for (const [name, [snake, camel]] of Object.entries(GO)) {
    it(`${name} → ${snake} / ${camel}`, () => {
      assert.equal(toSnake(name), snake);
      assert.equal(toCamel(name), camel);
    });
  }
});

describe('specKeyFor: the spec key a role option is set with', () => {
  it('is the camelCase key that ToSnake turns back into the option', () => {
    for (const option of ['log_level', 'image_url', 'max_surge_percent', 'size', 'server_ips', 'port_http', 'abc_1_def']) {
      const key = specKeyFor(option, true);
      assert.ok(key.ok, option);
      assert.equal(toSnake(key.key), option, `${option} via ${key.key}`);
    }
    assert.deepEqual(specKeyFor('log_level', true), { ok: true, key: 'logLevel' });
  });

  it('falls back to a spelling that round-trips where ToCamel\'s does not', () => {
    // ToCamel keeps a leading HTTP/URL/IP upper case, and ToSnake takes it back.
    assert.deepEqual(specKeyFor('http_proxy', true), { ok: true, key: 'HTTPProxy' });
    // ToCamel drops the double underscore (fooBar → foo_bar); the option's own name arrives unchanged.
    assert.equal(toSnake('fooBar'), 'foo_bar');
    assert.deepEqual(specKeyFor('foo__bar', true), { ok: true, key: 'foo__bar' });
  });

  it('says why when no spec key can reach the option, and takes names as they are without snake-casing', () => {
    const camel = specKeyFor('fooBar', true);
    assert.ok(!camel.ok);
    assert.match(camel.why, /no spec key becomes the variable "fooBar".*snakeCaseParameters: false/u);
    assert.deepEqual(specKeyFor('fooBar', false), { ok: true, key: 'fooBar' });
    assert.deepEqual(specKeyFor('log_level', false), { ok: true, key: 'log_level' });
  });
});
