import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isDns1035Label, isDnsLabel, isDnsSubdomain, labelKeyProblem, labelValueProblem } from '../../../src/config/labels.js';

describe('label and name rules', () => {
  it('label keys follow Kubernetes qualified-name rules', () => {
    for (const ok of ['app', 'app.kubernetes.io/name', 'a', 'A_b-c.d', 'example.com/x', 'x'.repeat(63)]) {
      assert.equal(labelKeyProblem(ok), undefined, ok);
    }
    assert.match(labelKeyProblem('') ?? '', /must not be empty/u);
    assert.match(labelKeyProblem('-app') ?? '', /label key "-app" is invalid: the name part/u);
    assert.match(labelKeyProblem('app-') ?? '', /is invalid/u);
    assert.match(labelKeyProblem('x'.repeat(64)) ?? '', /at most 63 characters/u);
    assert.match(labelKeyProblem('Example.com/x') ?? '', /invalid prefix "Example\.com"/u);
    assert.match(labelKeyProblem('/x') ?? '', /invalid prefix ""/u);
    assert.match(labelKeyProblem('example.com/') ?? '', /the name part/u);
  });

  it('label values may be empty, else like a name', () => {
    for (const ok of ['', 'web', '1.10', 'a_b-c', 'v'.repeat(63)]) assert.equal(labelValueProblem(ok), undefined, ok);
    assert.match(labelValueProblem('front end') ?? '', /label value "front end" is invalid/u);
    assert.match(labelValueProblem('v'.repeat(64)) ?? '', /at most 63/u);
    assert.match(labelValueProblem('a/b') ?? '', /is invalid/u);
  });

  it('DNS names for groups, namespaces and versions', () => {
    assert.equal(isDnsSubdomain('demo.example.com'), true);
    assert.equal(isDnsSubdomain('Demo.example.com'), false);
    assert.equal(isDnsSubdomain('a'.repeat(254)), false);
    assert.equal(isDnsLabel('kube-system'), true);
    assert.equal(isDnsLabel('1ns'), true);
    assert.equal(isDnsLabel('a.b'), false);
    assert.equal(isDns1035Label('v1alpha1'), true);
    assert.equal(isDns1035Label('1v'), false);
    assert.equal(isDns1035Label('V1'), false);
  });
});
