import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KubeApiError, isAlreadyExists, isConflict, isForbidden, isGone, isInvalid, isNotFound, isTransient } from '../../../src/kube/errors.js';

describe('Kubernetes API errors', () => {
  it('KubeApiError.fromResponse takes reason, message and details from a Status body', () => {
    const body = JSON.stringify({
      kind: 'Status',
      apiVersion: 'v1',
      status: 'Failure',
      message: 'configmaps "x" not found',
      reason: 'NotFound',
      details: { name: 'x', kind: 'configmaps' },
      code: 404,
    });
    const e = KubeApiError.fromResponse(404, body, { method: 'GET', path: '/api/v1/namespaces/d/configmaps/x' });
    assert.ok(e instanceof Error);
    assert.equal(e.name, 'KubeApiError');
    assert.equal(e.status, 404);
    assert.equal(e.reason, 'NotFound');
    assert.equal(e.message, 'configmaps "x" not found');
    assert.deepEqual(e.details, { name: 'x', kind: 'configmaps' });
    assert.equal(e.path, '/api/v1/namespaces/d/configmaps/x');
    assert.ok(isNotFound(e));
  });

  it('KubeApiError falls back to a reason from the HTTP status when there is no Status body', () => {
    const e = KubeApiError.fromResponse(503, 'upstream connect error');
    assert.equal(e.reason, 'ServiceUnavailable');
    assert.equal(e.message, 'upstream connect error');
    assert.ok(isTransient(e));
    assert.equal(KubeApiError.fromResponse(418, '').reason, 'Unknown');
    assert.match(KubeApiError.fromResponse(418, '').message, /418/);
    assert.equal(new KubeApiError('x', { status: 0 }).reason, 'Unavailable');
  });

  it('predicates distinguish Conflict from AlreadyExists and 410 variants', () => {
    const conflict = new KubeApiError('the object has been modified', { status: 409, reason: 'Conflict' });
    const exists = new KubeApiError('already exists', { status: 409, reason: 'AlreadyExists' });
    assert.ok(isConflict(conflict) && !isAlreadyExists(conflict));
    assert.ok(isAlreadyExists(exists) && !isConflict(exists));
    assert.ok(isGone(new KubeApiError('too old', { status: 410, reason: 'Expired' })));
    assert.ok(isGone(KubeApiError.fromStatus({ code: 410, reason: 'Gone' })));
    assert.ok(isForbidden(new KubeApiError('no', { status: 403 })));
    assert.ok(isInvalid(new KubeApiError('bad', { status: 422, reason: 'Invalid' })));
    assert.ok(!isNotFound(new Error('404')), 'only KubeApiError counts');
  });

  it('KubeApiError keeps its cause', () => {
    const cause = new Error('ECONNREFUSED');
    const e = new KubeApiError('GET /x: fetch failed', { status: 0, cause });
    assert.equal(e.cause, cause);
  });
});
