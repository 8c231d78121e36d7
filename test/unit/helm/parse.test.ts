import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import { parseHistory, parseRelease, parseReleaseTemplate, releaseTemplate, splitChartRef, toReleaseStatus } from '../../../src/helm/parse.js';
import { HelmError } from '../../../src/helm/types.js';

/** Real helm 4.1.4 output, captured by test/fixtures/helm/capture.sh. */
const FIXTURES = fileURLToPath(new URL('../../../../test/fixtures/helm/', import.meta.url));
const fixture = (name: string): Promise<string> => readFile(`${FIXTURES}${name}`, 'utf8');
/** The namespace capture.sh happened to use (random per run). */
const namespaceOf = async (name: string): Promise<string> => (JSON.parse(await fixture(name)) as { namespace: string }).namespace;

describe('parsing helm output', () => {
  it('fixtures come from helm 4', async () => {
    assert.match(await fixture('helm-version.txt'), /^v4\./);
  });

  it('parseRelease reads `helm upgrade --install -o json` (first install)', async () => {
    const ns = await namespaceOf('upgrade-install.json');
    const r = parseRelease(await fixture('upgrade-install.json'), 'upgrade');
    assert.deepEqual({ ...r, manifest: undefined }, {
      name: 'web',
      namespace: ns,
      revision: 1,
      status: 'deployed',
      chartName: 'webapp',
      chartVersion: '0.1.0',
      appVersion: '1.2.3',
      notes: `webapp web is running in ${ns} (revision 1).\n`,
      manifest: undefined,
      description: 'first',
    });
    assert.match(r.manifest, /^---\n# Source: webapp\/templates\/configmap\.yaml\n/);
    assert.match(r.manifest, /kind: Deployment/);
    assert.match(r.manifest, /message: "first"/);
  });

  it('parseRelease reads the second revision', async () => {
    const r = parseRelease(await fixture('upgrade-second.json'), 'upgrade');
    assert.equal(r.revision, 2);
    assert.equal(r.status, 'deployed');
    assert.equal(r.description, 'Upgrade complete');
    assert.match(r.notes, /revision 2/);
    assert.match(r.manifest, /replicas: 2/);
  });

  it('helm 4 `status -o json` has no chart metadata (why status() uses `get all --template`)', async () => {
    const raw = JSON.parse(await fixture('status.json')) as Record<string, unknown>;
    assert.equal(raw['chart'], undefined);
    assert.ok((raw['info'] as Record<string, unknown>)['resources'], 'status reads every live object');
    const r = parseRelease(await fixture('status.json'), 'status');
    assert.equal(r.revision, 2);
    assert.equal(r.chartName, '');
  });

  it('parseReleaseTemplate reads `helm get all --template` output built by releaseTemplate', async () => {
    // capture.sh ran helm with exactly this template (boundary @@B@@).
    assert.ok((await fixture('capture.sh')).includes(`--template='${releaseTemplate('@@B@@')}'`));
    const fromTemplate = parseReleaseTemplate(await fixture('get-all-template.txt'), '@@B@@');
    const fromJson = parseRelease(await fixture('upgrade-second.json'), 'upgrade');
    assert.deepEqual(fromTemplate, fromJson);
  });

  it('parseReleaseTemplate rejects output of another shape', () => {
    assert.throws(() => parseReleaseTemplate('nothing here', '@@B@@'), HelmError);
    const withExtra = releaseTemplate('@@B@@').replace('{{ .Release.Name }}', 'web@@B@@sneaky\nx');
    assert.throws(() => parseReleaseTemplate(withExtra, '@@B@@'), /unexpected shape/);
  });

  it('parseHistory reads `helm history -o json`, oldest first, chart split into name and version', async () => {
    const ns = await namespaceOf('upgrade-install.json');
    const h = parseHistory(await fixture('history.json'), 'web', ns);
    assert.deepEqual(
      h.map((r) => [r.revision, r.status, r.chartName, r.chartVersion, r.appVersion, r.description, r.notes, r.manifest, r.namespace]),
      [
        [1, 'superseded', 'webapp', '0.1.0', '1.2.3', 'first', '', '', ns],
        [2, 'deployed', 'webapp', '0.1.0', '1.2.3', 'Upgrade complete', '', '', ns],
      ],
    );
  });

  it('a SIGTERM-ed install is recorded as failed (helm 4), and parses so', async () => {
    const [r] = parseHistory(await fixture('history-after-sigterm.json'), 'slow2', 'x');
    assert.ok(r);
    assert.equal(r.status, 'failed');
    assert.equal(r.description, 'Release "slow2" failed: context canceled');
    assert.equal(r.chartName, 'slow-hook');
    assert.equal(r.appVersion, '');
  });

  it('parse errors never quote helm output (it holds values)', () => {
    const secretJson = '{"name":"web","config":{"password":"hunter2-secret"},"version":';
    assert.throws(() => parseRelease(secretJson, 'upgrade'), (err: unknown) => err instanceof HelmError && !err.message.includes('hunter2'));
    assert.throws(() => parseRelease('{"config":{"password":"hunter2-secret"}}', 'upgrade'), (err: unknown) => err instanceof HelmError && !err.message.includes('hunter2'));
    assert.throws(() => parseHistory('{}', 'web', 'ns'), HelmError);
  });

  it('splitChartRef handles dashes and digits in names and pre-release versions', () => {
    assert.deepEqual(splitChartRef('webapp-0.1.0'), { name: 'webapp', version: '0.1.0' });
    assert.deepEqual(splitChartRef('my-app-2-1.2.3-rc.1+build.5'), { name: 'my-app-2', version: '1.2.3-rc.1+build.5' });
    assert.deepEqual(splitChartRef('kube-prometheus-stack-58.0.0'), { name: 'kube-prometheus-stack', version: '58.0.0' });
    assert.deepEqual(splitChartRef('noversion'), { name: 'noversion', version: '' });
  });

  it('unknown statuses become unknown', () => {
    assert.equal(toReleaseStatus('pending-upgrade'), 'pending-upgrade');
    assert.equal(toReleaseStatus('something-new'), 'unknown');
    assert.equal(toReleaseStatus(3), 'unknown');
  });
});
