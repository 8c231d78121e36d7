import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ChartSourceError } from '../../../src/registry/errors.js';
import { parseIndex } from '../../../src/registry/helm-repo.js';
import { parseChallenge } from '../../../src/registry/http.js';
import { nextPage } from '../../../src/registry/oci.js';

const INDEX = `apiVersion: v1
entries:
  webapp:
  - name: webapp
    version: 1.2.0
    digest: ${'a'.repeat(64)}
    urls: [webapp-1.2.0.tgz]
  - name: webapp
    version: 1.1.0
    urls: [https://cdn.example.com/webapp-1.1.0.tgz]
  other:
  - {name: other, version: 0.1.0, urls: [other-0.1.0.tgz]}
generated: "2026-01-01T00:00:00Z"
`;

describe('registry protocols', () => {
  it('reads a chart\'s entries from index.yaml, digests as sha256:…', () => {
    assert.deepEqual(parseIndex(INDEX, 'webapp', 'https://charts.example.com'), [
      { version: '1.2.0', digest: `sha256:${'a'.repeat(64)}`, urls: ['webapp-1.2.0.tgz'] },
      { version: '1.1.0', digest: undefined, urls: ['https://cdn.example.com/webapp-1.1.0.tgz'] },
    ]);
  });

  it('names the charts a repository has when the one asked for is not there', () => {
    assert.throws(() => parseIndex(INDEX, 'nope', 'https://charts.example.com'), (err: unknown) =>
      err instanceof ChartSourceError && err.reason === 'ChartNotFound' && err.message === 'https://charts.example.com has no chart named nope (it has webapp, other)');
    assert.throws(() => parseIndex('entries: [', 'webapp', 'https://x'), (err: unknown) => err instanceof ChartSourceError && /is not valid YAML/u.test(err.message));
    assert.throws(() => parseIndex('apiVersion: v1\n', 'webapp', 'https://x'), (err: unknown) => err instanceof ChartSourceError && /has no entries map/u.test(err.message));
  });

  it('reads a Bearer challenge and follows tag-list pages', () => {
    const c = parseChallenge('realm="https://auth.example.com/token",service="registry.example.com",scope="repository:charts/web:pull"');
    assert.deepEqual(Object.fromEntries(c), { realm: 'https://auth.example.com/token', service: 'registry.example.com', scope: 'repository:charts/web:pull' });
    assert.equal(nextPage('</v2/charts/web/tags/list?last=1.9.0&n=1000>; rel="next"', 'https://r.example.com/v2/charts/web/tags/list?n=1000'), 'https://r.example.com/v2/charts/web/tags/list?last=1.9.0&n=1000');
    assert.equal(nextPage(null, 'https://r.example.com/x'), undefined);
  });
});
