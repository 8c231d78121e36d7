import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import { classifyMessage, extractMessage, helmErrorFromStderr, MAX_MESSAGE_LENGTH, redact, REDACTED, stringLeaves } from '../../../src/helm/errors.js';
import { HelmError, type HelmErrorKind } from '../../../src/helm/types.js';

/** Real helm 4.1.4 stderr, captured by test/fixtures/helm/capture.sh. */
const STDERR_DIR = fileURLToPath(new URL('../../../../test/fixtures/helm/stderr/', import.meta.url));
const stderrOf = (name: string): Promise<string> => readFile(`${STDERR_DIR}${name}.txt`, 'utf8');

const EXPECTED: Record<string, HelmErrorKind> = {
  'get-all-not-found': 'not-found',
  'history-not-found': 'not-found',
  'rollback-not-found': 'not-found',
  'status-not-found': 'not-found',
  'uninstall-not-found': 'not-found',
  'rollback-no-such-revision': 'failed',
  'template-fail-function': 'render',
  'template-nil-pointer': 'render',
  'template-parse-error': 'render',
  'template-required': 'render',
  'template-schema-pattern': 'render',
  'template-yaml-error': 'render',
  'template-post-renderer-failed': 'render',
  'template-post-renderer-missing': 'failed',
  'upgrade-nil-pointer': 'render',
  'upgrade-schema': 'render',
  'upgrade-unknown-kind': 'render',
  'upgrade-invalid-object': 'render',
  'upgrade-field-type': 'render',
  'upgrade-force-replace-ssa': 'failed',
  'upgrade-hook-timeout': 'timeout',
  'upgrade-sigterm': 'failed',
  'upgrade-locked': 'locked',
  'upgrade-ownership': 'conflict',
  'upgrade-ssa-conflict': 'conflict',
  'upgrade-forbidden-lookup': 'forbidden',
  'upgrade-forbidden-cluster': 'forbidden',
  'upgrade-forbidden-apply': 'forbidden',
  'uninstall-forbidden': 'forbidden',
};

