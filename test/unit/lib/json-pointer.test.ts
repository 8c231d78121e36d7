import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatPointer, isWithin, parsePointer } from '../../../src/lib/json-pointer.js';

describe('JSON pointers', () => {
  it('parses RFC 6901 pointers, unescaping ~1 and ~0 in that order', () => {
    assert.deepEqual(parsePointer('/spec/replicas'), { ok: true, segments: ['spec', 'replicas'] });
    assert.deepEqual(parsePointer('/metadata/annotations/cert-manager.io~1inject-ca-from'), { ok: true, segments: ['metadata', 'annotations', 'cert-manager.io/inject-ca-from'] });
    assert.deepEqual(parsePointer('/a/~01'), { ok: true, segments: ['a', '~1'] });
    assert.deepEqual(parsePointer('/webhooks/0/clientConfig/caBundle'), { ok: true, segments: ['webhooks', '0', 'clientConfig', 'caBundle'] });
  });

  it('refuses what is not a pointer to a field, saying how to write it', () => {
    const reason = (text: string): string => {
      const parsed = parsePointer(text);
      if (parsed.ok) assert.fail(`${text} should be refused`);
      return parsed.reason;
    };
    assert.match(reason('spec.replicas'), /must start with "\/" \(e\.g\. \/spec\/replicas\)/);
    for (const whole of ['', '/']) assert.match(reason(whole), /whole object/);
    assert.match(reason('/a~b'), /~0 for "~" and ~1 for "\/"/);
  });

  it('formats segments back, escaping what parsing unescapes', () => {
    for (const p of ['/spec/replicas', '/metadata/annotations/a~1b', '/x/~0y', '/list/3/name']) {
      const parsed = parsePointer(p);
      assert.ok(parsed.ok);
      assert.equal(formatPointer(parsed.segments), p);
    }
    assert.equal(formatPointer(['spec', 'containers', 0, 'image']), '/spec/containers/0/image');
  });

  it('covers a field and everything under it, numbers matching their text', () => {
    assert.equal(isWithin(['spec', 'replicas'], ['spec', 'replicas']), true);
    assert.equal(isWithin(['spec', 'template', 'spec', 'containers', 0, 'image'], ['spec', 'template', 'spec', 'containers', '0']), true);
    assert.equal(isWithin(['spec'], ['spec', 'replicas']), false, 'a parent is not inside its child');
    assert.equal(isWithin(['spec', 'replicasX'], ['spec', 'replicas']), false);
    assert.equal(isWithin(['spec', 'containers', 1], ['spec', 'containers', '0']), false);
  });
});
