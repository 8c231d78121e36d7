import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { chartYamlProblem, checkChart } from '../../../src/config/chart-check.js';
import { tarFiles } from '../../../src/config/tar.js';
import { WATCH_FIXTURES } from './fixtures.js';
import { paxRecord, tar } from './tar-writer.js';

const CHARTS = join(WATCH_FIXTURES, 'charts');
const tmp = await mkdtemp(join(tmpdir(), 'chartpilot-chart-check-'));

const CHART_YAML = 'apiVersion: v2\nname: demo\nversion: 0.1.0\n';

async function archive(name: string, bytes: Uint8Array): Promise<string> {
  const path = join(tmp, name);
  await writeFile(path, bytes);
  return path;
}

describe('checkChart', () => {
  after(() => rm(tmp, { recursive: true, force: true }));

  it('a chart directory with a complete Chart.yaml is loadable', async () => {
    assert.equal(await checkChart(join(CHARTS, 'ok')), undefined);
  });

  it('chart directories Helm would refuse', async () => {
    assert.equal(await checkChart(join(CHARTS, 'nope')), 'not found');
    assert.equal(
      await checkChart(join(CHARTS, 'not-a-chart')),
      'the directory has no Chart.yaml; a chart directory holds Chart.yaml, values.yaml and templates/',
    );
    assert.equal(
      await checkChart(join(CHARTS, 'no-version')),
      'Chart.yaml has no version; Helm requires apiVersion, name and version',
    );
    assert.equal(
      await checkChart(join(CHARTS, 'library')),
      'Chart.yaml declares a library chart (type: library), which Helm cannot install',
    );
  });

  it('Chart.yaml content rules', () => {
    assert.equal(chartYamlProblem(CHART_YAML, 'Chart.yaml'), undefined);
    assert.equal(chartYamlProblem('apiVersion: v1\nname: x\nversion: 1.0\n', 'Chart.yaml'), undefined, 'an unquoted number version is accepted');
    assert.equal(
      chartYamlProblem('name: x\n', 'Chart.yaml'),
      'Chart.yaml has no apiVersion, version; Helm requires apiVersion, name and version',
    );
    assert.equal(
      chartYamlProblem('apiVersion: v2\nname: ""\nversion: 1.0.0\n', 'Chart.yaml'),
      'Chart.yaml has no name; Helm requires apiVersion, name and version',
    );
    assert.equal(chartYamlProblem('- a\n', 'Chart.yaml'), 'Chart.yaml must be a map with apiVersion, name and version');
    assert.match(chartYamlProblem('name: [x\n', 'x/Chart.yaml') ?? '', /^x\/Chart\.yaml is not valid YAML \(/u);
  });

  it('a packaged chart made by tar + gzip is loadable', async () => {
    assert.equal(await checkChart(join(CHARTS, 'ok-0.1.0.tgz')), undefined);
  });

  it('packaged charts with long names (ustar prefix, pax, GNU) are read', async () => {
    const long = 'd'.repeat(120);
    const prefixed = await archive(
      'prefix.tgz',
      gzipSync(tar([{ name: 'Chart.yaml', prefix: 'demo', data: CHART_YAML }])),
    );
    const pax = await archive(
      'pax.tgz',
      gzipSync(tar([{ name: 'PaxHeader', type: 'x', data: paxRecord('path', `${long}/Chart.yaml`) }, { name: 'truncated', data: CHART_YAML }])),
    );
    const gnu = await archive(
      'gnu.tgz',
      gzipSync(tar([{ name: '././@LongLink', type: 'L', data: `${long}/Chart.yaml\0` }, { name: 'truncated', data: CHART_YAML }])),
    );
    assert.equal(await checkChart(prefixed), undefined);
    assert.equal(await checkChart(pax), undefined);
    assert.equal(await checkChart(gnu), undefined);
  });

  it('packaged charts Helm would refuse', async () => {
    const noChartYaml = await archive('none.tgz', gzipSync(tar([{ name: 'demo/values.yaml', data: 'a: 1\n' }])));
    assert.equal(
      await checkChart(noChartYaml),
      'the packaged chart has no <chart>/Chart.yaml inside; package charts with `helm package <dir>`',
    );
    const nestedOnly = await archive('nested.tgz', gzipSync(tar([{ name: 'demo/charts/sub/Chart.yaml', data: CHART_YAML }])));
    assert.match((await checkChart(nestedOnly)) ?? '', /has no <chart>\/Chart\.yaml inside/u);

    const library = await archive('lib.tgz', gzipSync(tar([{ name: 'lib/Chart.yaml', data: `${CHART_YAML}type: library\n` }])));
    assert.equal(await checkChart(library), 'lib/Chart.yaml declares a library chart (type: library), which Helm cannot install');

    const truncated = tar([{ name: 'demo/Chart.yaml', data: 'x'.repeat(2000) }], { endMarker: false }).subarray(0, 1024);
    assert.equal(
      await checkChart(await archive('truncated.tgz', gzipSync(truncated))),
      'the packaged chart is not a valid tar archive (the archive is truncated)',
    );
    assert.equal(
      await checkChart(await archive('notar.tgz', gzipSync('just text'))),
      'the packaged chart is not a valid tar archive (the archive ends without an end-of-archive marker)',
    );
    const badGzip = new Uint8Array([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 1, 2, 3]);
    assert.match((await checkChart(await archive('bad.tgz', badGzip))) ?? '', /^the packaged chart cannot be decompressed \(/u);
    assert.equal(
      await checkChart(join(CHARTS, 'not-gzip.tgz')),
      'is a file but not a packaged chart (not gzip-compressed); point chart at a chart directory or at the .tgz made by `helm package`',
    );
  });

  it('a chart that is neither a file nor a directory is refused', async () => {
    // /dev/null is a character device: present on every Linux and macOS host.
    assert.equal(await checkChart('/dev/null'), 'is neither a chart directory nor a packaged chart (.tgz)');
  });

  it('a directory chart found through an intermediate file is not found', async () => {
    const file = join(tmp, 'plain-file');
    await writeFile(file, 'x');
    assert.equal(await checkChart(join(file, 'chart')), 'not found');
    await mkdir(join(tmp, 'emptydir'));
    assert.match((await checkChart(join(tmp, 'emptydir'))) ?? '', /has no Chart\.yaml/u);
  });

  it('tarFiles lists regular files and skips directories', () => {
    const names = [...tarFiles(tar([{ name: 'demo/', type: '5' }, { name: 'demo/a', data: 'A' }, { name: 'demo/b', data: '' }]))].map(
      (f) => [f.name, new TextDecoder().decode(f.data)],
    );
    assert.deepEqual(names, [
      ['demo/a', 'A'],
      ['demo/b', ''],
    ]);
  });
});