describe('helm errors', () => {
  it('every captured helm stderr is classified as expected', async () => {
    const files = (await readdir(STDERR_DIR)).filter((f) => f.endsWith('.txt')).map((f) => f.slice(0, -4));
    // A newly captured case must be given an expectation here.
    assert.deepEqual(files.sort(), Object.keys(EXPECTED).sort());
    for (const [name, kind] of Object.entries(EXPECTED)) {
      const err = helmErrorFromStderr(await stderrOf(name), 'upgrade');
      assert.ok(err instanceof HelmError);
      assert.equal(err.kind, kind, `${name}: ${err.message}`);
      assert.equal(err.action, 'upgrade');
      assert.doesNotMatch(err.message, /^Error: /m, `${name}: prefix removed`);
      assert.doesNotMatch(err.message, /level=WARN|Use --debug flag/, `${name}: only helm's error, without noise`);
      assert.ok(err.message.length > 0 && err.message.length <= MAX_MESSAGE_LENGTH);
      assert.equal(err.message, err.message.trim());
    }
  });

  it('the message is helm\'s Error: text, multi-line errors kept whole', async () => {
    assert.equal(extractMessage(await stderrOf('upgrade-locked')), 'UPGRADE FAILED: another operation (install/upgrade/rollback) is in progress');
    assert.equal(
      extractMessage(await stderrOf('template-nil-pointer')),
      [
        'broken/templates/configmap.yaml:7:19',
        '  executing "broken/templates/configmap.yaml" at <.Values.missing.deeper.key>:',
        '    nil pointer evaluating interface {}.deeper',
      ].join('\n'),
    );
    assert.equal(
      extractMessage(await stderrOf('upgrade-hook-timeout')).split('\n')[1],
      'context deadline exceeded',
    );
    // The WARN line before the error (helm 4's slog output) is dropped.
    assert.match(extractMessage(await stderrOf('upgrade-ssa-conflict')), /^UPGRADE FAILED: conflict occurred while applying object/);
  });

  it('without an Error: line the last lines are used; empty stderr still gives a message', () => {
    assert.equal(extractMessage('panic: something\ngoroutine 1 [running]:\n'), 'panic: something\ngoroutine 1 [running]:');
    const err = helmErrorFromStderr('', 'status');
    assert.equal(err.kind, 'failed');
    assert.equal(err.message, 'helm status failed without an error message');
  });

  it('long messages are cut to MAX_MESSAGE_LENGTH', () => {
    const err = helmErrorFromStderr(`Error: ${'x'.repeat(5000)}\n`, 'upgrade');
    assert.equal(err.message.length, MAX_MESSAGE_LENGTH);
    assert.ok(err.message.endsWith('…'));
  });

  it('values echoed by helm are redacted from the message', async () => {
    // The schema error quotes the offending value: 'hunter2-secret' does not match pattern.
    const stderr = await stderrOf('template-schema-pattern');
    assert.match(stderr, /hunter2-secret/);
    const values = { password: 'hunter2-secret', nested: { list: ['another-secret'] }, n: 17 };
    const err = helmErrorFromStderr(stderr, 'template', stringLeaves(values));
    assert.equal(err.kind, 'render');
    assert.doesNotMatch(err.message, /hunter2-secret/);
    assert.match(err.message, new RegExp(`at '/password': ${REDACTED} does not match pattern`));
  });

  it('redact: longest secret first, short strings left alone, quoted pattern values always', () => {
    assert.equal(redact('token abcdef and abcdefgh', ['abcdef', 'abcdefgh']), `token ${REDACTED} and ${REDACTED}`);
    assert.equal(redact('name is web', ['web']), 'name is web');
    assert.equal(redact("- at '/x': 'ab' does not match pattern '^z'", []), `- at '/x': ${REDACTED} does not match pattern '^z'`);
    // Redaction sees the full text before the cut, so a secret at the edge is not half-kept.
    const secret = 's3cr3t-value-xyz';
    const msg = redact(`Error: ${'x'.repeat(MAX_MESSAGE_LENGTH - 15)}${secret}`, [secret]);
    assert.doesNotMatch(msg, /s3cr3t/);
  });

  it('an RBAC refusal is told as who may not do what where, without helm\'s contexts or the values they quote', async () => {
    const lookup = helmErrorFromStderr(await stderrOf('upgrade-forbidden-lookup'), 'upgrade');
    assert.match(
      lookup.message,
      /^system:serviceaccount:capture-\d+:tenant may not get secrets "some-secret" in namespace kube-system \(a lookup in the chart's templates\)$/,
    );
    assert.doesNotMatch(lookup.message, /b64dec|tpl/, 'the template text (a value) is gone');
    const cluster = helmErrorFromStderr(await stderrOf('upgrade-forbidden-cluster'), 'upgrade');
    assert.match(cluster.message, /^system:serviceaccount:capture-\d+:tenant may not get clusterrolebindings\.rbac\.authorization\.k8s\.io "escalate" at the cluster scope$/);
    const apply = helmErrorFromStderr(await stderrOf('upgrade-forbidden-apply'), 'upgrade');
    assert.match(apply.message, /^system:serviceaccount:capture-\d+:tenant may not patch resourcequotas "rq" in namespace capture-\d+$/);
    const fromValues = helmErrorFromStderr(await stderrOf('upgrade-forbidden-cluster'), 'upgrade', ['escalate', 'rbac.authorization.k8s.io', 'tenant', 'capture']);
    assert.match(
      fromValues.message,
      /^system:serviceaccount:capture-\d+:tenant may not get clusterrolebindings\.rbac\.authorization\.k8s\.io at the cluster scope$/,
      'a name taken from values is left out; the rest is the API server\'s and stays whole',
    );
    const list = helmErrorFromStderr(await stderrOf('uninstall-forbidden'), 'uninstall');
    assert.match(list.message, /^system:serviceaccount:capture-\d+:nosuch may not list secrets in namespace capture-\d+$/);
  });

  it('redact also catches values helm quotes Go-style', () => {
    const value = '{{ (lookup "v1" "Secret" "x" "y").data }}\nline2';
    const quoted = `error during tpl function execution for ${JSON.stringify(value)}: boom`;
    assert.equal(redact(quoted, [value]), `error during tpl function execution for "${REDACTED}": boom`);
  });

  it('stringLeaves collects every string in a values tree', () => {
    assert.deepEqual(stringLeaves({ a: 'x', b: [1, 'y', { c: 'z' }], d: null, e: true }).sort(), ['x', 'y', 'z']);
  });

  it('classifyMessage covers helm 3 phrasings too', () => {
    assert.equal(classifyMessage('template: webapp/templates/a.yaml:3:4: executing "webapp/templates/a.yaml" at <.x>: nil pointer'), 'render');
    assert.equal(classifyMessage('uninstall: Release not loaded: web: release: not found'), 'not-found');
    assert.equal(classifyMessage('timed out waiting for the condition'), 'timeout');
    assert.equal(classifyMessage('Kubernetes cluster unreachable: dial tcp 127.0.0.1:6443: connect: connection refused'), 'failed');
  });
});

describe('redaction of transformed values (#24 secrets in messages)', () => {
  const secret = 's3cr3t-Pass/word+?';
  const b64 = (s: string): string => Buffer.from(s).toString('base64');
  const b64url = (s: string): string => Buffer.from(s).toString('base64url');
  const hex = (s: string): string => Buffer.from(s).toString('hex');
  // What a chart can print of the value, as helm would show it in a fail message.
  const table: readonly [string, string][] = [
    ['as it is', secret],
    ['Go-quoted (tpl)', JSON.stringify(secret).slice(1, -1)],
    ['upper', secret.toUpperCase()],
    ['lower', secret.toLowerCase()],
    ['b64enc', b64(secret)],
    ['b64enc without padding', b64(secret).replace(/=+$/, '')],
    ['base64url', b64url(secret)],
    ['base64url padded', `${b64url(secret)}${'='.repeat((4 - (b64url(secret).length % 4)) % 4)}`],
    ['b64enc of value + newline (toYaml)', b64(`${secret}\n`)],
    ['hex', hex(secret)],
    ['HEX', hex(secret).toUpperCase()],
    ['quote (JSON-quoted)', JSON.stringify(secret)],
  ];
  for (const [how, shown] of table) {
    it(`redacts the value ${how}`, () => {
      const err = helmErrorFromStderr(`Error: execution error at (c/templates/x.yaml:1:3): leaked ${shown} here\n`, 'install', [secret, 'other']);
      assert.ok(!err.message.includes(shown), err.message);
      assert.match(err.message, /leaked .*<redacted>.* here/);
    });
  }

  it('redacts overrideValues secrets too (they are string leaves of the merged values)', () => {
    const values = { spec: 'x', db: { password: 'from-override-9' } };
    const err = helmErrorFromStderr(`Error: execution error at (c/templates/x.yaml:1:3): ${b64('from-override-9')}\n`, 'install', stringLeaves(values));
    assert.doesNotMatch(err.message, new RegExp(b64('from-override-9')));
  });

  it('keeps short values and hashes (they reveal nothing usable)', () => {
    const err = helmErrorFromStderr('Error: execution error at (c/templates/x.yaml:1:3): abc 9f86d081884c7d65\n', 'install', ['abc', 'test']);
    assert.match(err.message, /abc 9f86d081884c7d65/);
  });

  it("cuts a chart's fail message beyond 200 characters", () => {
    const long = 'y'.repeat(500);
    const err = helmErrorFromStderr(`Error: execution error at (c/templates/x.yaml:1:3): ${long}\n`, 'install', []);
    assert.match(err.message, /^execution error at \(c\/templates\/x\.yaml:1:3\): y{200}… \(cut: the chart's message is longer\)$/);
    const short = helmErrorFromStderr('Error: execution error at (c/templates/x.yaml:1:3): replicaCount must be set\n', 'install', []);
    assert.equal(short.message, 'execution error at (c/templates/x.yaml:1:3): replicaCount must be set');
  });
});
